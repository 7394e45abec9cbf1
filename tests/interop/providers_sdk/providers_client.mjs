// A client on the official TypeScript SDK (@agentclientprotocol/sdk 1.9.0 or 2.x) driving an
// agent's model providers: providers/list, providers/set, providers/disable.
//
//   node providers_client.mjs RESULT_FILE BASE_URL KEY
//
// Speaks ACP on its stdin/stdout (the test serves accord's coder on the pipes). With 1.9.0 it
// uses the SDK's typed client, ClientSideConnection's unstable_listProviders /
// unstable_setProvider / unstable_disableProvider; 2.x has no typed provider calls (its
// client() app sends them by name, `methods.agent.providers.*` of
// `@agentclientprotocol/sdk/unstable`), so it sends them that way. Runs initialize,
// providers/list, providers/set of "openai" to BASE_URL with KEY as its bearer token,
// providers/list, session/new and one prompt "hello" (its reply text kept), providers/disable
// of "anthropic", providers/list, then providers/disable of "openai" (the agent's error
// kept), and writes one JSON object to RESULT_FILE: {"api", "agentCapabilities", "lists",
// "setAnswer", "disableAnswer", "stopReason", "text", "refused": {code, message}, "mismatched"}.
// Every answer goes through the SDK's own generated validator (zInitializeResponse,
// zListProvidersResponse, zSetProviderResponse, zDisableProviderResponse of the unstable v1
// schema); `mismatched` lists those it refused or changed, as {method, raw, error|parsed}.
// The initialize answer is only checked to parse (1.9.0's main schema has no `nes`, which its
// experimental/nes module adds, and defaults `auth`), its `providers` capability exactly.
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { isDeepStrictEqual } from "node:util";
import { ndJsonStream } from "@agentclientprotocol/sdk";

const [resultFile, baseUrl, key] = process.argv.slice(2);

// The SDK's generated zod validators, by file (not an export of the package), from the
// node_modules link next to this script: 2.x keeps the unstable v1 schema under dist/v1/unstable.
const validators = async () => {
  for (const path of ["dist/v1/unstable/schema/zod.gen.js", "dist/schema/zod.gen.js"]) {
    const url = new URL(`./node_modules/@agentclientprotocol/sdk/${path}`, import.meta.url);
    try {
      return await import(url.href);
    } catch (error) {
      if (error.code !== "ERR_MODULE_NOT_FOUND") throw error;
    }
  }
  throw new Error("the SDK's zod.gen.js was not found");
};
const zod = await validators();
const mismatched = [];
const checked = (method, validator, raw, exact = true) => {
  const outcome = validator.safeParse(raw);
  if (!outcome.success) {
    mismatched.push({ method, raw, error: String(outcome.error) });
  } else if (exact && !isDeepStrictEqual(outcome.data, raw)) {
    mismatched.push({ method, raw, parsed: outcome.data });
  }
  return raw;
};

// The calls this script makes, over one of the two APIs.
const typedApi = async (stream, onText, body) => {
  const sdk = await import("@agentclientprotocol/sdk");
  const handlers = {
    async requestPermission() {
      return { outcome: { outcome: "cancelled" } };
    },
    async sessionUpdate({ update }) {
      if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
        onText(update.content.text);
      }
    },
  };
  const conn = new sdk.ClientSideConnection(() => handlers, stream);
  return body({
    api: "ClientSideConnection",
    initialize: (params) => conn.initialize(params),
    list: () => conn.unstable_listProviders({}),
    set: (params) => conn.unstable_setProvider(params),
    disable: (params) => conn.unstable_disableProvider(params),
    newSession: (params) => conn.newSession(params),
    prompt: (params) => conn.prompt(params),
  });
};

const namedApi = async (sdk, stream, onText, body) => {
  const { methods } = sdk;
  const app = sdk.client().onNotification("session/update", ({ params }) => {
    const update = params.update;
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      onText(update.content.text);
    }
  });
  return app.connectWith(stream, (agent) =>
    body({
      api: "client() by method name",
      initialize: (params) => agent.request(methods.agent.initialize, params),
      list: () => agent.request(methods.agent.providers.list, {}),
      set: (params) => agent.request(methods.agent.providers.set, params),
      disable: (params) => agent.request(methods.agent.providers.disable, params),
      newSession: (params) => agent.request(methods.agent.session.new, params),
      prompt: (params) => agent.request(methods.agent.session.prompt, params),
    }),
  );
};

const scenario = async (calls) => {
  const init = checked(
    "initialize",
    zod.zInitializeResponse,
    await calls.initialize({
      protocolVersion: 1,
      clientCapabilities: {},
      clientInfo: { name: "sdk-providers-client", version: "1.0.0" },
    }),
    false,
  );
  checked("initialize", zod.zProvidersCapabilities, init.agentCapabilities.providers);
  const lists = [];
  const list = async () => {
    lists.push(checked("providers/list", zod.zListProvidersResponse, await calls.list()).providers);
  };
  await list();
  const setAnswer = checked(
    "providers/set",
    zod.zSetProviderResponse,
    (await calls.set({
      providerId: "openai",
      apiType: "openai",
      baseUrl,
      headers: { Authorization: `Bearer ${key}` },
    })) ?? {},
  );
  await list();
  const { sessionId } = await calls.newSession({ cwd: process.cwd(), mcpServers: [] });
  const answer = await calls.prompt({ sessionId, prompt: [{ type: "text", text: "hello" }] });
  const disableAnswer = checked(
    "providers/disable",
    zod.zDisableProviderResponse,
    (await calls.disable({ providerId: "anthropic" })) ?? {},
  );
  await list();
  let refused = null;
  try {
    await calls.disable({ providerId: "openai" });
  } catch (error) {
    refused = { code: error.code, message: error.message };
  }
  return {
    api: calls.api,
    agentCapabilities: init.agentCapabilities,
    lists,
    setAnswer,
    disableAnswer,
    stopReason: answer.stopReason,
    refused,
  };
};

const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
let text = "";
const onText = (chunk) => {
  text += chunk;
};
let unstable = null;
try {
  unstable = await import("@agentclientprotocol/sdk/unstable");
} catch (error) {
  if (error.code !== "ERR_PACKAGE_PATH_NOT_EXPORTED") throw error;
}
const result = unstable
  ? await namedApi(unstable, stream, onText, scenario)
  : await typedApi(stream, onText, scenario);
writeFileSync(resultFile, JSON.stringify({ ...result, text, mismatched }));
process.exit(0);

