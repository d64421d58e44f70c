package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	bin "encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestTranscripts replays the MCP wire transcripts under
// testdata/transcripts against the real `inquest mcp` binary over stdio,
// in the style of the Go SDK's conformance tests. Each .txtar file has:
//
//   - a comment saying what the transcript pins;
//   - `args`: the command line after the binary (e.g. `mcp --in-process`);
//   - `client`: the JSON-RPC messages the client sends, in order ($WORK is
//     the directory holding the inputs the test writes: data.csv, a CSV
//     table, and tiny, an x86-64 ELF executable assembled here);
//   - `server`: every message the server wrote, each normalized and
//     indented.
//
// Requests are sent one at a time (the next after the previous one's
// response), so the transcript's order does not depend on scheduling.
// Normalization replaces what differs between runs and machines and
// nothing else: timestamps, instance and analysis ids, durations, paging
// tokens, the build's version, and $WORK. tools/list is recorded as its
// tool names, its byte size and a sha256 of the compact tools array, not
// the full list (internal/cli/testdata/toolsnaps holds each definition).
// `go test ./cmd/inquest -run TestTranscripts -update` rewrites the server
// sections.
func TestTranscripts(t *testing.T) {
	work := t.TempDir()
	writeTranscriptInputs(t, work)
	files, _ := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txtar"))
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sec := map[string][]byte{}
			for _, fl := range ar.Files {
				sec[fl.Name] = fl.Data
			}
			args := strings.Fields(string(sec["args"]))
			client := strings.ReplaceAll(string(sec["client"]), "$WORK", work)
			got := replay(t, args, []byte(client), work)
			if *update {
				for i := range ar.Files {
					if ar.Files[i].Name == "server" {
						ar.Files[i].Data = got
					}
				}
				if sec["server"] == nil {
					ar.Files = append(ar.Files, txtar.File{Name: "server", Data: got})
				}
				if err := os.WriteFile(f, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(got, sec["server"]) {
				t.Errorf("server messages differ from the transcript (run with -update to rewrite, then review the diff):\n%s", lineDiff(string(sec["server"]), string(got)))
			}
		})
	}
}

// writeTranscriptInputs writes the inputs the transcripts name: data.csv
// (a three-row CSV table) and tiny, a 129-byte x86-64 ELF executable
// (one PT_LOAD segment, no sections) whose code is exit(0). On x86-64 the
// test runs it, so what inspect_binary reads is a real, working binary.
func writeTranscriptInputs(t *testing.T, dir string) {
	t.Helper()
	csv := "name,rss_bytes,threads\nsleep,1048576,1\nsshd,7340032,3\npostgres,52428800,9\n"
	if err := os.WriteFile(filepath.Join(dir, "data.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	code := []byte{0xb8, 0x3c, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05} // mov eax,60; xor edi,edi; syscall
	const base, ehsize, phsize = 0x400000, 64, 56
	size := uint64(ehsize + phsize + len(code))
	var b bytes.Buffer
	le := bin.LittleEndian
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	bin.Write(&b, le, uint16(2))                  // e_type ET_EXEC
	bin.Write(&b, le, uint16(0x3e))               // e_machine EM_X86_64
	bin.Write(&b, le, uint32(1))                  // e_version
	bin.Write(&b, le, uint64(base+ehsize+phsize)) // e_entry
	bin.Write(&b, le, uint64(ehsize))             // e_phoff
	bin.Write(&b, le, uint64(0))                  // e_shoff
	bin.Write(&b, le, uint32(0))                  // e_flags
	bin.Write(&b, le, []uint16{ehsize, phsize, 1, 64, 0, 0})
	bin.Write(&b, le, []uint32{1, 5}) // PT_LOAD, PF_R|PF_X
	bin.Write(&b, le, []uint64{0, base, base, size, size, 0x1000})
	b.Write(code)
	tiny := filepath.Join(dir, "tiny")
	if err := os.WriteFile(tiny, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	if runtime.GOARCH == "amd64" && runtime.GOOS == "linux" {
		if out, err := exec.Command(tiny).CombinedOutput(); err != nil {
			t.Fatalf("the assembled ELF does not run: %v %s", err, out)
		}
	}
}

// replay runs inquest with args, sends the client messages one request at
// a time and returns the server's messages, normalized.
func replay(t *testing.T, args []string, client []byte, work string) []byte {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = isolatedEnv(t)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(3 * time.Minute):
			cmd.Process.Kill()
			<-exited
		}
	}()
	msgs := make(chan json.RawMessage, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			msgs <- append(json.RawMessage(nil), sc.Bytes()...)
		}
		close(msgs)
	}()
	var out bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(client))
	for {
		var m json.RawMessage
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("client section: %v", err)
		}
		var head struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(m, &head)
		var line bytes.Buffer
		json.Compact(&line, m)
		if _, err := stdin.Write(append(line.Bytes(), '\n')); err != nil {
			t.Fatalf("write: %v", err)
		}
		if head.Method == "" || len(head.ID) == 0 {
			continue // a notification or a response: nothing to wait for
		}
		// Collect until the response to this request.
		deadline := time.After(2 * time.Minute)
		for done := false; !done; {
			select {
			case r, ok := <-msgs:
				if !ok {
					t.Fatalf("inquest closed stdout before answering %s (id %s); stderr:\n%s", head.Method, head.ID, stderr.String())
				}
				var rh struct {
					ID json.RawMessage `json:"id"`
				}
				json.Unmarshal(r, &rh)
				done = bytes.Equal(rh.ID, head.ID)
				out.Write(normalizeMessage(t, r, head.Method, work))
			case <-deadline:
				t.Fatalf("no answer to %s (id %s); stderr:\n%s", head.Method, head.ID, stderr.String())
			}
		}
	}
	return out.Bytes()
}

