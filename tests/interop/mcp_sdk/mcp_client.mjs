// A client on the official TypeScript SDK (@agentclientprotocol/sdk 2.x) that hosts an MCP
// server over ACP with the SDK's own provider (McpOverAcpProvider), and drives an agent.
//
//   node mcp_client.mjs RESULT_FILE CWD PROMPT
//
// Speaks ACP on its stdin/stdout (the agent's side is whoever started it: the test serves
// accord's runtime on the pipes). Registers one server, "editor tools", whose handler answers
// the MCP 2026-07-28 requests itself (server/discover, tools/list, tools/call shout), runs
// initialize, session/new naming the server's `acp` declaration, and one session/prompt
// (permission requests answered with their first option), then writes one JSON object to
// RESULT_FILE: {"stopReason", "text", "agentCapabilities", "calls"} (calls: each inner
// request served).
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import {
  client,
  McpOverAcpProvider,
  McpProtocolError,
  ndJsonStream,
} from "@agentclientprotocol/sdk/unstable";

const [resultFile, cwd, prompt] = process.argv.slice(2);
const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));

const calls = [];
const complete = { resultType: "complete" };
const cacheable = { ...complete, cacheScope: "private", ttlMs: 0 }; // discover and listings
const handler = async (cx) => {
  calls.push({ method: cx.method, protocolVersion: cx.protocolVersion, params: cx.params ?? null });
  switch (cx.method) {
    case "server/discover":
      return {
        result: {
          ...cacheable,
          supportedVersions: [cx.protocolVersion],
          capabilities: { tools: {} },
          _meta: { "io.modelcontextprotocol/serverInfo": { name: "editor tools", version: "1.0.0" } },
        },
      };
    case "tools/list":
      return {
        result: {
          ...cacheable,
          tools: [
            {
              name: "shout",
              description: "Upper-case the text.",
              inputSchema: {
                type: "object",
                properties: { text: { type: "string" } },
                required: ["text"],
              },
            },
          ],
        },
      };
    case "tools/call":
      if (cx.params?.name !== "shout") throw new McpProtocolError(-32602, "no such tool");
      return {
        result: {
          ...complete,
          content: [{ type: "text", text: String(cx.params.arguments.text).toUpperCase() }],
          isError: false,
        },
      };
    default:
      throw new McpProtocolError(-32601, `Method not found: ${cx.method}`);
  }
};

const provider = new McpOverAcpProvider();
let text = "";
const app = client()
  .onRequest("mcp/message", provider.handleRequest)
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
  const tools = provider.registerServer(context, { name: "editor tools", handler });
  const initialized = await context.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: {},
    clientInfo: { name: "ts-sdk-mcp-client", version: "1.0.0" },
  });
  const session = await context.request("session/new", {
    cwd,
    mcpServers: [tools.declaration],
  });
  const answer = await context.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: prompt }],
  });
  return { stopReason: answer.stopReason, agentCapabilities: initialized.agentCapabilities };
});
writeFileSync(resultFile, JSON.stringify({ ...result, text, calls }));
process.exit(0);
