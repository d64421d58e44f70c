package ipc_test

import (
	"context"
	"encoding/json"
	"github.com/inquest-dev/inquest/internal/ipc"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
)

// TestInvalidUTF8ArgumentsKeepConnection (issue case 1): arguments with
// raw invalid UTF-8 are refused by the client with INVALID_ARGUMENT before
// anything is sent, so the host never sees a protocol violation and the
// connection (with its captures and jobs) survives; the next call works.
func TestInvalidUTF8ArgumentsKeepConnection(t *testing.T) {
	startHost(t)
	c := ipc.DialClient(t, ipc.Path())
	before := statusMCP(t, c)["listener_starts"]
	_, err := c.Call(context.Background(), "list_processes", json.RawMessage("{\"filter\":{\"name\":\"a\xff\xfe\"}}"))
	if contract.CodeOf(err) != contract.CodeInvalidArgument {
		t.Fatalf("want INVALID_ARGUMENT, got %v", err)
	}
	if !c.Alive() {
		t.Fatal("the connection was dropped")
	}
	if st := statusMCP(t, c); st["listener_starts"] != before || st["connections"] != float64(1) {
		t.Fatalf("status after the refused call: %v", st)
	}
}
