// Package mcpserver exposes a tool.Registry as an MCP server over the
// official Go SDK (github.com/modelcontextprotocol/go-sdk). Only the Tools
// capability is served. Every call is validated by the registry against the
// tool's published input schema, and every result is one JSON object sent
// both as structuredContent and as the only text block (docs/agents.md).
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure New.
type Options struct {
	// Version is the server version reported in initialize.
	Version string
	// Toolsets restricts the catalog (default: all).
	Toolsets []string
	// Logger receives diagnostics; it must write to stderr, never stdout.
	Logger *slog.Logger
	// MaxResultBytes is the session's delivered-result byte budget (text
	// block and structuredContent together): 0 means
	// tool.DefaultResultBytes; values above tool.HardResultBytes are
	// clamped to it. Every call carries it (tool.WithResultBudget), so paged
	// tools size their pages by it.
	MaxResultBytes int
}

// ResultBudget is the budget opts gives each call: MaxResultBytes, or
// tool.DefaultResultBytes when it is 0 or less, at most
// tool.HardResultBytes.
func (opts Options) ResultBudget() int {
	b := opts.MaxResultBytes
	if b <= 0 {
		b = tool.DefaultResultBytes
	}
	return min(b, tool.HardResultBytes)
}

// New returns an MCP server publishing reg's tools. The SDK negotiates the
// protocol revision the client asks for when it knows it (2025-11-25 for
// today's clients, newer revisions for clients that ask for them).
func New(reg *tool.Registry, opts Options) *mcp.Server {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "inquest", Title: "inquest", Version: opts.Version}, &mcp.ServerOptions{
		Logger: logger,
		// Advertise only what is implemented: tools, whose list never
		// changes during a session (no logging, no listChanged).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		Instructions: "inquest investigates this computer with evidence: processes (proc), performance artifacts (perf), binaries and HTTP captures (bin). Every result says where it came from, how complete it is, and gives next_action for the next page.",
	})
	s.AddReceivingMiddleware(checkCall)
	for _, t := range reg.Tools(opts.Toolsets...) {
		s.AddTool(Definition(reg, t), handler(reg, t.Name, opts.ResultBudget(), Narrowing(t.Input)))
	}
	return s
}

// checkCall refuses logging/setLevel and the methods of the resources,
// prompts and completions capabilities (-32601: only tools is advertised)
// and rejects a malformed tools/call before tool lookup with JSON-RPC
// -32602 (invalid params) saying what is wrong: a call without a tool
// name, or arguments that are present but not a JSON object (null and an
// absent arguments member mean no arguments).
func checkCall(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "logging/setLevel" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "logging is not a capability of this server; diagnostics go to its stderr"}
		}
		if m := unadvertised(method); m != "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + m + " is not a capability of this server (it serves tools only)"}
		}
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
		if p == nil || p.Name == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs params.name, the name of a tool from tools/list"}
		}
		if a := bytes.TrimSpace(p.Arguments); len(a) > 0 && a[0] != '{' && string(a) != "null" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params.arguments of tools/call must be a JSON object (or omitted)"}
		}
		return next(ctx, method, req)
	}
}

// unadvertised returns the capability a server method belongs to when this
// server does not advertise it ("resources", "prompts", "completions"), or
// "" for a method it serves.
func unadvertised(method string) string {
	switch {
	case strings.HasPrefix(method, "resources/"):
		return "resources"
	case strings.HasPrefix(method, "prompts/"):
		return "prompts"
	case method == "completion/complete":
		return "completions"
	}
	return ""
}

// Definition returns the MCP tool definition published in tools/list.
// The title is published once, as the tool's title (annotations.title
// would repeat it; MCP clients fall back to it only when title is
// absent); every hint is explicit. Tool.Details is not published. The
// input schema is the lean one (Registry.LeanInputOf: without bounds and
// long enums); calls are validated against the full one.
func Definition(reg *tool.Registry, t tool.Tool) *mcp.Tool {
	a := t.Annotations
	destructive := a.Destructive
	open := a.OpenWorld
	return &mcp.Tool{
		Name:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  inputSchema(reg, t),
		OutputSchema: reg.OutputSchemaOf(t.Name),
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    a.ReadOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  a.Idempotent,
			OpenWorldHint:   &open,
		},
	}
}

