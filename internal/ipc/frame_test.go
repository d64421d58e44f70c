package ipc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/iotest"
)

var update = flag.Bool("update", false, "rewrite testdata/frames seeds")

func frame(payload string) []byte {
	b, _ := AppendFrame(nil, []byte(payload))
	return b
}

func rawFrame(n uint32, payload []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, n)
	return append(b, payload...)
}

func TestReadFrame(t *testing.T) {
	hello := `{"kind":"hello","ipc_major":1,"ipc_minor":0,"bridge_version":"t"}`
	tests := []struct {
		name    string
		in      []byte
		want    []string // payloads read in order
		wantErr error    // error after the payloads (nil = io.EOF)
	}{
		{"one", frame(hello), []string{hello}, nil},
		{"coalesced three", append(append(frame(`{"a":1}`), frame(`{"b":2}`)...), frame(`{"c":[3]}`)...), []string{`{"a":1}`, `{"b":2}`, `{"c":[3]}`}, nil},
		{"zero length", rawFrame(0, nil), nil, ErrFrameEmpty},
		{"oversized", rawFrame(MaxFrame+1, nil), nil, ErrFrameTooLarge},
		{"max uint32", rawFrame(0xffffffff, []byte("{}")), nil, ErrFrameTooLarge},
		{"invalid utf8", rawFrame(4, []byte{'"', 0xff, 0xfe, '"'}), nil, ErrFrameUTF8},
		{"invalid utf8 in object", rawFrame(8, []byte{'{', '"', 'a', '"', ':', '"', 0xc3, '"'}), nil, ErrFrameUTF8},
		{"malformed json", frame(`{"a":`), nil, ErrFrameJSON},
		{"array not object", frame(`[1,2]`), nil, ErrFrameJSON},
		{"two objects in one frame", frame(`{}{}`), nil, ErrFrameJSON},
		{"string", frame(`"x"`), nil, ErrFrameJSON},
		{"truncated payload", rawFrame(10, []byte(`{"a":1}`)), nil, io.ErrUnexpectedEOF},
		{"truncated header", []byte{5, 0}, nil, io.ErrUnexpectedEOF},
		{"good then bad", append(frame(`{"ok":true}`), rawFrame(0, nil)...), []string{`{"ok":true}`}, ErrFrameEmpty},
		{"exactly max", rawFrame(MaxFrame, append(append([]byte(`{"p":"`), bytes.Repeat([]byte("x"), MaxFrame-8)...), '"', '}')), []string{"<max>"}, nil},
	}
	for _, tc := range tests {
		for _, mode := range []string{"whole", "one byte at a time", "half"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				var r io.Reader = bytes.NewReader(tc.in)
				switch mode {
				case "one byte at a time":
					if len(tc.in) > 1<<16 {
						t.Skip("large frame: fragmented reads are covered by smaller cases")
					}
					r = iotest.OneByteReader(r)
				case "half":
					r = iotest.HalfReader(r)
				}
				for i, w := range tc.want {
					got, err := ReadFrame(r)
					if err != nil {
						t.Fatalf("frame %d: %v", i, err)
					}
					if w == "<max>" {
						if len(got) != MaxFrame {
							t.Fatalf("frame %d: %d bytes, want %d", i, len(got), MaxFrame)
						}
						continue
					}
					if string(got) != w {
						t.Fatalf("frame %d = %q, want %q", i, got, w)
					}
				}
				_, err := ReadFrame(r)
				want := tc.wantErr
				if want == nil {
					want = io.EOF
				}
				if !errors.Is(err, want) {
					t.Fatalf("final error = %v, want %v", err, want)
				}
			})
		}
	}
}

