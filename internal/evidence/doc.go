// Package evidence is inquest's immutable evidence store (seed 003 "storage
// and evidence"; DESIGN.md "internal/evidence"). Any toolset (perf, bin) that
// must keep native artifacts or large results beyond one process publishes
// them here; there is one store per user.
//
// # Location
//
// DefaultDir returns $INQUEST_DATA_DIR when it is set and non-empty, else
// $XDG_DATA_HOME/inquest/evidence, else ~/.local/share/inquest/evidence.
// Open(dir) creates the directory (0700) when missing. OpenDefault is
// Open(DefaultDir()).
//
// # Layout (format version 1)
//
//	DIR/objects/sha256/AB/ABCDEF…   artifact bytes, named by their SHA-256
//	DIR/manifests/ev-….json          one immutable manifest per record
//	DIR/index.sqlite                 query index (modernc.org/sqlite); rebuilt
//	                                 from manifests/ when missing
//	DIR/cursor.key                   32-byte HMAC key sealing cursors and
//	                                 continuations, so they survive restarts
//	DIR/tmp/                         staging for atomic publication
//
// Every file is published atomically: written to DIR/tmp, fsynced, renamed
// into place, and the target directory fsynced. Artifacts are deduplicated
// by digest. A manifest is never rewritten.
//
// # Publishing
//
//	st, err := evidence.OpenDefault()
//	defer st.Close()
//	m, err := st.Publish(ctx, evidence.Record{
//		Toolset:   "bin",
//		Operation: "disassemble",
//		Artifacts: []evidence.ArtifactInput{
//			{Name: "binary", Role: evidence.RoleAnalysisSource, Format: "elf", Path: "/abs/prog"},
//			{Name: "listing", Role: evidence.RoleOutput, Format: "text", Data: listing},
//		},
//		Arguments: map[string]any{"symbol": "main.main"},
//		Coverage:  map[string]any{"complete": true},
//		Status:    evidence.StatusComplete,
//	})
//	// m.EvidenceID is "ev-" + 26 base32 characters.
//
// # Looking up and querying
//
// Get(id) returns the validated manifest; OpenArtifact(m, name) opens one
// artifact's bytes (size checked; callers hash what they read and compare
// with Artifact.SHA256, or call VerifyArtifact). Query(ctx, Filter, page
// size, cursor) pages manifest summaries newest first; its cursor is bound
// to the inventory snapshot (the highest record sequence at the first page)
// and to the filters and page size.
//
// # Errors
//
// Every error returned by this package is a *contract.Error:
// EVIDENCE_NOT_FOUND for an unknown id or artifact name, REPOSITORY_CORRUPT
// for a manifest or artifact that fails validation (bad JSON, wrong id,
// digest or size mismatch, missing object), INPUT_CHANGED when an artifact
// read from a path does not match its ExpectedSHA256, CURSOR_INVALID for a
// foreign or stale cursor, INVALID_ARGUMENT for malformed ids and records,
// INTERNAL_ERROR (retryable) for other I/O failures. Messages never contain
// host paths.
//
// # Continuations
//
// Continuations (see continuation.go) are the reusable "next_page"
// mechanism: an opaque token sealed with the store's key, bound to the tool
// name, the ordered input identities (digest, format, producer), and every
// argument except "sources" and "continuation". Any toolset can use it:
// Issue a token with the position of the next row, put it into
// next_page.arguments.continuation, and Resume it on the next call; a
// changed input is INPUT_CHANGED, a changed argument CURSOR_INVALID.
package evidence
