package host

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"sync"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// refCodec issues opaque process_ref strings bound to this host instance
// and to one full process lifetime (PID + start ticks; the boot is implied
// by the instance). Layout before base64url: pid (4 bytes LE), start ticks
// (8 bytes LE), MAC (12 bytes) over instance id + those 12 bytes.
//
// A process_ref is a pure function of the lifetime, so Ref remembers the
// refs it issued (at most maxCachedRefs; the memo is emptied when full):
// listings name every process and its parent on each call, and the MAC is
// most of a row's cost otherwise.
type refCodec struct {
	instance string
	key      []byte

	mu   sync.Mutex
	memo map[sample.Identity]string
}

// maxCachedRefs bounds refCodec's memo of issued refs (a few times the
// processes of a busy machine).
const maxCachedRefs = 16384

func newRefCodec(instance string) *refCodec {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("host: no entropy: " + err.Error())
	}
	return &refCodec{instance: instance, key: k, memo: map[sample.Identity]string{}}
}

const refPrefix = "pr_"

func (c *refCodec) mac(b []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(c.instance))
	m.Write(b)
	return m.Sum(nil)[:12]
}

// Ref encodes id as a process_ref.
func (c *refCodec) Ref(id sample.Identity) string {
	c.mu.Lock()
	ref, ok := c.memo[id]
	c.mu.Unlock()
	if ok {
		return ref
	}
	b := make([]byte, 12, 24)
	binary.LittleEndian.PutUint32(b, uint32(id.PID))
	binary.LittleEndian.PutUint64(b[4:], id.StartTicks)
	b = append(b, c.mac(b)...)
	ref = refPrefix + base64.RawURLEncoding.EncodeToString(b)
	c.mu.Lock()
	if len(c.memo) >= maxCachedRefs {
		clear(c.memo)
	}
	c.memo[id] = ref
	c.mu.Unlock()
	return ref
}

// Parse decodes a process_ref. A ref from another instance (a restarted
// host) or a forged/garbled one is REFERENCE_INVALID; the ref is never echoed.
func (c *refCodec) Parse(ref string) (sample.Identity, error) {
	bad := contract.Errorf(contract.CodeReferenceInvalid, "process_ref was not issued by this host instance: it is malformed, or the host restarted since it was issued; list processes again for fresh references")
	bad.NextAction = &contract.Action{Tool: "list_processes", Arguments: map[string]any{}}
	if len(ref) < len(refPrefix) || ref[:len(refPrefix)] != refPrefix || len(ref) > 64 {
		return sample.Identity{}, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(ref[len(refPrefix):])
	if err != nil || len(b) != 24 || !hmac.Equal(b[12:], c.mac(b[:12])) {
		return sample.Identity{}, bad
	}
	return sample.Identity{PID: int32(binary.LittleEndian.Uint32(b)), StartTicks: binary.LittleEndian.Uint64(b[4:])}, nil
}

// Ref returns the process_ref of id for this host.
func (h *Host) Ref(id sample.Identity) string { return h.refs.Ref(id) }

// ParseRef decodes a process_ref issued by this host.
func (h *Host) ParseRef(ref string) (sample.Identity, error) { return h.refs.Parse(ref) }

// ResolveLive returns the process of ref in the latest snapshot after
// checking that the same lifetime is still running now (sample.Verify). A
// lifetime that is gone, a zombie, or a reused PID is PROCESS_EXITED; the
// values of another process are never returned.
func (h *Host) ResolveLive(ref string) (*sample.Process, *sample.Snapshot, error) {
	id, err := h.refs.Parse(ref)
	if err != nil {
		return nil, nil, err
	}
	snap := h.sampler.Latest()
	p := snap.Lookup(id)
	exited := contract.Errorf(contract.CodeProcessExited, "the process of this process_ref has exited; its retained history stays readable with get_history")
	exited.NextAction = &contract.Action{Tool: "get_history", Arguments: map[string]any{
		"target": map[string]any{"process_ref": ref}, "metric_ids": []string{"cpu_percent", "rss_bytes"}, "mode": "summary"}}
	if p == nil {
		return nil, nil, exited
	}
	switch sample.Verify(id) {
	case sample.Alive:
		return p, snap, nil
	case sample.Unverifiable:
		return nil, nil, contract.Errorf(contract.CodeIdentityUnverifiable, "the process's start time cannot be read now, so its identity cannot be verified")
	}
	return nil, nil, exited
}
