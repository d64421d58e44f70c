// mcp-check.mjs: the official TypeScript SDK client (@modelcontextprotocol/sdk)
// starts a registered MCP server command line as a client would, runs
// initialize and tools/list, and prints one JSON line with what it saw.
//
// Usage: node mcp-check.mjs '["/path/to/inquest","mcp",...]'
// (install the SDK next to this file first: npm install @modelcontextprotocol/sdk)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const argv = JSON.parse(process.argv[2] ?? "[]");
if (!Array.isArray(argv) || argv.length === 0) {
  console.error("usage: node mcp-check.mjs '[\"command\", \"arg\", ...]'");
  process.exit(2);
}
const transport = new StdioClientTransport({
  command: argv[0],
  args: argv.slice(1),
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "inquest-setup-check-node", version: "1.0.0" });
await client.connect(transport);
const server = client.getServerVersion();
const { tools } = await client.listTools();
console.log(JSON.stringify({
  server: server?.name,
  version: server?.version,
  tools: tools.map((t) => t.name),
}));
await client.close();
