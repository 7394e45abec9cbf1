// The official TypeScript SDK (@agentclientprotocol/sdk 2.x) as a client of a served agent.
//
//   node sdk_client.mjs ws|http URL PROMPT
//
// Connects with the SDK's own transport (createWebSocketStream with the `ws` package, or
// createHttpStream over fetch), the token from ACCORD_TOKEN in `Authorization: Bearer`;
// runs initialize, session/new and one session/prompt, and prints one JSON line:
// {"stopReason", "text", "sessionId"} (text: the agent message chunks of the turn).
import { client } from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import WebSocket from "ws";

const [kind, url, prompt] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${process.env.ACCORD_TOKEN}` };
const stream =
  kind === "ws"
    ? createWebSocketStream(url, { headers, WebSocket })
    : createHttpStream(url, { headers });

let text = "";
const app = client()
  .onNotification("session/update", ({ params }) => {
    const update = params.update;
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      text += update.content.text;
    }
  })
  .onRequest("session/request_permission", ({ params }) => ({
    outcome: { outcome: "selected", optionId: params.options[0].optionId },
  }));

const result = await app.connectWith(stream, async (context) => {
  await context.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: {},
    clientInfo: { name: "sdk-interop-client", version: "1.0.0" },
  });
  const session = await context.request("session/new", { cwd: process.cwd(), mcpServers: [] });
  const answer = await context.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: prompt }],
  });
  return { stopReason: answer.stopReason, sessionId: session.sessionId };
});
console.log(JSON.stringify({ ...result, text }));
process.exit(0);
