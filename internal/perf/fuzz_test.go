package perf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"testing/iotest"

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
		rows, next, _, err := decodeCSV(context.Background(), r, header, p, end, r, recordFrag{})
		typed(t, err, contract.CodeDecodeFailed, contract.CodeLimitExceeded)
		// A malformed record's line is encoding/csv's over the whole input.
		if ce, ok := err.(*contract.Error); ok && ce.Details["line"] != nil {
			cr := csv.NewReader(bytes.NewReader(b))
			cr.FieldsPerRecord = len(header)
			var pe *csv.ParseError
			for {
				if _, rerr := cr.Read(); rerr != nil {
					if !errors.As(rerr, &pe) {
						t.Fatalf("we report line %v; encoding/csv: %v", ce.Details["line"], rerr)
					}
					break
				}
			}
			if ce.Details["line"] != pe.StartLine {
				t.Fatalf("line %v; encoding/csv %d (%v)", ce.Details["line"], pe.StartLine, pe)
			}
		}
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
	f.Add([]byte("main;a  4\nmain;b +3\nmain;c 4 \nmain;d\t5\n 7\nmain;e 99999999999999999999\n"))
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
		if string(enc) != `"`+strconv.FormatInt(v, 10)+`"` {
			t.Fatalf("start_ns %q is %d, encodes as %s", a.StartNS, v, enc)
		}
	})
}

// lenientTailWhole is lenientTail's contract over a whole input: the
// array form loses its trailing run of whitespace and at most one comma
// and gains "]" when it does not end with one; it is unchanged when it
// ends with "]" and only whitespace after it, and so is the object form.
func lenientTailWhole(b []byte) (out []byte, fixed bool) {
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 || t[0] != '[' {
		return b, false
	}
	t = bytes.TrimRight(b, " \t\r\n")
	comma := false
	if bytes.HasSuffix(t, []byte(",")) {
		t, comma = bytes.TrimRight(t[:len(t)-1], " \t\r\n"), true
	}
	if t[len(t)-1] == ']' && !comma {
		return b, false
	}
	out = append([]byte{}, t...)
	if t[len(t)-1] != ']' {
		out = append(out, ']')
	}
	return out, true
}

// FuzzLenientTail: lenientTail gives the same bytes whatever the chunks
// it is read in (whole, one byte at a time, halves) and they are
// lenientTailWhole's.
func FuzzLenientTail(f *testing.F) {
	for _, s := range []string{"[1,2", "[1,2,", "[1,2 , \n", "[1],", "[1,,", "[1 , ,", "[", " [ ] \n", `{"a":1} ,`, "  ", "[1,2]\n\n", "[\"a ,\" , "} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, chunk uint8) {
		want, wantFixed := lenientTailWhole(b)
		readers := map[string]io.Reader{
			"whole":    bytes.NewReader(b),
			"one byte": iotest.OneByteReader(bytes.NewReader(b)),
			"half":     iotest.HalfReader(bytes.NewReader(b)),
			"chunks":   &chunkReader{b: b, n: int(chunk%7) + 1},
		}
		for name, r := range readers {
			lt := &lenientTail{r: r}
			got, err := io.ReadAll(lt)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !bytes.Equal(got, want) || lt.fixed != wantFixed {
				t.Fatalf("%s: %q fixed=%v, want %q fixed=%v", name, got, lt.fixed, want, wantFixed)
			}
		}
	})
}

// chunkReader returns b in reads of at most n bytes.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}
