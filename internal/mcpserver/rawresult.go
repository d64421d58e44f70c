package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/inquest-dev/inquest/internal/jsonenc"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawMinBytes is the envelope size from which a stdio session writes a
// tool result it encoded itself (rawResults): below it the SDK's own
// encoding costs little.
const rawMinBytes = 16 << 10

// maxRawPending bounds the encoded results a session holds for responses
// not yet written. While that many are held, a further large result goes
// through the SDK's own encoding (slower, never dropped).
const maxRawPending = 16

// rawResults holds the tool results of one stdio session encoded once, in
// the bytes the SDK would write for them (encodeCallResult), until the
// session's connection writes their responses (codedConn.Write). The SDK
// encodes a result three times over (the CallToolResult, the JSON-RPC
// result, the message), compacting and validating every byte each time;
// for a page of a megabyte that was most of a paged listing's cost. The
// tool handler hands the SDK a small placeholder naming the entry, and
// the connection writes the entry's bytes in its place.
type rawResults struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64][]byte
	// marker is how a placeholder's content and structuredContent are
	// encoded, up to the entry's number: the SDK writes its own members
	// around them (_meta, isError, resultType, in its order), and those
	// are kept as it wrote them.
	marker []byte
}

// placeholderContent is how the SDK encodes a placeholder's empty
// content list, just before its structuredContent.
const placeholderContent = `"content":[],"structuredContent":`

func newRawResults() *rawResults {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	return &rawResults{m: map[uint64][]byte{},
		marker: []byte(placeholderContent + `{"inquest.raw.` + hex.EncodeToString(nonce[:]) + `":`)}
}

type rawResultsKey struct{}

// withRawResults returns ctx carrying r for the tool handlers of the
// session served under it.
func withRawResults(ctx context.Context, r *rawResults) context.Context {
	return context.WithValue(ctx, rawResultsKey{}, r)
}

// rawResultsOf is the rawResults of the session ctx serves, or nil when
// its connection does not write them (any transport but ServeIO's).
func rawResultsOf(ctx context.Context) *rawResults {
	r, _ := ctx.Value(rawResultsKey{}).(*rawResults)
	return r
}

// put keeps content (encodeCallResult's) and returns the placeholder
// result naming it, with isError as the real result's, or nil (keeping
// nothing) while maxRawPending results are held: the caller then returns
// the result for the SDK to encode.
func (r *rawResults) put(content []byte, isErr bool) *mcp.CallToolResult {
	r.mu.Lock()
	if len(r.m) >= maxRawPending {
		r.mu.Unlock()
		return nil
	}
	n := r.next
	r.next++
	r.m[n] = content
	r.mu.Unlock()
	// The SDK encodes this as marker, n, "}" inside its result object.
	token := append(bytes.Clone(r.marker[len(placeholderContent):]), strconv.FormatUint(n, 10)+"}"...)
	return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: json.RawMessage(token), IsError: isErr}
}

// maxPlaceholderResult bounds the SDK-encoded result take looks into: a
// placeholder's is its members and a few bytes of token, far below.
const maxPlaceholderResult = 16 << 10

// take returns the encoded content a placeholder result (as the SDK
// encoded it) names and forgets it, with the SDK's result split around
// the placeholder's content: head before it, tail after. placeholder is
// false for any other result; found is false for a placeholder whose
// entry is gone.
func (r *rawResults) take(result []byte) (content, head, tail []byte, placeholder, found bool) {
	if len(result) > maxPlaceholderResult {
		return nil, nil, nil, false, false
	}
	i := bytes.Index(result, r.marker)
	if i < 0 {
		return nil, nil, nil, false, false
	}
	rest := result[i+len(r.marker):]
	end := bytes.IndexByte(rest, '}')
	if end < 0 {
		return nil, nil, nil, false, false
	}
	n, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil {
		return nil, nil, nil, false, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	content, found = r.m[n]
	delete(r.m, n)
	return content, result[:i], rest[end+1:], true, found
}

// responseRoom is the room encodeCallResult leaves before the content
// for encodeResponse's `{"jsonrpc":"2.0","id":ID,"result":` and the
// SDK's result members before content (its _meta).
const responseRoom = 512

// tailRoom is the room left after the content for the SDK's members
// after structuredContent (isError, resultType) and the line's end.
const tailRoom = 256

// encodeCallResult is how the SDK writes the content and
// structuredContent members of project(body, isErr), after responseRoom
// bytes of room: the envelope as the text block (a JSON string, with
// encoding/json's escaping, HTML characters included) and as
// structuredContent (body itself: contract.Marshal's output is compact
// JSON, which the SDK's compaction leaves unchanged). The members around
// them (isError among them) are the SDK's, from the placeholder
// (rawResults.take). delivered is the body's DeliveredBytes, which the
// text block's length gives.
func encodeCallResult(body []byte) (out []byte, delivered int) {
	need := responseRoom + 2*len(body) + len(body)/8 + tailRoom
	if b, _ := responseBufs.Get().(*[]byte); b != nil && cap(*b) >= need {
		out = (*b)[:responseRoom]
	} else {
		out = make([]byte, responseRoom, need)
	}
	out = append(out, `"content":[{"type":"text","text":`...)
	n := len(out)
	out = jsonenc.Bytes(out, body)
	delivered = len(body) + len(out) - n
	out = append(out, `}],"structuredContent":`...)
	return append(out, body...), delivered
}

// responseBufs holds the buffers of encoded results already written
// (putResponseBuf), for the next large result: a page of a paged listing
// is a few megabytes, and a fresh buffer per page is as many bytes for the
// collector to reclaim and for the kernel to fault in.
var responseBufs sync.Pool

// maxPooledResponse bounds the buffer putResponseBuf keeps (a result
// near the hard result limit, escaped).
const maxPooledResponse = 32 << 20

// putResponseBuf gives b, an encodeCallResult buffer no longer used (its
// response was written), for a later result to reuse.
func putResponseBuf(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledResponse {
		return
	}
	b = b[:0]
	responseBufs.Put(&b)
}

// encodeResponse is the line the SDK writes for a JSON-RPC response with
// id and a result of head (the SDK's members before content, with its
// opening brace), content (encodeCallResult's, after its room) and tail
// (the SDK's members after structuredContent, with the closing brace):
// written in place into content's room when it fits.
func encodeResponse(id jsonrpc.ID, head, content, tail []byte) ([]byte, error) {
	idb, err := json.Marshal(id.Raw())
	if err != nil {
		return nil, err
	}
	n := len(`{"jsonrpc":"2.0","id":`) + len(idb) + len(`,"result":`) + len(head)
	if n > responseRoom {
		out := make([]byte, 0, n+len(content)-responseRoom+len(tail)+2)
		out = append(out, `{"jsonrpc":"2.0","id":`...)
		out = append(out, idb...)
		out = append(out, `,"result":`...)
		out = append(out, head...)
		out = append(out, content[responseRoom:]...)
		out = append(out, tail...)
		return append(out, "}\n"...), nil
	}
	start := responseRoom - n
	b := append(content[:start], `{"jsonrpc":"2.0","id":`...)
	b = append(b, idb...)
	b = append(b, `,"result":`...)
	_ = append(b, head...)
	out := append(content[start:], tail...)
	return append(out, "}\n"...), nil
}
