package bin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// midRunCancel is a context whose Err is nil for its first n calls and
// context.Canceled from then on (Done closes at that moment): a
// cancellation mid-run that depends on how far the work got, not on time.
type midRunCancel struct {
	context.Context
	n       atomic.Int64
	once    sync.Once
	done    chan struct{}
	flipped atomic.Bool
}

func newMidRunCancel(n int64) *midRunCancel {
	c := &midRunCancel{Context: context.Background(), done: make(chan struct{})}
	c.n.Store(n)
	return c
}

func (c *midRunCancel) Err() error {
	if c.n.Add(-1) >= 0 {
		return nil
	}
	c.once.Do(func() { c.flipped.Store(true); close(c.done) })
	return context.Canceled
}

func (c *midRunCancel) Done() <-chan struct{} { return c.done }

func (c *midRunCancel) Deadline() (time.Time, bool) { return time.Time{}, false }

// facetFacts returns the facts of one inspection facet, for comparing a
// damaged file's "complete" claim with the whole file.
func facetFacts(in *Inspection, facet string) any {
	switch facet {
	case "header":
		return in.Header
	case "sections":
		var names []string
		for _, s := range in.Sections {
			names = append(names, s.Name+"@"+s.Address+"+"+s.Size)
		}
		return names
	case "segments":
		return in.Segments
	case "dynamic":
		return in.Dynamic
	case "imports":
		return in.Imports
	case "exports":
		return in.Exports
	case "build_id":
		return in.BuildID
	case "go_build_info":
		return in.GoBuildInfo
	case "debug_info":
		return in.Debug
	case "hardening":
		return in.Hardening
	}
	return nil
}

// acceptanceFixture is one file of the table and the tool calls made on it
// (each with "path" or "right" replaced by the damaged copy).
type acceptanceFixture struct {
	name  string
	path  string
	calls []acceptanceCall
	// zero lists the magic numbers this file's facets rest on: the
	// offset of each is found in the whole file.
	zero []magic
}

type acceptanceCall struct {
	tool string
	args map[string]any
	// target is the argument the damaged path goes in.
	target string
}

type magic struct {
	facet string
	bytes []byte
	// want is the state the facet must not be (complete/not_applicable
	// claims after the marker is destroyed need the deciding bytes).
	wantNot []string
}