// inputSchema is the lean input schema of t when reg holds it, else
// t's own (a tool not registered, as a test may build).
func inputSchema(reg *tool.Registry, t tool.Tool) json.RawMessage {
	if in := reg.LeanInputOf(t.Name); in != nil {
		return in
	}
	return t.Input
}

func handler(reg *tool.Registry, name string, budget int, narrowing []string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx = tool.WithResultBudget(ctx, budget)
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
		}
		if req.Params != nil && req.Session != nil {
			if tok := req.Params.GetProgressToken(); tok != nil {
				ss := req.Session
				ctx = tool.WithProgressMeta(ctx, func(done, total float64, msg string, meta map[string]any) {
					_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{Meta: meta, ProgressToken: tok, Progress: done, Total: total, Message: msg})
				})
			}
		}
		res, err := reg.Call(ctx, name, args)
		if errors.Is(err, tool.ErrUnknownTool) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool"}
		}
		body, isErr := contract.Marshal(res, err)
		if raw := rawResultsOf(ctx); raw != nil && len(body) >= rawMinBytes {
			// The text block's escaping measures the delivered size
			// (DeliveredBytes) on the way: the body is read once more
			// only when it is over budget.
			enc, size := encodeCallResult(body)
			if !isErr && res != nil && size > budget {
				body, isErr = overBudget(res, body, isErr, size, budget, narrowing...)
				putResponseBuf(enc)
				enc, _ = encodeCallResult(body)
			}
			if placeholder := raw.put(enc, isErr); placeholder != nil {
				return placeholder, nil
			}
			putResponseBuf(enc)
			return project(body, isErr), nil
		}
		body, isErr = within(res, body, isErr, budget, narrowing...)
		return project(body, isErr), nil
	}
}

// Project turns a handler outcome into the MCP result: the envelope JSON as
// structuredContent and as the single text block, with isError set for the
// error envelope.
func Project(res *contract.Result, err error) *mcp.CallToolResult {
	body, isErr := contract.Marshal(res, err)
	return project(body, isErr)
}

// ProjectWithin is Project with the final guard of the result budget: a
// success envelope whose delivered size (DeliveredBytes) exceeds budget
// bytes is still delivered whole (never truncated; its status is
// unchanged) and gains a warning naming its size and the budget
// (OverBudgetWarning), so the caller knows a default answer was larger
// than its client may accept. Paged tools size their pages within the
// budget; the guard catches the rest (a single result that is large by
// nature, a page whose one row is larger than the budget).
func ProjectWithin(res *contract.Result, err error, budget int, narrowing ...string) *mcp.CallToolResult {
	return project(projectWithin(res, err, budget, narrowing...))
}

// projectWithin is ProjectWithin's envelope body and whether it is the
// error envelope.
func projectWithin(res *contract.Result, err error, budget int, narrowing ...string) (body []byte, isErr bool) {
	body, isErr = contract.Marshal(res, err)
	return within(res, body, isErr, budget, narrowing...)
}

// within is projectWithin for the envelope body contract.Marshal encoded
// for res.
func within(res *contract.Result, body []byte, isErr bool, budget int, narrowing ...string) ([]byte, bool) {
	if isErr || res == nil {
		return body, isErr
	}
	if size := DeliveredBytes(body); size > budget {
		return overBudget(res, body, isErr, size, budget, narrowing...)
	}
	return body, isErr
}

