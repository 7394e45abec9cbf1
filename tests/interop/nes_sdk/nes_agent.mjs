// An agent on the official TypeScript SDK's NES module (@agentclientprotocol/sdk 1.9.0 or
// 2.x, `@agentclientprotocol/sdk/experimental/nes`) answering next edit suggestions.
//
//   node nes_agent.mjs LOG_FILE
//
// Speaks ACP on its stdin/stdout (the test's accord client started it). Advertises utf-16
// positions and every document event (didChange incremental); keeps each open document's
// text (a JavaScript string: indexed in UTF-16 units, as the positions are) and applies
// incremental changes in order. nes/suggest answers one edit: after the first "nme" of the
// document, an "a" inserted after its "n" (none when there is no "nme"). After every message
// it rewrites LOG_FILE with {"events": [[method, params]], "documents": {uri: {version,
// text}}} (events: what it received, the SDK's validators having parsed the params).
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { agent, ndJsonStream } from "@agentclientprotocol/sdk/experimental/nes";

const [logFile] = process.argv.slice(2);
const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const events = [];
const documents = {};
const log = (method, params) => {
  events.push([method, params]);
  writeFileSync(logFile, JSON.stringify({ events, documents }));
};
const offset = (text, { line, character }) => {
  let at = 0;
  for (let n = 0; n < line; n += 1) at = text.indexOf("\n", at) + 1;
  return at + character;
};
const position = (text, at) => {
  const before = text.slice(0, at);
  const line = before.split("\n").length - 1;
  return { line, character: at - (before.lastIndexOf("\n") + 1) };
};
let suggestions = 0;

const app = agent()
  .onRequest("initialize", () => ({
    protocolVersion: 1,
    agentCapabilities: {
      positionEncoding: "utf-16",
      nes: {
        events: {
          document: {
            didOpen: {},
            didChange: { syncKind: "incremental" },
            didClose: {},
            didSave: {},
            didFocus: {},
          },
        },
      },
    },
    agentInfo: { name: "sdk-nes-agent", version: "1.0.0" },
    authMethods: [],
  }))
  .onRequest("nes/start", ({ params }) => {
    log("nes/start", params);
    return { sessionId: "sdk-nes-1" };
  })
  .onNotification("document/didOpen", ({ params }) => {
    documents[params.uri] = { version: params.version, text: params.text };
    log("document/didOpen", params);
  })
  .onNotification("document/didChange", ({ params }) => {
    const held = documents[params.uri];
    for (const change of params.contentChanges) {
      if (change.range == null) {
        held.text = change.text;
      } else {
        const start = offset(held.text, change.range.start);
        const end = offset(held.text, change.range.end);
        held.text = held.text.slice(0, start) + change.text + held.text.slice(end);
      }
    }
    held.version = params.version;
    log("document/didChange", params);
  })
  .onNotification("document/didClose", ({ params }) => {
    delete documents[params.uri];
    log("document/didClose", params);
  })
  .onNotification("document/didSave", ({ params }) => log("document/didSave", params))
  .onNotification("document/didFocus", ({ params }) => log("document/didFocus", params))
  .onRequest("nes/suggest", ({ params }) => {
    log("nes/suggest", params);
    const { text } = documents[params.uri];
    const at = text.indexOf("nme");
    if (at < 0) return { suggestions: [] };
    suggestions += 1;
    const point = position(text, at + 1);
    // the cursor after "name", in the text as the edit leaves it
    const edited = `${text.slice(0, at + 1)}a${text.slice(at + 1)}`;
    return {
      suggestions: [
        {
          kind: "edit",
          id: `sdk-suggestion-${suggestions}`,
          uri: params.uri,
          edits: [{ range: { start: point, end: point }, newText: "a" }],
          cursorPosition: position(edited, at + 4),
        },
      ],
    };
  })
  .onNotification("nes/accept", ({ params }) => log("nes/accept", params))
  .onNotification("nes/reject", ({ params }) => log("nes/reject", params))
  .onRequest("nes/close", ({ params }) => {
    log("nes/close", params);
    return {};
  });

app.connect(stream);
