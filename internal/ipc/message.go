package ipc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/inquest-dev/inquest/internal/contract"
)

// Protocol version of this package (the hello's ipc_major and ipc_minor).
// A major mismatch fails the handshake; the minor says which optional
// request fields the host reads: minor 1 added Request.ResultBudget, which
// a bridge sends only to a host of minor 1 or later.
const (
	Major = 1
	Minor = 1
)

// Message kinds. hello/welcome/reject are the handshake; request, response
// and cancel follow it (docs/host.md, "Protocol"). reject is this implementation's
// handshake refusal (capacity, version mismatch), sent instead of welcome.
const (
	KindHello    = "hello"
	KindWelcome  = "welcome"
	KindReject   = "reject"
	KindRequest  = "request"
	KindResponse = "response"
	KindCancel   = "cancel"
)

// MaxIDBytes bounds request_id (nonempty, at most 128
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

// ClientTUIView is Hello.Client of a TUI attached as a view: a local
// CLI-class connection whose user may decide the actions the view itself
// requested (the person at the TUI confirms their own profile delete in
// its overlay, as at a TUI that runs the host).
const ClientTUIView = "tui_view"

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
	// ResultBudget is the bridge's delivered-result byte budget for this
	// call (`inquest mcp --max-result-bytes`); the host runs the call with
	// it (tool.WithResultBudget), so paged tools size their pages by it.
	// Omitted (0) means the default, tool.DefaultResultBytes. Sent only to
	// hosts of IPC minor 1 or later.
	ResultBudget int `json:"result_budget,omitempty"`
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
	// Read the top-level keys until "kind" (the first key of every frame
	// inquest writes), skipping other values: the whole payload is
	// validated once, by decodeStrict, not once more here.
	missing := fmt.Errorf("%w: missing kind", ErrProtocol)
	d := json.NewDecoder(bytes.NewReader(payload))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return "", missing
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return "", missing
		}
		if key, _ := t.(string); key == "kind" {
			var k string
			if d.Decode(&k) != nil || k == "" {
				return "", missing
			}
			return k, nil
		}
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return "", missing
		}
	}
	return "", missing
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
	if kindField(v) != kind {
		return nil, fmt.Errorf("%w: kind given twice", ErrProtocol)
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

// kindField is the decoded kind of a message type of Decode.
func kindField(v any) string {
	switch m := v.(type) {
	case *Hello:
		return m.Kind
	case *Welcome:
		return m.Kind
	case *Reject:
		return m.Kind
	case *Request:
		return m.Kind
	case *Response:
		return m.Kind
	case *Cancel:
		return m.Kind
	}
	return ""
}

func checkID(id string) error {
	if id == "" || len(id) > MaxIDBytes {
		return fmt.Errorf("%w: request_id must be 1..128 bytes", ErrProtocol)
	}
	return nil
}

// encode marshals a message; the types above always marshal. A Response
// whose result is an object is written around it as is (the host's
// contract.Marshal output: one compact JSON object, valid by
// construction), without a pass that validates or compacts it again; the
// reader validates every frame (ReadFrame).
func encode(v any) []byte {
	if r, ok := v.(Response); ok && len(r.Result) > 1 && r.Result[0] == '{' && r.Result[len(r.Result)-1] == '}' {
		b := make([]byte, 0, len(r.Result)+len(r.RequestID)+48)
		b = append(b, `{"kind":`...)
		b = appendJSONString(b, r.Kind)
		b = append(b, `,"request_id":`...)
		b = appendJSONString(b, r.RequestID)
		b = append(b, `,"result":`...)
		b = append(b, r.Result...)
		return append(b, '}')
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic("ipc: encode: " + err.Error())
	}
	return b
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// wireResult is a response's result object: the success envelope's
// fields with data and coverage kept as the host's JSON, or the error
// envelope's "error".
type wireResult struct {
	contract.Result
	Error    *contract.Error `json:"error"`
	Coverage json.RawMessage `json:"coverage"`
	Data     json.RawMessage `json:"data"`
}

// resultOf turns a response's result object (from a frame ReadFrame
// validated) back into the handler outcome: a *contract.Result whose Data
// and Coverage keep the host's exact JSON (json.RawMessage), or the
// *contract.Error under "error".
func resultOf(raw json.RawMessage) (*contract.Result, error) {
	// The data is cut out unscanned when it can be (validatedResult);
	// otherwise one pass reads the error envelope's "error" and the
	// result's fields.
	wire, ok := validatedResult(raw)
	if !ok {
		wire = &wireResult{}
		if err := json.Unmarshal(raw, wire); err != nil {
			return nil, contract.Errorf(contract.CodeInternalError, "the host sent an undecodable result")
		}
	}
	return wire.result()
}

// result is the decoded wire result: its error when the host sent one,
// else the result with its coverage (an empty object when absent or null)
// and its data (nil when absent or null).
func (wire *wireResult) result() (*contract.Result, error) {
	if wire.Error != nil {
		return nil, wire.Error
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
