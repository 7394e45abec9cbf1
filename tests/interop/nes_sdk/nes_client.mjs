// A client on the official TypeScript SDK's NES module (@agentclientprotocol/sdk 1.9.0 or
// 2.x, `@agentclientprotocol/sdk/experimental/nes`) driving an agent through document sync
// and next edit suggestions.
//
//   node nes_client.mjs RESULT_FILE
//
// Speaks ACP on its stdin/stdout (the agent's side is whoever started it: the test serves
// accord's coder on the pipes). Runs initialize (positionEncodings ["utf-16"]), nes/start,
// document/didOpen, an incremental document/didChange, nes/suggest, nes/accept, didSave,
// didFocus, a second nes/suggest, one for a version the agent does not hold (its error kept),
// didClose and nes/close, then writes one JSON object to RESULT_FILE:
// {"agentCapabilities", "first", "second", "stale"} (first/second: the suggest responses;
// stale: {code, message, data} of the refused one).
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk/experimental/nes";

const [resultFile] = process.argv.slice(2);
const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const uri = "file:///work/app.py";
const text = "def greet(name):\n    s = '\u{1F600}' + nme\n    return s\n";
const at = (line, character) => ({ line, character });

const result = await client().connectWith(stream, async (agent) => {
  const init = await agent.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { positionEncodings: ["utf-16"] },
    clientInfo: { name: "sdk-nes-client", version: "1.0.0" },
  });
  const { sessionId } = await agent.request("nes/start", { workspaceUri: "file:///work" });
  await agent.notify("document/didOpen", { sessionId, uri, languageId: "python", version: 1, text });
  await agent.notify("document/didChange", {
    sessionId,
    uri,
    version: 2,
    contentChanges: [{ range: { start: at(2, 11), end: at(2, 12) }, text: "s.strip()" }],
  });
  // after "nme" on line 1: the emoji counts two UTF-16 units
  const position = at(1, 18);
  const first = await agent.request("nes/suggest", {
    sessionId,
    uri,
    version: 2,
    position,
    triggerKind: "manual",
  });
  for (const suggestion of first.suggestions) {
    await agent.notify("nes/accept", { sessionId, id: suggestion.id });
  }
  await agent.notify("document/didSave", { sessionId, uri });
  await agent.notify("document/didFocus", {
    sessionId,
    uri,
    version: 2,
    position,
    visibleRange: { start: at(0, 0), end: at(3, 0) },
  });
  const second = await agent.request("nes/suggest", {
    sessionId,
    uri,
    version: 2,
    position,
    triggerKind: "automatic",
  });
  let stale = null;
  try {
    await agent.request("nes/suggest", { sessionId, uri, version: 7, position, triggerKind: "manual" });
  } catch (error) {
    stale = { code: error.code, message: error.message, data: error.data ?? null };
  }
  await agent.notify("document/didClose", { sessionId, uri });
  await agent.request("nes/close", { sessionId });
  return { agentCapabilities: init.agentCapabilities, first, second, stale };
});
writeFileSync(resultFile, JSON.stringify(result));
process.exit(0);