// volatileKeys are members whose values differ between runs of the same
// transcript; their values become "<KEY>".
var volatileKeys = map[string]bool{
	"backend_instance_id": true, "analysis_id": true, "evidence_id": true,
	"captured_at": true, "capture_started_at": true, "capture_finished_at": true,
	"continuation": true, "next_cursor": true, "cursor": true,
	"mtime": true, "modified_at": true, "inode": true, "device": true,
}

var (
	rfc3339   = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
	durations = regexp.MustCompile(`(_ms|_ns|_us|_seconds|duration)$`)
)

// normalizeMessage indents one server message with volatile values
// replaced; a tools/list result becomes {names, bytes, sha256}.
func normalizeMessage(t *testing.T, raw json.RawMessage, method, work string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("server wrote a line that is not a JSON object: %s", raw)
	}
	if res, ok := m["result"].(map[string]any); ok {
		if method == "tools/list" {
			tools, _ := json.Marshal(res["tools"])
			var names []string
			for _, tl := range res["tools"].([]any) {
				names = append(names, tl.(map[string]any)["name"].(string))
			}
			sum := sha256.Sum256(tools)
			res["tools"] = map[string]any{"names": names, "bytes": len(tools), "sha256": hex.EncodeToString(sum[:])}
		}
		if si, ok := res["serverInfo"].(map[string]any); ok {
			si["version"] = "<VERSION>"
		}
		// A tool result: normalize its envelope in both copies.
		if sc, ok := res["structuredContent"]; ok {
			before := mustJSON(sc)
			res["structuredContent"] = normalizeValue("", sc, work)
			if content, ok := res["content"].([]any); ok && len(content) == 1 {
				block := content[0].(map[string]any)
				var env any
				if json.Unmarshal([]byte(block["text"].(string)), &env) == nil {
					if mustJSON(env) != before {
						t.Errorf("the text block and structuredContent differ")
					}
					block["text"] = "<the structuredContent envelope as JSON text>"
				}
			}
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(m)
	return b.Bytes()
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func normalizeValue(key string, v any, work string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeValue(k, e, work)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalizeValue(key, e, work)
		}
		return x
	case nil:
		return nil
	}
	switch {
	case volatileKeys[key]:
		return "<" + strings.ToUpper(key) + ">"
	case durations.MatchString(key):
		return "<DURATION>"
	}
	if s, ok := v.(string); ok {
		if rfc3339.MatchString(s) {
			return "<TIME>"
		}
		return strings.ReplaceAll(s, work, "$WORK")
	}
	return v
}

// lineDiff shows the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  want: %s\n   got: %s", i+1, a, b)
		}
	}
	return "(equal)"
}