// TestAcceptanceDamagedInputs is the table of issue 23: every bin tool on
// files truncated at five positions and with the magic number of each
// facet zeroed, and every tool cancelled mid-run. A facet is complete or
// not_applicable only when it agrees with the whole file (its deciding
// bytes were read); a tool result complete on a damaged file has the
// whole file's rows; no unresolved structure is INVALID_ARGUMENT; a run
// that observed its cancellation never returns complete.
func TestAcceptanceDamagedInputs(t *testing.T) {
	buildCorpus(t)
	dir := t.TempDir()
	c := gccBuild(t, dir, "compute", computeC, "-g", "-O1")
	text, _ := elfSection(t, c, ".text")
	har := filepath.Join(dir, "a.har")
	writeFile(t, dir, "a.har", []byte(`{"log":{"version":"1.2","creator":{"name":"t","version":"1"},"entries":[
{"request":{"method":"GET","url":"https://a.test/1"},"response":{"status":200,"content":{"size":2,"mimeType":"text/plain","text":"hi"}},"time":3,"timings":{"send":1,"wait":1,"receive":1}},
{"request":{"method":"GET","url":"https://a.test/2"},"response":{"status":404,"content":{"size":0,"mimeType":"text/plain","text":""}},"time":1,"timings":{"send":0,"wait":1,"receive":0}}]}}`))

	binCalls := func(symbol, section, start string) []acceptanceCall {
		calls := []acceptanceCall{
			{"inspect_binary", map[string]any{}, "path"},
			{"list_symbols", map[string]any{"limit": 1000}, "path"},
			{"search_strings", map[string]any{"section": section, "limit": 1000}, "path"},
			{"disassemble", map[string]any{"symbol": symbol}, "path"},
			{"compare_binaries", map[string]any{"kinds": []string{"section", "import"}, "limit": 1000}, "right"},
		}
		if start != "" {
			calls = append(calls, acceptanceCall{"disassemble", map[string]any{"start": start, "max_instructions": 20}, "path"})
		}
		return calls
	}
	notDone := []string{FacetComplete, FacetNotApplicable}
	fixtures := []acceptanceFixture{
		{name: "elf-c", path: c, calls: binCalls("compute", ".rodata", hexU(text.Addr)), zero: []magic{
			{"header", []byte("\x7fELF"), nil},
			{"debug_info", debugInfoHeader(t, c), notDone},
		}},
		{name: "elf-go", path: corpus["go-linux-amd64"], calls: binCalls("main.compute", ".rodata", ""), zero: []magic{
			{"go_build_info", []byte("\xff Go buildinf:"), notDone},
			{"build_id", []byte("Go\x00\x00"), nil},
		}},
		{name: "pe-go", path: corpus["go-windows-amd64.exe"], calls: binCalls("main.compute", ".rdata", ""), zero: []magic{
			{"header", []byte("PE\x00\x00"), nil},
			{"go_build_info", []byte("\xff Go buildinf:"), notDone},
		}},
		{name: "macho-go", path: corpus["go-darwin-arm64"], calls: binCalls("_main.compute", "__TEXT,__rodata", ""), zero: []magic{
			{"header", []byte("\xcf\xfa\xed\xfe"), nil},
			{"go_build_info", []byte("\xff Go buildinf:"), notDone},
		}},
		{name: "har", path: har, calls: []acceptanceCall{
			{"inspect_http_capture", map[string]any{"limit": 1000}, "path"},
			{"compare_http_captures", map[string]any{"limit": 1000}, "right"},
		}, zero: []magic{{"log", []byte(`{"log"`), nil}}},
	}
	r := registry(t, "")
	for _, fx := range fixtures {
		whole := mustRead(t, fx.path)
		wholeIn, wholeErr := Inspect(context.Background(), whole)
		var variants []struct {
			name string
			data []byte
			zero *magic
		}
		for _, frac := range []int{0, 1, 2, 3, 4} {
			n := []int{min(10, len(whole)-1), len(whole) / 4, len(whole) / 2, len(whole) * 3 / 4, len(whole) - 1}[frac]
			variants = append(variants, struct {
				name string
				data []byte
				zero *magic
			}{fmt.Sprintf("cut at %d", n), whole[:n], nil})
		}
		for i := range fx.zero {
			m := &fx.zero[i]
			at := bytes.Index(whole, m.bytes)
			if at < 0 {
				t.Fatalf("%s: no %q for facet %s", fx.name, m.bytes, m.facet)
			}
			b := bytes.Clone(whole)
			clear(b[at : at+len(m.bytes)])
			variants = append(variants, struct {
				name string
				data []byte
				zero *magic
			}{fmt.Sprintf("zeroed %s magic at %d", m.facet, at), b, m})
		}
		for _, v := range variants {
			t.Run(fx.name+"/"+v.name, func(t *testing.T) {
				p := writeFile(t, t.TempDir(), "damaged", v.data)
				in, ierr := Inspect(context.Background(), v.data)
				resolved := ierr == nil && in.Complete()
				if ierr == nil && wholeErr == nil {
					for f, cov := range in.Facets {
						if cov.State != FacetComplete && cov.State != FacetNotApplicable {
							continue
						}
						if v.zero != nil && v.zero.facet == f {
							for _, bad := range v.zero.wantNot {
								if cov.State == bad {
									t.Errorf("facet %s is %s with its magic zeroed (%s)", f, cov.State, cov.Reason)
								}
							}
							continue
						}
						if v.zero != nil {
							continue // other facets may legitimately change with the bytes
						}
						if w := wholeIn.Facets[f]; w.State != cov.State || !reflect.DeepEqual(facetFacts(in, f), facetFacts(wholeIn, f)) {
							t.Errorf("facet %s is %s on the cut file but %s on the whole file or with other facts: its deciding bytes were not read", f, cov.State, w.State)
						}
					}
				}
				for _, call := range fx.calls {
					args := map[string]any{}
					for k, val := range call.args {
						args[k] = val
					}
					args[call.target] = p
					wholeArgs := map[string]any{}
					for k, val := range call.args {
						wholeArgs[k] = val
					}
					wholeArgs[call.target] = fx.path
					if call.target == "right" {
						args["left"], wholeArgs["left"] = fx.path, fx.path
						if fx.name == "har" {
							args["left"], args["right"] = map[string]any{"path": fx.path}, map[string]any{"path": p}
							wholeArgs["left"], wholeArgs["right"] = map[string]any{"path": fx.path}, map[string]any{"path": fx.path}
						}
					}
					m, err := call2(r, context.Background(), call.tool, args)
					if err != nil {
						if e := contract.AsError(err); e.Code == contract.CodeInvalidArgument && !resolved {
							t.Errorf("%s %v: INVALID_ARGUMENT on a file with unresolved structure: %s (%s)", call.tool, call.args, e.Message, e.Field)
						}
						continue
					}
					if m["status"] != "complete" || v.zero != nil {
						continue
					}
					wm, werr := call2(r, context.Background(), call.tool, wholeArgs)
					if werr != nil {
						t.Fatalf("%s on the whole file: %v", call.tool, werr)
					}
					if call.tool == "inspect_binary" {
						continue // facets are checked above
					}
					if got, want := rowsJSON(m), rowsJSON(wm); got != want {
						t.Errorf("%s %v is complete on the cut file with rows that differ from the whole file's", call.tool, call.args)
					}
				}
			})
		}
		// The table's arguments are valid for the whole file.
		for _, call := range fx.calls {
			args := map[string]any{}
			for k, val := range call.args {
				args[k] = val
			}
			args[call.target] = fx.path
			if call.target == "right" {
				args["left"] = fx.path
				if fx.name == "har" {
					args["left"], args["right"] = map[string]any{"path": fx.path}, map[string]any{"path": fx.path}
				}
			}
			if m, err := call2(r, context.Background(), call.tool, args); err != nil {
				t.Fatalf("%s: %s %v on the whole file: %v %v", fx.name, call.tool, call.args, err, m["warnings"])
			}
		}
		t.Run(fx.name+"/cancelled mid-run", func(t *testing.T) {
			for _, call := range fx.calls {
				args := map[string]any{}
				for k, val := range call.args {
					args[k] = val
				}
				args[call.target] = fx.path
				if call.target == "right" {
					args["left"] = fx.path
					if fx.name == "har" {
						args["left"], args["right"] = map[string]any{"path": fx.path}, map[string]any{"path": fx.path}
					}
				}
				for _, n := range []int64{0, 1, 2, 5, 20} {
					ctx := newMidRunCancel(n)
					m, err := call2(r, ctx, call.tool, args)
					if err != nil {
						if code := contract.CodeOf(err); code != contract.CodeCancelled {
							t.Errorf("%s cancelled after %d checks: %v, want CANCELLED", call.tool, n, err)
						}
						continue
					}
					if ctx.flipped.Load() && m["status"] == "complete" {
						t.Errorf("%s observed its cancellation after %d checks but returned complete", call.tool, n)
					}
					// Partial evidence of a cancelled run says so.
					if cov, _ := m["coverage"].(map[string]any); ctx.flipped.Load() && cov["cancelled"] != true {
						t.Errorf("%s returned a result after its cancellation without coverage.cancelled: %v", call.tool, m["warnings"])
					}
				}
			}
		})
	}
}

// debugInfoHeader returns the first 12 bytes of the ELF's .debug_info (its
// first unit header), the magic the DWARF facet rests on.
func debugInfoHeader(t *testing.T, p string) []byte {
	s, _ := elfSection(t, p, ".debug_info")
	return mustRead(t, p)[s.Offset : s.Offset+12]
}

// call2 calls a tool with ctx and decodes the envelope.
func call2(r interface {
	Call(context.Context, string, json.RawMessage) (*contract.Result, error)
}, ctx context.Context, name string, args any) (map[string]any, error) {
	raw, _ := json.Marshal(args)
	res, err := r.Call(ctx, name, raw)
	if err != nil {
		return nil, err
	}
	body, _ := contract.Marshal(res, nil)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func rowsJSON(m map[string]any) string {
	d, _ := m["data"].(map[string]any)
	b, _ := json.Marshal(d["rows"])
	return string(b)
}