// overBudget is within for a success envelope whose delivered size is
// size, over budget: the body with the over-budget warning.
func overBudget(res *contract.Result, body []byte, isErr bool, size, budget int, narrowing ...string) ([]byte, bool) {
	{
		// The warning names the size as delivered with the warning itself:
		// add it, measure, and restate it until the figure is stable (the
		// number's own digits can change the size once).
		n := len(res.Warnings)
		for i := 0; i < 3; i++ {
			res.Warnings = append(res.Warnings[:n], OverBudgetWarning(size, budget, narrowing...))
			next := 0
			if b, delta, ok := withWarnings(body, res.Warnings); ok {
				body, next = b, size+delta
			} else {
				body, isErr = contract.Marshal(res, nil)
				next = DeliveredBytes(body)
			}
			if next == size {
				break
			}
			size = next
		}
	}
	return body, isErr
}

// withWarnings returns the envelope body with its "warnings" member
// replaced by warnings, as contract.Marshal would encode the result with
// them (the members before it are strings and timestamps, so the first
// `,"warnings":[` is that member), without encoding the rest again: a
// page of thousands of rows is encoded once, not once per restatement of
// the over-budget warning. delta is DeliveredBytes(out) minus
// DeliveredBytes(body), from the replaced bytes alone (the escaping of a
// JSON text is counted byte by byte, and the array starts and ends on
// ASCII bytes). ok is false when the body does not have that shape (the
// caller then encodes the result again).
func withWarnings(body []byte, warnings []string) (out []byte, delta int, ok bool) {
	key := []byte(`,"warnings":[`)
	i := bytes.Index(body, key)
	if i < 0 {
		return nil, 0, false
	}
	start := i + len(key) - 1 // the array's '['
	var old []string
	dec := json.NewDecoder(bytes.NewReader(body[start:]))
	if dec.Decode(&old) != nil {
		return nil, 0, false
	}
	end := start + int(dec.InputOffset())
	enc, err := json.Marshal(warnings)
	if err != nil {
		return nil, 0, false
	}
	out = make([]byte, 0, len(body)-(end-start)+len(enc))
	out = append(out, body[:start]...)
	out = append(out, enc...)
	out = append(out, body[end:]...)
	// DeliveredBytes(b) is 2 plus a sum over b's bytes.
	return out, DeliveredBytes(enc) - DeliveredBytes(body[start:end]), true
}

// DeliveredBytes is the size an MCP client receives for an envelope body
// (tool.DeliveredBytes: structuredContent plus the escaped text block).
func DeliveredBytes(body []byte) int { return tool.DeliveredBytes(body) }

// OverBudgetWarning is the warning of a result whose delivered size
// exceeds the session's result budget. narrowing names the arguments of
// the called tool that can narrow it (Narrowing); none are advised when
// it has none.
func OverBudgetWarning(size, budget int, narrowing ...string) string {
	how := "raise the budget with `inquest mcp --max-result-bytes`"
	if len(narrowing) > 0 {
		how = "narrow the call (" + strings.Join(narrowing, ", ") + ") or " + how
	}
	return fmt.Sprintf("this result is %d bytes as delivered (text block and structuredContent), over the result budget of %d bytes; it was not cut, but a client with a smaller window may cut it: %s", size, budget, how)
}

// narrowingArgs are the argument names that narrow a result wherever a
// tool has them: selections, projections and row limits.
var narrowingArgs = []string{"filter", "name_contains", "verdicts", "metric_ids", "projection", "limit", "page_size"}

// Narrowing returns the arguments of the input schema input (its
// top-level properties) that narrow a result (narrowingArgs), in that
// order; nil when it has none or input does not decode.
func Narrowing(input json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(input, &s) != nil {
		return nil
	}
	var out []string
	for _, a := range narrowingArgs {
		if _, ok := s.Properties[a]; ok {
			out = append(out, a)
		}
	}
	return out
}

func project(body []byte, isErr bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(body)}},
		StructuredContent: json.RawMessage(body),
		IsError:           isErr,
	}
}

// ServeStdio runs s on stdin/stdout until the client closes stdin or ctx
// ends. Only MCP messages are written to stdout.
func ServeStdio(ctx context.Context, s *mcp.Server) error {
	return ServeIO(ctx, s, os.Stdin, os.Stdout)
}
