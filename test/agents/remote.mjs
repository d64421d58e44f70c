// remote.mjs: an investigation through a registered remote inquest (the
// ssh command line `inquest setup --remote` wrote), done with the official
// TypeScript MCP SDK client exactly as an agent starts it.
//
// Usage: node remote.mjs CONFIG_JSON
//   CONFIG_JSON: {"mode": "investigate" | "fail", "command": "/usr/bin/ssh",
//                 "args": [...], "pid": P, "file": F, "timeout_ms": N}
// mode investigate: list_processes (filter pid P), get_history of P's
// rss_bytes (polled until two samples exist), file_users of F; prints
// {"sdk", "tools", "list", "history", "file_users", "stdout_ok"}.
// mode fail: connects and prints {"connected", "error", "stderr",
// "timed_out"}: how the failure reached the client.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync } from "node:fs";

const cfg = JSON.parse(process.argv[2] ?? "{}");
if (!cfg.command) {
  console.error("usage: node remote.mjs CONFIG_JSON");
  process.exit(2);
}
const sdkVersion = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url)),
).version;

const transport = new StdioClientTransport({
  command: cfg.command,
  args: cfg.args,
  env: process.env,
  stderr: "pipe",
});
let stderr = "";
transport.stderr?.on("data", (b) => {
  stderr += b.toString();
});
// Every message that is not a JSON-RPC frame makes the SDK call onerror
// (a line on stdout that does not parse): count them.
let badFrames = 0;
const client = new Client({ name: "inquest-remote-test", version: "1.0.0" });
client.onerror = (e) => {
  badFrames++;
  stderr += `\n[client error] ${e?.message ?? e}`;
};
const timeout = cfg.timeout_ms ?? 60000;

if (cfg.mode === "fail") {
  const out = { connected: false, timed_out: false };
  const started = Date.now();
  try {
    await client.connect(transport, { timeout });
    out.connected = true;
    await client.close();
  } catch (e) {
    out.error = String(e?.message ?? e);
    out.timed_out = /timed out|timeout/i.test(out.error) && Date.now() - started >= timeout;
  }
  // ssh has exited; let its last stderr bytes arrive.
  await new Promise((r) => setTimeout(r, 200));
  out.stderr = stderr;
  console.log(JSON.stringify(out));
  process.exit(0);
}

await client.connect(transport, { timeout });
const { tools } = await client.listTools();

async function call(name, args) {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout });
  const text = res.content?.[0]?.text;
  const body = JSON.parse(text);
  if (JSON.stringify(body) !== JSON.stringify(res.structuredContent)) {
    throw new Error(`${name}: structuredContent and text differ`);
  }
  return { isError: !!res.isError, body };
}

const out = { sdk: sdkVersion, tools: tools.length };

{
  const r = await call("list_processes", { filter: { pid: cfg.pid } });
  out.list = { error: r.isError ? r.body.error : undefined, rows: r.body.data?.rows ?? [] };
}

{
  // The host started by this session samples every few seconds: poll
  // until P has two samples (bounded by the test's timeout).
  let r;
  for (;;) {
    r = await call("get_history", { target: { pid: cfg.pid }, metric_ids: ["rss_bytes"], last_seconds: 600 });
    const n = r.body.data?.metrics?.rss_bytes?.sample_count ?? 0;
    if (r.isError || n >= 2) break;
    await new Promise((res) => setTimeout(res, 500));
  }
  const d = r.body.data ?? {};
  out.history = {
    error: r.isError ? r.body.error : undefined,
    resolved_pid: d.resolved_pids?.[0]?.pid,
    process_ref: d.target?.process_ref,
    summary: d.metrics?.rss_bytes,
  };
}

{
  let r = await call("start_capture", { kind: "file_users", filter: { path: cfg.file } });
  let rows = r.body.data?.rows ?? [];
  if (!r.isError && rows.length === 0 && r.body.next_action) {
    r = await call(r.body.next_action.tool, r.body.next_action.arguments);
    rows = r.body.data?.rows ?? [];
  }
  out.file_users = {
    error: r.isError ? r.body.error : undefined,
    holders: rows.filter((row) => row.path === cfg.file).map((row) => ({ pid: row.pid, name: row.name })),
  };
}

await client.close();
out.bad_frames = badFrames;
out.stderr = stderr;
console.log(JSON.stringify(out));
