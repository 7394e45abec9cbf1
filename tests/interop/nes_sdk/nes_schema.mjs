// The NES module of the official TypeScript SDK (@agentclientprotocol/sdk 2.x,
// `@agentclientprotocol/sdk/experimental/nes`) as JSON Schema, for comparing with accord's.
//
//   node nes_schema.mjs
//
// Prints one JSON object: {"defs": {Name: schema}} with every zod validator of the module
// (`validate.zName`, converted by zod's own toJSONSchema), and {"capabilities": {"agent",
// "client"}}: the module's extended capability validators, whose NES properties accord's
// schema adds to the core ones. Their `_meta` and other core properties are included as the
// SDK has them.
import * as z from "zod/v4";
import { validate, zAgentCapabilities, zClientCapabilities } from "@agentclientprotocol/sdk/experimental/nes";

const json = (schema) => z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
const defs = {};
for (const [name, schema] of Object.entries(validate)) {
  if (name.startsWith("z")) defs[name.slice(1)] = json(schema);
}
const capabilities = { agent: json(zAgentCapabilities), client: json(zClientCapabilities) };
console.log(JSON.stringify({ defs, capabilities }));
