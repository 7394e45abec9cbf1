// The official TypeScript SDK (@agentclientprotocol/sdk 2.x) serving an agent over its own
// server transport: AcpServer with the Node adapters (HTTP + WebSocket upgrades) at /acp.
//
//   node sdk_server.mjs      prints "listening PORT" once ready (port chosen by the system)
//
// The agent answers each prompt with two message chunks: "SDK says: " and the prompt's text.
// It checks `Authorization: Bearer $ACCORD_TOKEN` itself (401 otherwise), as a served agent
// should; the SDK leaves authentication to the host.
import http from "node:http";
import { agent } from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import {
  createNodeHttpHandler,
  createNodeWebSocketUpgradeHandler,
} from "@agentclientprotocol/sdk/experimental/node";
import { WebSocketServer } from "ws";

const expected = `Bearer ${process.env.ACCORD_TOKEN}`;
let sessions = 0;

const createAgent = () =>
  agent()
    .onRequest("initialize", () => ({
      protocolVersion: 1,
      agentCapabilities: { loadSession: false },
      agentInfo: { name: "sdk-interop-agent", version: "1.0.0" },
    }))
    .onRequest("session/new", () => ({ sessionId: `sdk-session-${++sessions}` }))
    .onRequest("session/prompt", async ({ params, client }) => {
      const said = params.prompt.map((block) => (block.type === "text" ? block.text : "")).join("");
      for (const text of ["SDK says: ", said]) {
        await client.notify("session/update", {
          sessionId: params.sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
        });
      }
      return { stopReason: "end_turn" };
    })
    .onNotification("session/cancel", () => {});

const server = new AcpServer({ createAgent });
const httpHandler = createNodeHttpHandler(server);
const wss = new WebSocketServer({ noServer: true });
const upgradeHandler = createNodeWebSocketUpgradeHandler(server, wss);

const refuse = (req) => req.headers.authorization !== expected;
const httpServer = http.createServer((req, res) => {
  if (refuse(req)) {
    res.writeHead(401, { "WWW-Authenticate": "Bearer" }).end();
    return;
  }
  httpHandler(req, res);
});
httpServer.on("upgrade", (req, socket, head) => {
  if (refuse(req)) {
    socket.end("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  upgradeHandler(req, socket, head);
});
httpServer.listen(0, "127.0.0.1", () => {
  console.log(`listening ${httpServer.address().port}`);
});
