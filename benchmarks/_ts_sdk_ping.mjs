// The official TypeScript SDK (@agentclientprotocol/sdk) on both sides of the round trip
// benchmark (bench_round_trip.py), over stdio pipes as the Python ways are.
//
//   node _ts_sdk_ping.mjs agent            an agent answering `_bench/ping` with {} at once
//   node _ts_sdk_ping.mjs client PINGS     spawns `node _ts_sdk_ping.mjs agent`, runs
//                                          initialize, 200 pings not counted, then PINGS
//                                          sequential pings, and prints one JSON line:
//                                          {"p50_ms", "p99_ms", "client_us", "agent_us"}
//
// The SDK is imported by name: bench_round_trip.py copies this file next to a link to the
// installed node_modules (.interop/acp-sdk-2, from scripts/fetch_interop_agents.sh).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { agent, client, ndJsonStream } from "@agentclientprotocol/sdk";

const WARM_UP = 200;
const anyParams = (params) => params ?? {};
const [mode, pingsText] = process.argv.slice(2);

if (mode === "agent") {
  const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
  agent()
    .onRequest("initialize", () => ({
      protocolVersion: 1,
      agentCapabilities: {},
      agentInfo: { name: "ts-sdk-bench-agent", version: "1.0.0" },
    }))
    .onRequest("_bench/ping", anyParams, () => ({}))
    .connect(stream);
} else {
  const pings = Number(pingsText);
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "agent"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const ticks = 100; // USER_HZ on Linux
  const agentCpu = () => {
    const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(")").pop().trim().split(" ");
    return (Number(fields[11]) + Number(fields[12])) / ticks;
  };
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const result = await client().connectWith(stream, async (context) => {
    await context.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    for (let i = 0; i < WARM_UP; i++) await context.request("_bench/ping", {});
    const rtts = [];
    const agent0 = agentCpu();
    const client0 = process.cpuUsage();
    for (let i = 0; i < pings; i++) {
      const started = process.hrtime.bigint();
      await context.request("_bench/ping", {});
      rtts.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    const used = process.cpuUsage(client0);
    const agentSeconds = agentCpu() - agent0;
    rtts.sort((a, b) => a - b);
    return {
      p50_ms: rtts[Math.floor(pings / 2)],
      p99_ms: rtts[Math.min(pings - 1, Math.floor(pings * 0.99))],
      client_us: (used.user + used.system) / pings,
      agent_us: (agentSeconds / pings) * 1e6,
    };
  });
  console.log(JSON.stringify(result));
  child.kill();
  process.exit(0);
}
