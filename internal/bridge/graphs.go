package bridge

import (
	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/tool"
)

// The graph workspace tools (get_graphs, add_graphs, export_graphs) are
// declared once in host/graphs.go; the bridge publishes them and forwards
// schema-valid calls to the host method of the same name.
func init() {
	AddDefinitions(func(Mode, CallFunc) []tool.Tool { return host.GraphToolDefs() })
}