func TestAppendFrameRejects(t *testing.T) {
	if _, err := AppendFrame(nil, nil); !errors.Is(err, ErrFrameEmpty) {
		t.Fatalf("empty: %v", err)
	}
	if _, err := AppendFrame(nil, make([]byte, MaxFrame+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    any
		wantErr bool
	}{
		{"hello", `{"kind":"hello","ipc_major":1,"ipc_minor":0,"bridge_version":"x"}`, &Hello{Kind: "hello", IPCMajor: 1, BridgeVersion: "x"}, false},
		{"hello unknown field", `{"kind":"hello","ipc_major":1,"ipc_minor":0,"bridge_version":"x","extra":1}`, nil, true},
		{"welcome", `{"kind":"welcome","ipc_major":1,"ipc_minor":0,"backend_instance_id":"i","application_version":"v"}`, &Welcome{Kind: "welcome", IPCMajor: 1, BackendInstanceID: "i", ApplicationVersion: "v"}, false},
		{"request", `{"kind":"request","request_id":"7","method":"get_status","arguments":{"a":1}}`, &Request{Kind: "request", RequestID: "7", Method: "get_status", Arguments: []byte(`{"a":1}`)}, false},
		{"request null arguments", `{"kind":"request","request_id":"7","method":"m","arguments":null}`, &Request{Kind: "request", RequestID: "7", Method: "m", Arguments: []byte(`{}`)}, false},
		{"request array arguments", `{"kind":"request","request_id":"7","method":"m","arguments":[1]}`, nil, true},
		{"request unknown field", `{"kind":"request","request_id":"7","method":"m","arguments":{},"priority":1}`, nil, true},
		{"request empty id", `{"kind":"request","request_id":"","method":"m","arguments":{}}`, nil, true},
		{"request id 129 bytes", `{"kind":"request","request_id":"` + string(bytes.Repeat([]byte("a"), 129)) + `","method":"m","arguments":{}}`, nil, true},
		{"request id 128 bytes", `{"kind":"request","request_id":"` + string(bytes.Repeat([]byte("a"), 128)) + `","method":"m","arguments":{}}`, &Request{Kind: "request", RequestID: string(bytes.Repeat([]byte("a"), 128)), Method: "m", Arguments: []byte(`{}`)}, false},
		{"request no method", `{"kind":"request","request_id":"1","arguments":{}}`, nil, true},
		{"request id not string", `{"kind":"request","request_id":1,"method":"m","arguments":{}}`, nil, true},
		{"response", `{"kind":"response","request_id":"1","result":{"error":{"code":"BUSY"}}}`, &Response{Kind: "response", RequestID: "1", Result: []byte(`{"error":{"code":"BUSY"}}`)}, false},
		{"response result not object", `{"kind":"response","request_id":"1","result":"x"}`, nil, true},
		{"cancel", `{"kind":"cancel","request_id":"1"}`, &Cancel{Kind: "cancel", RequestID: "1"}, false},
		{"cancel unknown field", `{"kind":"cancel","request_id":"1","why":"x"}`, nil, true},
		{"unknown kind", `{"kind":"shutdown"}`, nil, true},
		{"no kind", `{"request_id":"1"}`, nil, true},
		{"reject", `{"kind":"reject","code":"BUSY","message":"m"}`, &Reject{Kind: "reject", Code: "BUSY", Message: "m"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.in))
			if tc.wantErr {
				if !errors.Is(err, ErrProtocol) {
					t.Fatalf("err = %v, want ErrProtocol", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(encode(got)) != string(encode(tc.want)) {
				t.Fatalf("got %s, want %s", encode(got), encode(tc.want))
			}
		})
	}
}

// seedFrames are committed under testdata/frames (go test -update rewrites
// them) and seed FuzzReadFrame.
var seedFrames = map[string][]byte{
	"hello.bin":     frame(`{"kind":"hello","ipc_major":1,"ipc_minor":0,"bridge_version":"0.1.0"}`),
	"request.bin":   frame(`{"kind":"request","request_id":"1","method":"list_processes","arguments":{"limit":5}}`),
	"coalesced.bin": append(frame(`{"kind":"cancel","request_id":"1"}`), frame(`{"kind":"request","request_id":"2","method":"get_status","arguments":{}}`)...),
	"zero.bin":      rawFrame(0, nil),
	"badutf8.bin":   rawFrame(4, []byte{'"', 0xff, 0xfe, '"'}),
	"huge.bin":      rawFrame(0xfffffff0, []byte("{}")),
}

func TestSeedFiles(t *testing.T) {
	for name, b := range seedFrames {
		p := filepath.Join("testdata", "frames", name)
		if *update {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("%s differs from the generator (run go test -update)", p)
		}
	}
}

// FuzzReadFrame feeds arbitrary bytes to the frame reader and the message
// decoder: they must never panic, never return a payload that breaks the
// frame invariants, and re-encoding a decoded message must decode again.
func FuzzReadFrame(f *testing.F) {
	ents, _ := os.ReadDir(filepath.Join("testdata", "frames"))
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata", "frames", e.Name()))
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		for {
			p, err := ReadFrame(r)
			if err != nil {
				return
			}
			if len(p) == 0 || len(p) > MaxFrame || checkPayload(p) != nil {
				t.Fatalf("ReadFrame returned an invalid payload %q", p)
			}
			m, err := Decode(p)
			if err != nil {
				if !errors.Is(err, ErrProtocol) {
					t.Fatalf("Decode error %v is not ErrProtocol", err)
				}
				continue
			}
			if _, err := Decode(encode(m)); err != nil {
				t.Fatalf("re-encoded message does not decode: %v", err)
			}
			if r, ok := m.(*Response); ok {
				// the hand-written Response encoding decodes to the same message
				back, err := Decode(encode(*r))
				if err != nil {
					t.Fatalf("re-encoded response does not decode: %v", err)
				}
				br := back.(*Response)
				var a, b any
				json.Unmarshal(r.Result, &a)
				json.Unmarshal(br.Result, &b)
				if br.Kind != r.Kind || br.RequestID != r.RequestID || !reflect.DeepEqual(a, b) {
					t.Fatalf("response %+v re-encoded as %+v", r, br)
				}
			}
		}
	})
}
