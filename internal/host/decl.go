package host

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/tool"
)

// Decl is one proc tool declared once: Tool is its public definition
// (name, description, strict input schema, annotations, paging, job flag,
// arguments type; Handler nil) and Run is its host handler. The host
// registers Run under Tool.Name; the bridge publishes Tool and forwards
// schema-valid calls to the host. A proc tool's schema, arguments struct
// and handler live in one file.
type Decl struct {
	tool.Tool
	// Run answers the tool on the host for session s with schema-valid
	// arguments. Failures are *contract.Error.
	Run func(ctx context.Context, h *Host, s *Session, args json.RawMessage) (*contract.Result, error)
}

// define declares a proc tool whose host handler takes its arguments
// decoded once into A (see tool.Define for the shape of A).
func define[A any](t tool.Tool, run func(ctx context.Context, h *Host, s *Session, args A) (*contract.Result, error)) Decl {
	t.Toolset = tool.Proc
	t.Args = reflect.TypeFor[A]()
	t.Handler = nil
	return Decl{Tool: t, Run: func(ctx context.Context, h *Host, s *Session, raw json.RawMessage) (*contract.Result, error) {
		a, err := tool.Decode[A](raw)
		if err != nil {
			return nil, err
		}
		return run(ctx, h, s, a)
	}}
}
