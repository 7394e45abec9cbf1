// An agent on the official TypeScript SDK (@agentclientprotocol/sdk 2.x) that uses the MCP
// servers its client hosts over ACP, with the SDK's own caller (McpOverAcpCaller).
//
//   node mcp_agent.mjs          serves ACP on stdin/stdout
//
// It advertises mcpCapabilities.acp, keeps the `acp` servers of session/new, and on each
// prompt calls the first one: tools/list, tools/call shout {text: "hi"} with a progress token
// (its notifications collected), and tools/list on a serverId nobody hosts (the outer error
// kept). It answers the prompt with one agent message chunk: that record as JSON.
import { Readable, Writable } from "node:stream";
import { agent, isMcpServerAcp, McpOverAcpCaller, ndJsonStream } from "@agentclientprotocol/sdk/unstable";

const caller = new McpOverAcpCaller({ clientInfo: { name: "ts-sdk-mcp-agent", version: "1.0.0" } });
const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
let servers = [];

agent()
  .onRequest("initialize", () => ({
    protocolVersion: 1,
    agentCapabilities: { mcpCapabilities: { acp: true } },
    agentInfo: { name: "ts-sdk-mcp-agent", version: "1.0.0" },
  }))
  .onNotification("mcp/message", caller.handleNotification)
  .onRequest("session/new", ({ params }) => {
    servers = params.mcpServers.filter(isMcpServerAcp);
    return { sessionId: "ts-session-1" };
  })
  .onNotification("session/cancel", () => {})
  .onRequest("session/prompt", async ({ params, client }) => {
    const [server] = servers;
    const progress = [];
    const listed = await caller.request(client, server.serverId, "tools/list", {});
    const called = await caller.request(
      client,
      server.serverId,
      "tools/call",
      { name: "shout", arguments: { text: "hi" }, _meta: { progressToken: "p1" } },
      { onNotification: (notification) => progress.push(notification) },
    );
    const unknown = await caller.request(client, "no-such-server", "tools/list", {}).then(
      () => null,
      (error) => ({ code: error.code, message: error.message }),
    );
    const record = {
      server,
      tools: listed.result.tools.map((tool) => tool.name),
      called: called.result,
      progress,
      unknown,
    };
    await client.notify("session/update", {
      sessionId: params.sessionId,
      update: {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: JSON.stringify(record) },
      },
    });
    return { stopReason: "end_turn" };
  })
  .connect(stream);
