// Package perf is the perf toolset (docs/perf.md): analysis tools over
// performance artifacts — previews of text, JSON, JSONL and CSV files, pprof
// and folded-stack profiles, Go benchmark results, Chrome trace-event
// windows — and the lifecycle tools that keep results as immutable evidence
// (internal/evidence).
//
// Every analysis tool takes the same top-level arguments: sources (a strict
// union of {kind:"path", path, format?, producer?, expected_sha256?} and
// {kind:"evidence", evidence_id, artifact_selector?}, with the operation's
// cardinality in minItems/maxItems and its accepted formats in the format
// enum), its operation-specific fields, continuation, limits and page_size.
// Results are paged by row count; a page with more after it carries the
// envelope's next_action (stated once, not repeated under data): the exact
// tool and complete arguments of the next call, with a continuation token from evidence.Continuations bound to
// the ordered input digests and formats and every other argument. It never
// reruns a capture; it rereads the same bytes and refuses changed ones
// (INPUT_CHANGED).
//
// Tools(rt) returns the tool definitions; the CLI (internal/cli) registers
// them and drives the same tools for `inquest analyze` and `inquest
// evidence`.
package perf
