package host

import (
	"context"
	"encoding/json"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/ipc"
)

// IPCService is h as the service of an IPC endpoint
// (ipc.NewHostEndpoint): one Session per connection, marked as an MCP
// bridge's when the peer said so in its hello, closed on disconnect.
func (h *Host) IPCService() ipc.HostService { return ipcService{h} }

type ipcService struct{ h *Host }

func (s ipcService) InstanceID() string                { return s.h.InstanceID }
func (s ipcService) Version() string                   { return s.h.Version }
func (s ipcService) AddStatus(fn func(map[string]any)) { s.h.AddStatus(fn) }
func (s ipcService) NewSession(p ipc.Peer) ipc.Session {
	sess := s.h.NewSession()
	switch p.Client {
	case ipc.ClientMCPBridge:
		MarkMCPBridge(sess)
	case ipc.ClientTUIView:
		MarkLocalFace(sess)
	}
	return ipcSession{h: s.h, s: sess}
}

type ipcSession struct {
	h *Host
	s *Session
}

func (hs ipcSession) Call(ctx context.Context, method string, args json.RawMessage) (*contract.Result, error) {
	// The IPC server already set the caller's result byte budget on ctx
	// (tool.WithResultBudget) from the request.
	return hs.h.Dispatch(ctx, hs.s, method, args)
}
func (hs ipcSession) Close() { hs.s.Close() }
