package perf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
	"github.com/inquest-dev/inquest/internal/tool"
)

// seed adds every file under testdata/dir with one of the extensions.
func seed(f *testing.F, dir string, exts ...string) {
	for _, ext := range exts {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*"+ext))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
}

// typed fails the fuzz run when err is not a typed contract error of an
// expected code.
func typed(t *testing.T, err error, codes ...contract.Code) {
	if err == nil {
		return
	}
	c := contract.CodeOf(err)
	for _, want := range codes {
		if c == want {
			return
		}
	}
	t.Fatalf("untyped or unexpected error %v", err)
}

func FuzzCSV(f *testing.F) {
	seed(f, "preview", ".csv")
	f.Add([]byte("a,b\n\"x\ny\",2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		header, end, err := readCSVHeader(r)
		if err != nil {
			typed(t, err, contract.CodeDecodeFailed, contract.CodeLimitExceeded)
			return
		}
		if _, err := r.Seek(end, 0); err != nil {
			t.Fatal(err)
		}
		p := &pager{max: 3}
		rows, next, _, err := decodeCSV(context.Background(), r, header, p, end)
		typed(t, err, contract.CodeDecodeFailed, contract.CodeLimitExceeded)
		if err == nil && next != nil && len(rows) != 3 {
			t.Fatalf("continuation after a short page")
		}
	})
}

func FuzzJSONL(f *testing.F) {
	seed(f, "preview", ".jsonl")
	f.Add([]byte("{\"a\":1}\n[1,2]\n"))
	f.Add([]byte("\xef\xbb\xbf{\"a\":1}\n"))
	f.Add([]byte("\xff\xfe{\x00}\x00\n\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := &pager{max: 4}
		rows, next, _, err := decodeJSONL(context.Background(), bufio.NewReader(bytes.NewReader(b)), p, textState{}, 1<<16)
		typed(t, err, contract.CodeDecodeFailed, contract.CodeLimitExceeded)
		if err == nil {
			if _, merr := json.Marshal(rows); merr != nil {
				t.Fatalf("rows do not encode: %v", merr)
			}
			if next != nil && len(rows) != 4 {
				t.Fatal("continuation after a short page")
			}
		}
	})
}

func FuzzJSONPreview(f *testing.F) {
	seed(f, "preview", ".json")
	f.Add([]byte("\xef\xbb\xbf[1,{\"a\":2}]"))
	f.Add([]byte("\xef\xbb\xbf"))
	f.Add([]byte("[\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := &pager{max: 5}
		_, err := traverseJSON(context.Background(), bytes.NewReader(b), p, nil)
		typed(t, err, contract.CodeDecodeFailed, contract.CodeLimitExceeded, contract.CodeResultTooLarge)
		if _, merr := json.Marshal(p.rows); merr != nil {
			t.Fatalf("rows do not encode: %v", merr)
		}
	})
}

func FuzzChromeTrace(f *testing.F) {
	seed(f, "trace", ".json")
	f.Add([]byte(`[{"ph":"X","ts":1e3,"dur":"2"}]`))
	f.Add([]byte("\xef\xbb\xbf[{\"ph\":\"X\",\"ts\":1,\"dur\":2}]"))
	f.Add([]byte("\xff\xfe[\x00]\x00"))
	f.Add([]byte(`[{"ph":"X","ts":1,"dur":2},{"ph":"X","ts":3}, ` + "\n"))
	f.Add([]byte(`[{"ph":"B","ts":1,"pid":1,"tid":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := scanTrace(context.Background(), bytes.NewReader(b), 1<<20,
			func(ev *traceEvent, s, e int64, instant bool) error {
				if !instant && e < s {
					t.Fatalf("span ends before it starts: %d %d", s, e)
				}
				return nil
			}, func(*traceEvent) {})
		typed(t, err, contract.CodeDecodeFailed, contract.CodeLimitExceeded)
	})
}

func FuzzFolded(f *testing.F) {
	f.Add([]byte("main;a;b 10\nmain;c 3\n"))
	f.Add([]byte("x 1\r\n\n"))
	f.Add([]byte("\xef\xbb\xbfmain;a 3\n# comment\nmain;; 2\nmain;b x\n"))
	f.Add([]byte("\xff\xfem\x00;\x00a\x00 \x001\x00\n\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sp, err := decodeFolded(context.Background(), bytes.NewReader(b), 0, 1<<24)
		typed(t, err, contract.CodeDecodeFailed, contract.CodeLimitExceeded)
		if err != nil {
			return
		}
		stats, total := sp.aggregate(0, granFunctions, nil)
		var flat int64
		for _, s := range stats {
			flat += s.flat
			if s.cum < s.flat {
				t.Fatalf("cum %d below flat %d", s.cum, s.flat)
			}
		}
		if flat != total {
			t.Fatalf("flat sum %d != total %d", flat, total)
		}
	})
}

// FuzzContinuationToken resumes arbitrary tokens through the preview tool's
// binding: only CURSOR_INVALID or INPUT_CHANGED may come back, never a
// position that was not issued.
func FuzzContinuationToken(f *testing.F) {
	c := evidence.NewContinuations([]byte("fuzz-key"))
	ids := []evidence.InputIdentity{{SHA256: "ab", Format: "text"}}
	args := json.RawMessage(`{"page_size":10,"limits":{"max_rows":10}}`)
	f.Add(c.Issue("preview_artifact", ids, args, evidence.Position{Row: 10, State: json.RawMessage(`{"b":100,"l":10}`)}))
	f.Add("e30.AAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		pos, err := c.Resume(tok, "preview_artifact", ids, args)
		typed(t, err, contract.CodeCursorInvalid, contract.CodeInputChanged)
		if err == nil && (pos.Row != 10 || string(pos.State) != `{"b":100,"l":10}`) {
			t.Fatalf("forged position accepted: %+v", pos)
		}
	})
}

// FuzzOperationArgs decodes arbitrary argument objects into the typed
// arguments of the analysis tools: never a panic; a failure is
// INVALID_ARGUMENT; an integer decodes only from an integral number; a
// trace bound that decodes is either a value in 0..2^63-1 that encodes back
// to its canonical string, or an INVALID_ARGUMENT naming its field.
func FuzzOperationArgs(f *testing.F) {
	for _, s := range []string{
		`{"sources":[{"kind":"path","path":"/a"}],"page_size":2.0,"offset":1e1}`,
		`{"start_ns":"9223372036854775807","end_ns":1e3,"view":"threads"}`,
		`{"start_ns":-1,"end_ns":"01"}`,
		`{"limits":{"max_rows":1.5}}`,
		`{"threshold":0.05,"seed":9007199254740993}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := tool.Decode[previewArgs](b); err != nil {
			typed(t, err, contract.CodeInvalidArgument)
		}
		if _, err := tool.Decode[executionsArgs](b); err != nil {
			typed(t, err, contract.CodeInvalidArgument)
		}
		a, err := tool.Decode[traceArgs](b)
		if err != nil {
			typed(t, err, contract.CodeInvalidArgument)
			return
		}
		v, err := a.StartNS.value("start_ns")
		if err != nil {
			typed(t, err, contract.CodeInvalidArgument)
			return
		}
		enc, _ := json.Marshal(a.StartNS)
		if v < 0 || string(enc) != `"`+strconv.FormatInt(v, 10)+`"` {
			t.Fatalf("start_ns %q is %d, encodes as %s", a.StartNS, v, enc)
		}
	})
}
