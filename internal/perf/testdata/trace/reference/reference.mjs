// Reads Chrome trace files (and, speedscope only, folded stack files)
// with two live importers and prints, per
// file, what each one built, as one JSON array on stdout:
//
//   speedscope (the npm package's release bundle, through the same
//   importProfileGroupFromBase64 entry its CLI uses): accepted, error,
//   warnings, and per profile (one per pid/tid of a trace; one for a
//   folded "collapsed stack" file) its name and per frame name the total
//   weight (frames) and self weight (self), in microseconds for traces
//   and in samples for folded stacks, and its slices (every call of the
//   profile's timeline in order: name, start and end on the profile's
//   value axis);
//   DevTools' trace engine (@paulirish/trace_engine, through the
//   package's own analyzeTrace file loader): accepted, error, and per
//   pid/tid thread its entries (X, B/E pairs, I instants) per name with
//   count and summed dur in microseconds, and every entry (slices: name,
//   ts and dur in microseconds, in the engine's order).
//
// Usage: node reference.mjs NODE_MODULES_PARENT [--only=speedscope|devtools] FILE...
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';

const root = process.argv[2];
let only = '';
const files = process.argv.slice(3).filter(a => {
  if (a.startsWith('--only=')) {
    only = a.slice('--only='.length);
    return false;
  }
  return true;
});

// speedscope ships one browser bundle. Its import module is reached
// through the bundle's own importProfileGroupFromBase64 wrapper, which
// the bundle exposes to the page for its CLI; the wrapper is made
// visible to this script, then the page start-up (which needs a DOM) is
// left to fail.
async function loadSpeedscope() {
  const rel = path.join(root, 'node_modules/speedscope/dist/release');
  const js = fs.readdirSync(rel).find(f => /^speedscope-.*\.js$/.test(f));
  let src = fs.readFileSync(path.join(rel, js), 'utf8');
  const m = /async function (\w+)\(\w+,\w+\)\{return\(await \w+\)\.importProfileGroupFromBase64\(\w+,\w+\)\}/.exec(src);
  if (!m) {
    throw new Error('speedscope bundle: importProfileGroupFromBase64 wrapper not found');
  }
  src = src.replace(m[0], m[0] + `globalThis.__importBase64=${m[1]};`);
  const stub = () => new Proxy(function() {}, {
    get: (t, k) => k === Symbol.toPrimitive ? (() => '') : stub(),
    apply: () => stub(),
    construct: () => stub(),
  });
  const warnings = [];
  const ctx = {
    console: {log() {}, info() {}, error() {}, warn: (...a) => warnings.push(a.join(' '))},
    TextDecoder, TextEncoder, setTimeout, clearTimeout, URL, atob, btoa,
  };
  ctx.window = ctx;
  ctx.self = ctx;
  ctx.document = stub();
  ctx.navigator = {userAgent: 'node', platform: 'linux'};
  ctx.location = {hash: '', href: 'file:///speedscope', search: ''};
  ctx.localStorage = stub();
  ctx.requestAnimationFrame = () => 0;
  ctx.matchMedia = () => ({matches: false, addEventListener() {}, addListener() {}});
  vm.createContext(ctx);
  try {
    vm.runInContext(src, ctx);
  } catch {
    // The page start-up has no DOM here; the importer is already bound.
  }
  if (typeof ctx.__importBase64 !== 'function') {
    throw new Error('speedscope bundle: importer not bound');
  }
  return {importBase64: ctx.__importBase64, warnings};
}

async function speedscope(ss, file) {
  ss.warnings.length = 0;
  const b64 = fs.readFileSync(file).toString('base64');
  let group;
  try {
    group = await ss.importBase64(path.basename(file), b64);
  } catch (e) {
    return {accepted: false, error: String(e && e.message || e)};
  }
  if (!group) {
    return {accepted: false, error: 'unrecognized format (the importer returned no profile)'};
  }
  const profiles = [];
  for (const p of group.profiles) {
    const frames = {};
    const self = {};
    p.forEachFrame(f => {
      frames[f.name] = (frames[f.name] ?? 0) + f.getTotalWeight();
      self[f.name] = (self[f.name] ?? 0) + f.getSelfWeight();
    });
    const slices = [];
    const open = [];
    p.forEachCall((node, value) => {
      open.push({name: node.frame.name, start: value});
    }, (node, value) => {
      const o = open.pop();
      slices.push({name: o.name, start: o.start, end: value});
    });
    profiles.push({name: p.getName(), frames, self, slices});
  }
  return {accepted: true, warnings: [...ss.warnings], profiles};
}

async function devtools(analyzeTrace, file) {
  let parsed;
  const saved = console.error;
  const errors = [];
  console.error = (...a) => errors.push(a.join(' '));
  try {
    parsed = (await analyzeTrace(file)).parsedTrace;
  } catch (e) {
    return {accepted: false, error: String(e && e.message || e)};
  } finally {
    console.error = saved;
  }
  const threads = [];
  for (const [pid, proc] of parsed.data.Renderer.processes) {
    for (const [tid, th] of proc.threads) {
      const names = {};
      const slices = [];
      for (const e of th.entries) {
        const n = names[e.name] ??= {count: 0, dur: 0};
        n.count++;
        n.dur += e.dur ?? 0;
        slices.push({name: e.name, ts: e.ts, dur: e.dur ?? null, ph: e.ph});
      }
      threads.push({pid: String(pid), tid: String(tid), names, slices});
    }
  }
  return {accepted: true, errors, threads};
}

const ss = only === 'devtools' ? null : await loadSpeedscope();
const te = only === 'speedscope' ? null : await import(path.join(root, 'node_modules/@paulirish/trace_engine/analyze-trace.mjs'));
const out = [];
for (const f of files) {
  out.push({
    file: path.basename(f),
    speedscope: ss ? await speedscope(ss, f) : {accepted: false, error: 'not run'},
    devtools: te ? await devtools(te.analyzeTrace, f) : {accepted: false, error: 'not run'},
  });
}
process.stdout.write(JSON.stringify(out));
