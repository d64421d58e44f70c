package tool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"
)

// Clip identifies a string too long to state whole in a row (see
// ClipString): Bytes is its length in bytes and SHA256 the lowercase hex
// SHA-256 of those bytes; the row holds its first bytes. The zero Clip
// (Truncated false) means the string is whole.
type Clip struct {
	Truncated bool
	Bytes     int
	SHA256    string
}

// ClipString returns s whole when its JSON string costs at most share
// bytes (RowCost of the encoded string); otherwise its longest prefix, cut
// at a UTF-8 boundary, that does, with the Clip facts of the whole s.
// Rows state a clipped field f as f (the prefix), f_truncated (true),
// f_bytes and f_sha256, the way HAR group URLs are stated.
func ClipString(s string, share int) (string, Clip) {
	cost := func(s string) int { b, _ := json.Marshal(s); return RowCost(b) }
	if cost(s) <= share {
		return s, Clip{}
	}
	lo, hi := 0, len(s)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if cost(s[:mid]) <= share {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for lo > 0 && !utf8.RuneStart(s[lo]) {
		lo--
	}
	sum := sha256.Sum256([]byte(s))
	return s[:lo], Clip{Truncated: true, Bytes: len(s), SHA256: hex.EncodeToString(sum[:])}
}
