// A client on the official TypeScript SDK (@agentclientprotocol/sdk 1.9.0 or 2.x) driving an
// agent through `/compact`, with or without the `session.compaction` capability.
//
//   node compaction_client.mjs RESULT_FILE advertised|plain
//
// Speaks ACP on its stdin/stdout (the test serves accord's coder on the pipes). Runs
// initialize (clientCapabilities.session.compaction = {} when "advertised", nothing
// otherwise), session/new, the prompts "first", "second" and "third", "/compact keep the
// names", "fourth", then session/load of the same session (its replay kept apart), and
// writes one JSON object to RESULT_FILE: {"agentCapabilities", "turns": [{prompt,
// stopReason, text, updates}], "replay": [updates], "replayText", "mismatched"}. `updates`
// are the session/update payloads other than message chunks, as the SDK's handler got them. Every session/update goes through the
// SDK's own generated validator (`zSessionNotification` of the schema its `client()` uses);
// `mismatched` lists the notifications it refused or changed (a field dropped or defaulted),
// as {raw, error} or {raw, parsed}.
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { isDeepStrictEqual } from "node:util";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";

const [resultFile, mode] = process.argv.slice(2);
const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const session = mode === "advertised" ? { compaction: {} } : {};

let text = "";
let updates = [];
// The SDK's generated zod validators (not an export of the package: loaded by file, from the
// node_modules link next to this script): 2.x keeps the stable v1 schema under dist/v1/.
const validators = async () => {
  for (const path of ["dist/v1/schema/zod.gen.js", "dist/schema/zod.gen.js"]) {
    const url = new URL(`./node_modules/@agentclientprotocol/sdk/${path}`, import.meta.url);
    try {
      return await import(url.href);
    } catch (error) {
      if (error.code !== "ERR_MODULE_NOT_FOUND") throw error;
    }
  }
  throw new Error("the SDK's zod.gen.js was not found");
};
const { zSessionNotification } = await validators();
const mismatched = [];
const checked = (raw) => {
  const outcome = zSessionNotification.safeParse(raw);
  if (!outcome.success) {
    mismatched.push({ raw, error: String(outcome.error) });
    throw outcome.error;
  }
  if (!isDeepStrictEqual(outcome.data, raw)) {
    mismatched.push({ raw, parsed: outcome.data });
  }
  return outcome.data;
};

const app = client().onNotification("session/update", checked, ({ params }) => {
  const update = params.update;
  if (update.sessionUpdate === "agent_message_chunk") {
    if (update.content.type === "text") text += update.content.text;
  } else if (update.sessionUpdate !== "user_message_chunk") {
    updates.push(update);
  }
});

const result = await app.connectWith(stream, async (agent) => {
  const init = await agent.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { session },
    clientInfo: { name: "sdk-compaction-client", version: "1.0.0" },
  });
  const { sessionId } = await agent.request("session/new", { cwd: process.cwd(), mcpServers: [] });
  const turns = [];
  for (const prompt of ["first", "second", "third", "/compact keep the names", "fourth"]) {
    text = "";
    updates = [];
    const answer = await agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: prompt }],
    });
    turns.push({ prompt, stopReason: answer.stopReason, text, updates });
  }
  text = "";
  updates = [];
  await agent.request("session/load", { sessionId, cwd: process.cwd(), mcpServers: [] });
  return { agentCapabilities: init.agentCapabilities, turns, replay: updates, replayText: text, mismatched };
});
writeFileSync(resultFile, JSON.stringify(result));
process.exit(0);
