// tasks.mjs: the representative agent tasks, each done through the official
// TypeScript MCP SDK client (@modelcontextprotocol/sdk) against the real
// `inquest mcp`, in at most two tool calls; then every tool's result and
// error checked by the SDK's own output-schema validation.
//
// Usage: node tasks.mjs CONFIG_JSON
//   CONFIG_JSON: {"bin": "/path/to/inquest", "file": F, "holder_pid": P,
//                 "waiter_pid": W, "listener_pid": L, "listener_port": N,
//                 "csv": "/path/to/data.csv", "bench": "/path/to/bench.txt"}
// Prints one JSON object: {"sdk": version, "tools": n, "tasks": {...},
// "schema": {...}}. Go's agents_test.go starts the processes, runs this
// script and checks what it printed against /proc and the processes it
// started.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync } from "node:fs";

const cfg = JSON.parse(process.argv[2] ?? "{}");
if (!cfg.bin) {
  console.error("usage: node tasks.mjs CONFIG_JSON");
  process.exit(2);
}
const sdkVersion = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url)),
).version;

const transport = new StdioClientTransport({
  command: cfg.bin,
  args: ["mcp", "--in-process"],
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "inquest-agent-tasks", version: "1.0.0" });
await client.connect(transport);
// listTools compiles every tool's output schema (Ajv); callTool then
// validates each result's structuredContent against it and throws when it
// does not match.
const { tools } = await client.listTools();

// call makes one tool call and returns its envelope; the text block and
// structuredContent must be the same JSON.
async function call(name, args) {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content?.[0]?.text;
  const body = JSON.parse(text);
  if (JSON.stringify(body) !== JSON.stringify(res.structuredContent)) {
    throw new Error(`${name}: structuredContent and text differ`);
  }
  return { isError: !!res.isError, body, bytes: text.length * 2 };
}

// unknownArgument reports whether an error result refuses one of names as
// an argument this build does not have yet (INVALID_ARGUMENT at that
// field): the task is then skipped, not failed.
function unknownArgument(r, ...fields) {
  const e = r.body.error;
  return r.isError && e?.code === "INVALID_ARGUMENT" && fields.includes(e.field) ? e.field : null;
}

// rowsOf returns the rows of a job tool's first page: data.rows (the
// first page is flat in the job's data).
function rowsOf(body) {
  return body.data?.rows ?? [];
}

// finish follows a job tool's next_action once when the first call
// returned before the job ended (the second allowed call).
async function jobRows(name, args, task) {
  let r = await call(name, args);
  task.calls = 1;
  if (r.isError) return r;
  if (rowsOf(r.body).length === 0 && r.body.next_action) {
    r = await call(r.body.next_action.tool, r.body.next_action.arguments);
    task.calls = 2;
  }
  return r;
}

const tasks = {};

// 1. Who holds file F?
{
  const t = (tasks.who_holds_file = {});
  const r = await jobRows("start_capture", { kind: "file_users", filter: { path: cfg.file } }, t);
  t.error = r.isError ? r.body.error : undefined;
  t.holders = rowsOf(r.body)
    .filter((row) => row.path === cfg.file)
    .map((row) => ({ pid: row.pid, name: row.name, process_ref: row.process_ref }));
  t.bytes = r.bytes;
}

// 2. How did P's RSS change over the last 60 s?
{
  const t = (tasks.rss_change = { calls: 1 });
  const r = await call("get_history", { target: { pid: cfg.holder_pid }, metric_ids: ["rss_bytes"], last_seconds: 60 });
  t.error = r.isError ? r.body.error : undefined;
  const d = r.body.data ?? {};
  t.process_ref = d.target?.process_ref;
  t.resolved_pid = d.resolved_pids?.[0]?.pid;
  t.summary = d.metrics?.rss_bytes;
  t.bytes = r.bytes;
}

