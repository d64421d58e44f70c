// mcp-e2e.mjs: an independent MCP client (the official TypeScript SDK,
// @modelcontextprotocol/sdk) against `inquest mcp`. It lists the tools and
// calls get_status and list_processes, which reach the shared host over
// the local endpoint, and prints one JSON line with what it saw.
//
// Usage: node mcp-e2e.mjs /path/to/inquest
// (install the SDK next to this file first: npm install @modelcontextprotocol/sdk)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const bin = process.argv[2];
if (!bin) {
  console.error("usage: node mcp-e2e.mjs /path/to/inquest");
  process.exit(2);
}
const transport = new StdioClientTransport({
  command: bin,
  args: ["mcp", "--toolsets", "proc"],
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "inquest-node-e2e", version: "1.0.0" });
await client.connect(transport);
const server = client.getServerVersion();
const { tools } = await client.listTools();
const envelope = (res) => {
  const text = res.content?.[0]?.text;
  const fromText = JSON.parse(text);
  if (JSON.stringify(fromText) !== JSON.stringify(res.structuredContent)) {
    throw new Error("structuredContent and text differ");
  }
  return { isError: !!res.isError, body: fromText };
};
const status = envelope(await client.callTool({ name: "get_status", arguments: {} }));
const list = envelope(await client.callTool({ name: "list_processes", arguments: { limit: 5, projection: ["pid", "name"] } }));
console.log(JSON.stringify({
  server: server?.name,
  tools: tools.map((t) => t.name),
  status_error: status.isError,
  backend_instance_id: status.body.backend_instance_id,
  host_pid: status.body.data?.host?.pid,
  mcp_listener: status.body.data?.mcp?.listener,
  list_error: list.isError,
  list_instance: list.body.backend_instance_id,
  rows: list.body.data?.rows?.length,
  next_action: list.body.next_action?.tool ?? null,
}));
await client.close();
