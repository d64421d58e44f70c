package mcpserver

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// TestCancelReadAhead: the line filter reads ahead of the server. While
// nothing takes lines from the pipe (a server busy with the calls before
// it), a notifications/cancelled line after two requests still marks its
// request cancelled, so that request's response, when the server writes
// it, is not sent; the other request's is. Every line then reaches the
// server in order, and the pipe closes at stdin's end.
func TestCancelReadAhead(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":"a\/b","method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a/b"}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	w := newLockedWriter(&out)
	pr, pw := io.Pipe()
	q := newLineQueue()
	go filterLines(strings.NewReader(in), q, w)
	// Nothing reads pr yet: wait (bounded only to catch a hang) until the
	// filter has read the whole input.
	deadline := time.Now().Add(time.Minute)
	for {
		q.mu.Lock()
		ended := q.ended
		q.mu.Unlock()
		if ended {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the filter did not read ahead of the server: stdin's end was not reached")
		}
		time.Sleep(time.Millisecond)
	}
	w.mu.Lock()
	cancelled := w.cancelled[idKey([]byte(`"a/b"`))]
	w.mu.Unlock()
	if !cancelled {
		t.Fatal("the cancel read ahead did not mark its request cancelled")
	}
	go feedLines(q, pw, w)
	got, err := io.ReadAll(pr)
	if err != nil || string(got) != in {
		t.Fatalf("the server read %q (%v), want the input %q", got, err, in)
	}
	w.Write([]byte(`{"jsonrpc":"2.0","id":"a/b","result":{}}` + "\n"))
	w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
	if want := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"; out.String() != want {
		t.Fatalf("stdout %q, want only %q", out.String(), want)
	}
}

// TestReadAheadBounded: the read-ahead holds at most readAheadBytes (one
// longer line alone): a push beyond it waits until a line is taken.
func TestReadAheadBounded(t *testing.T) {
	q := newLineQueue()
	big := bytes.Repeat([]byte("x"), readAheadBytes/2+1)
	if !q.push(big) {
		t.Fatal("first push refused")
	}
	pushed := make(chan bool)
	go func() { pushed <- q.push(big) }()
	select {
	case <-pushed:
		t.Fatal("a push beyond the bound did not wait")
	case <-time.After(50 * time.Millisecond):
		// Not a timing assertion on our code: the push must not have
		// returned before a line is taken, whatever the delay.
	}
	if _, _, ok := q.pop(); !ok {
		t.Fatal("pop found no line")
	}
	if !<-pushed {
		t.Fatal("the waiting push was refused")
	}
	q.kill()
	if q.push([]byte("y\n")) {
		t.Fatal("a push after the server closed was accepted")
	}
}