// 3. Which libraries does P map, and what does one of them import?
{
  const t = (tasks.libraries_and_imports = {});
  const r = await jobRows("start_capture", { kind: "modules", pid: cfg.holder_pid }, t);
  t.error = r.isError ? r.body.error : undefined;
  t.modules = [...new Set(rowsOf(r.body).map((row) => row.path).filter(Boolean))];
  const lib = t.modules.find((p) => /\/libc\.so/.test(p)) ?? t.modules.find((p) => /\.so/.test(p));
  t.library = lib;
  if (lib && t.calls < 2) {
    const b = await call("inspect_binary", { path: lib, facets: ["imports"] });
    t.calls++;
    const missing = unknownArgument(b, "/facets");
    if (missing) {
      t.skip = `inspect_binary does not accept ${missing} in this build (facets land with the bin summary-first change)`;
    } else {
      t.inspect_error = b.isError ? b.body.error : undefined;
      // Facet rows are data.rows, each naming its facet.
      const rows = b.body.data?.rows ?? [];
      t.imports = rows.filter((row) => row.facet === "imports").map((row) => row.name);
      t.import_rows = rows.length;
      t.inspect_bytes = b.bytes;
    }
  }
}

// 4. Wait until P exits. The first call registers the wait and returns at
// once (wait_ms 0); the process is ended; the second call returns the
// outcome. (With a wait_ms long enough, one call returns it.)
{
  const t = (tasks.wait_exit = {});
  const first = await call("wait_condition", { condition: "process_exit", pid: cfg.waiter_pid, timeout_ms: 60000, wait_ms: 0 });
  t.first_state = first.body.data?.state;
  t.first_error = first.isError ? first.body.error : undefined;
  process.kill(cfg.waiter_pid, "SIGTERM");
  let r = first;
  t.calls = 1;
  if (!first.isError && first.body.next_action) {
    r = await call(first.body.next_action.tool, { ...first.body.next_action.arguments, wait_ms: 10000 });
    t.calls = 2;
  }
  t.error = r.isError ? r.body.error : undefined;
  t.state = r.body.data?.state;
  t.satisfied = r.body.data?.satisfied;
  t.exited = r.body.data?.evidence?.exited;
  t.process_ref = r.body.data?.condition?.process_ref;
}

// 5. Which processes listen on TCP?
{
  const t = (tasks.tcp_listeners = {});
  const r = await jobRows("start_capture", { kind: "network", filter: { state: "LISTEN", protocol: "tcp" } }, t);
  const missing = unknownArgument(r, "/filter/state", "/filter/protocol", "/filter");
  if (missing) {
    t.skip = `start_capture does not accept ${missing} in this build (the network state/protocol filter lands with the proc filters change)`;
  } else {
    t.error = r.isError ? r.body.error : undefined;
    t.rows = rowsOf(r.body).map((row) => ({
      pid: row.pid, protocol: row.protocol, state: row.state,
      local_port: row.local?.port, local_address: row.local?.address,
    }));
    t.bytes = r.bytes;
  }
}

// Every tool's errors and read-only defaults through the SDK's validation:
// each call with an argument no tool has (an INVALID_ARGUMENT result for
// every tool), each read-only tool with no arguments, and successes of
// perf and bin tools on real inputs.
const schema = { calls: 0, failures: [], successes: [] };
async function validated(name, args) {
  schema.calls++;
  try {
    const r = await call(name, args);
    if (!r.isError) schema.successes.push(name);
    return r;
  } catch (e) {
    schema.failures.push(`${name} ${JSON.stringify(args)}: ${e.message}`);
    return null;
  }
}
for (const tl of tools) {
  const r = await validated(tl.name, { zz_not_an_argument: 1 });
  if (r && (!r.isError || r.body.error?.code !== "INVALID_ARGUMENT")) {
    schema.failures.push(`${tl.name}: an unknown argument was not INVALID_ARGUMENT`);
  }
  if (tl.annotations?.readOnlyHint) await validated(tl.name, {});
}
await validated("preview_artifact", { sources: [{ kind: "path", path: cfg.csv }] });
await validated("summarize_benchmarks", { sources: [{ kind: "path", path: cfg.bench }] });
for (const name of ["inspect_binary", "list_symbols", "search_strings"]) {
  await validated(name, { path: cfg.bin });
}
await validated("disassemble", { path: cfg.bin, symbol: "main.main" });
await validated("compare_binaries", { left: cfg.bin, right: cfg.bin });
schema.successes = [...new Set(schema.successes)].sort();

console.log(JSON.stringify({ sdk: sdkVersion, tools: tools.length, tasks, schema }));
await client.close();
