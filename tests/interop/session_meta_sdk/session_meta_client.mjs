// The official SDK (2.x, its unstable client() by method name) as the client of accord's
// agent for the unstable session methods: set_title, status, archive, unarchive, and list's
// archived filter. Every answer goes through the SDK's own zod validator; the result (and
// any mismatch) is written to the file named by the first argument.
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { isDeepStrictEqual } from "node:util";
import { ndJsonStream } from "@agentclientprotocol/sdk";
import * as unstable from "@agentclientprotocol/sdk/unstable";

const [resultFile] = process.argv.slice(2);
const zodUrl = new URL(
  "./node_modules/@agentclientprotocol/sdk/dist/v1/unstable/schema/zod.gen.js",
  import.meta.url,
);
const zod = await import(zodUrl.href);
const mismatched = [];
const checked = (method, validator, raw, exact = true) => {
  const outcome = validator.safeParse(raw ?? {});
  if (!outcome.success) {
    mismatched.push({ method, raw, error: String(outcome.error) });
  } else if (exact && !isDeepStrictEqual(outcome.data, raw ?? {})) {
    mismatched.push({ method, raw, parsed: outcome.data });
  }
  return raw ?? {};
};

const titles = [];
const { methods } = unstable;
const app = unstable.client().onNotification("session/update", ({ params }) => {
  if (params.update.sessionUpdate === "session_info_update" && "title" in params.update) {
    titles.push(params.update.title);
  }
});
const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const result = await app.connectWith(stream, async (agent) => {
  const call = (method, params) => agent.request(method, params);
  const init = await call(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: {},
    clientInfo: { name: "sdk-session-meta-client", version: "1.0.0" },
  });
  const s = methods.agent.session;
  const { sessionId } = await call(s.new, { cwd: process.cwd(), mcpServers: [] });
  await call(s.prompt, { sessionId, prompt: [{ type: "text", text: "hello" }] });
  const title = checked(
    "session/set_title",
    zod.zSetSessionTitleResponse,
    await call(s.setTitle, { sessionId, title: "  From the SDK " }),
    false,
  );
  const open = checked(
    "session/status",
    zod.zSessionStatusResponse,
    await call(s.status, { sessionId }),
    false,
  );
  checked("session/archive", zod.zArchiveSessionResponse, await call(s.archive, { sessionId }));
  const saved = checked(
    "session/status",
    zod.zSessionStatusResponse,
    await call(s.status, { sessionId }),
    false,
  );
  const listed = {};
  for (const archived of [undefined, "only"]) {
    const params = archived === undefined ? {} : { archived };
    const page = checked("session/list", zod.zListSessionsResponse, await call(s.list, params));
    listed[archived ?? "default"] = page.sessions.map((info) => [info.sessionId, info.archived]);
  }
  let refused = null;
  try {
    await call(s.resume, { sessionId, cwd: process.cwd() });
  } catch (error) {
    refused = { code: error.code, data: error.data };
  }
  checked(
    "session/unarchive",
    zod.zUnarchiveSessionResponse,
    await call(s.unarchive, { sessionId }),
  );
  const back = checked("session/list", zod.zListSessionsResponse, await call(s.list, {}));
  return {
    sessionCapabilities: init.agentCapabilities.sessionCapabilities,
    sessionId,
    title: title.title,
    statuses: [open.status, saved.status],
    listed,
    refused,
    back: back.sessions.map((info) => [info.sessionId, info.archived, info.title]),
  };
});
writeFileSync(resultFile, JSON.stringify({ ...result, titles, mismatched }));
process.exit(0);
