package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/inquest-dev/inquest/internal/contract"
)

// Protocol version of this package (seed 000 section 5: "ipc_major: 1,
// ipc_minor: 0"). A major mismatch fails the handshake; the minor is not
// compared.
const (
	Major = 1
	Minor = 0
)

// Message kinds. hello/welcome/reject are the handshake; request, response
// and cancel follow it (seed 000 section 5). reject is this implementation's
// handshake refusal (capacity, version mismatch), sent instead of welcome.
const (
	KindHello    = "hello"
	KindWelcome  = "welcome"
	KindReject   = "reject"
	KindRequest  = "request"
	KindResponse = "response"
	KindCancel   = "cancel"
)

// MaxIDBytes bounds request_id (seed 000 section 5: nonempty, at most 128
// bytes). Method names have the same bound.
const MaxIDBytes = 128

// Hello opens a connection (bridge -> host).
type Hello struct {
	Kind          string `json:"kind"`
	IPCMajor      int    `json:"ipc_major"`
	IPCMinor      int    `json:"ipc_minor"`
	BridgeVersion string `json:"bridge_version"`
	// Client says what connects: ClientMCPBridge for `inquest mcp`,
	// ClientLocalConfirm for a local decision (`inquest confirm`), empty
	// for other local CLI commands; each has its own connection allowance.
	// The host refuses local-only decisions (such as confirming a pending
	// operation) to MCP bridge sessions.
	Client string `json:"client,omitempty"`
}

// ClientMCPBridge is Hello.Client of an MCP bridge connection.
const ClientMCPBridge = "mcp_bridge"

// ClientLocalConfirm is Hello.Client of a local decision connection
// (`inquest confirm`, the y/N answer of a waiting CLI mutation); it uses
// the reserved MaxConfirmConns allowance.
const ClientLocalConfirm = "local_confirm"

// Welcome accepts a connection (host -> bridge). BackendInstanceID is the
// host instance's random id; refs and cursors of another id are invalid.
type Welcome struct {
	Kind               string `json:"kind"`
	IPCMajor           int    `json:"ipc_major"`
	IPCMinor           int    `json:"ipc_minor"`
	BackendInstanceID  string `json:"backend_instance_id"`
	ApplicationVersion string `json:"application_version"`
}

// Reject refuses a connection during the handshake (host -> bridge); the
// host closes the connection after sending it. Code is a contract code
// (BUSY at capacity, BACKEND_UNAVAILABLE for a version mismatch).
type Reject struct {
	Kind    string        `json:"kind"`
	Code    contract.Code `json:"code"`
	Message string        `json:"message"`
}

// Request asks the host to run Method (a host method name: every proc tool
// and internal methods such as local confirmation) with Arguments, a JSON
// object.
type Request struct {
	Kind      string          `json:"kind"`
	RequestID string          `json:"request_id"`
	Method    string          `json:"method"`
	Arguments json.RawMessage `json:"arguments"`
	// ResultBudget is the caller's delivered-result byte budget (0: the
	// host's default); the host pages results to fit it.
	ResultBudget int `json:"result_budget,omitempty"`
}

type budgetKey struct{}

// RequestBudget is the ResultBudget of the request being served in ctx
// (0 when the caller sent none).
func RequestBudget(ctx context.Context) int {
	b, _ := ctx.Value(budgetKey{}).(int)
	return b
}

// Response answers the request with RequestID. Result is the tool envelope
// (contract.Marshal): a success object or {"error": {...}}.
type Response struct {
	Kind      string          `json:"kind"`
	RequestID string          `json:"request_id"`
	Result    json.RawMessage `json:"result"`
}

// Cancel asks the host to cancel a pending request; an unknown or finished
// id has no effect.
type Cancel struct {
	Kind      string `json:"kind"`
	RequestID string `json:"request_id"`
}

// ErrProtocol marks envelope violations: unknown kinds or fields, bad ids,
// trailing data. They close the connection.
var ErrProtocol = errors.New("ipc: protocol violation")

// kindOf returns the kind field of a frame payload without validating the rest.
func kindOf(payload []byte) (string, error) {
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(payload, &k); err != nil || k.Kind == "" {
		return "", fmt.Errorf("%w: missing kind", ErrProtocol)
	}
	return k.Kind, nil
}

// decodeStrict decodes payload into v, rejecting unknown fields and
// anything after the object.
func decodeStrict(payload []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(payload))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if d.More() {
		return fmt.Errorf("%w: trailing data", ErrProtocol)
	}
	return nil
}

// Decode parses one frame payload into its message type (*Hello, *Welcome,
// *Reject, *Request, *Response or *Cancel). Unknown kinds, unknown fields,
// missing or oversized ids and non-object arguments are ErrProtocol.
func Decode(payload []byte) (any, error) {
	kind, err := kindOf(payload)
	if err != nil {
		return nil, err
	}
	var v any
	switch kind {
	case KindHello:
		v = &Hello{}
	case KindWelcome:
		v = &Welcome{}
	case KindReject:
		v = &Reject{}
	case KindRequest:
		v = &Request{}
	case KindResponse:
		v = &Response{}
	case KindCancel:
		v = &Cancel{}
	default:
		return nil, fmt.Errorf("%w: unknown kind", ErrProtocol)
	}
	if err := decodeStrict(payload, v); err != nil {
		return nil, err
	}
	switch m := v.(type) {
	case *Request:
		if err := checkID(m.RequestID); err != nil {
			return nil, err
		}
		if m.Method == "" || len(m.Method) > MaxIDBytes {
			return nil, fmt.Errorf("%w: method must be 1..128 bytes", ErrProtocol)
		}
		if len(m.Arguments) == 0 || string(m.Arguments) == "null" {
			m.Arguments = json.RawMessage("{}")
		} else if m.Arguments[0] != '{' {
			return nil, fmt.Errorf("%w: arguments must be a JSON object", ErrProtocol)
		}
	case *Response:
		if err := checkID(m.RequestID); err != nil {
			return nil, err
		}
		if len(m.Result) == 0 || m.Result[0] != '{' {
			return nil, fmt.Errorf("%w: result must be a JSON object", ErrProtocol)
		}
	case *Cancel:
		if err := checkID(m.RequestID); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func checkID(id string) error {
	if id == "" || len(id) > MaxIDBytes {
		return fmt.Errorf("%w: request_id must be 1..128 bytes", ErrProtocol)
	}
	return nil
}

// encode marshals a message; the types above always marshal.
func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("ipc: encode: " + err.Error())
	}
	return b
}

// resultOf turns a response's result object back into the handler outcome:
// a *contract.Result whose Data and Coverage keep the host's exact JSON
// (json.RawMessage), or the *contract.Error under "error".
func resultOf(raw json.RawMessage) (*contract.Result, error) {
	var probe struct {
		Error *contract.Error `json:"error"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, contract.Errorf(contract.CodeInternalError, "the host sent an undecodable result")
	}
	if probe.Error != nil {
		return nil, probe.Error
	}
	var wire struct {
		contract.Result
		Coverage json.RawMessage `json:"coverage"`
		Data     json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, contract.Errorf(contract.CodeInternalError, "the host sent an undecodable result")
	}
	res := wire.Result
	res.Coverage = wire.Coverage
	res.Data = wire.Data
	if res.Coverage == nil || string(wire.Coverage) == "null" {
		res.Coverage = map[string]any{}
	}
	if res.Data == nil || string(wire.Data) == "null" {
		res.Data = nil
	}
	return &res, nil
}
