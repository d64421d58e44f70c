// Package evidence is inquest's immutable evidence store
// (docs/evidence.md). Any toolset (perf, bin) that
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
//	DIR/index.sqlite                 query index (modernc.org/sqlite, 0600);
//	                                 rebuilt from manifests/ when missing
//	DIR/cursor.key                   32-byte HMAC key sealing cursors and
//	                                 continuations, so they survive restarts
//	DIR/format.json                  {"format_version":1}; another version
//	                                 is REPOSITORY_FORMAT_UNSUPPORTED
//	DIR/tmp/                         staging for atomic publication and
//	                                 publishes' pending markers (sweep.go)
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
// # Invariants
//
// docs/evidence.md states them for users: manifests are the truth and the
// index is derived; a record is published only when its manifest and its
// index entry both are (a failed index commit withdraws the manifest; a
// manifest left unindexed by a killed publisher is indexed by the next
// Open and by the first page of every Query); a read never sets an index
// aside; only an index SQLite reports corrupt is rebuilt from the
// manifests (built in a temp file first, then swapped in, the damaged file
// kept as index.sqlite.corrupt-TIME-RAND, mode 0600); every manifest file
// is indexed, an unreadable or inconsistent one as a row without facts
// (manifest_sha256 "") that Query lists with a problem, so a listing is
// the same before and after a rebuild; temp files are flock(2)-held by
// their writers and those of dead writers are swept on Open; every file is
// opened relative to a verified directory handle (os.Root) and never
// through a symbolic link.
//
// # Errors
//
// Every error returned by this package is a *contract.Error:
// EVIDENCE_NOT_FOUND for an unknown id or artifact name,
// REPOSITORY_FORMAT_UNSUPPORTED for a store or manifest of a newer format
// version, REPOSITORY_CORRUPT
// for a manifest or artifact that fails validation (bad JSON, wrong id,
// digest or size mismatch, missing object, a symbolic link) and for an
// index that can be neither opened nor rebuilt (details.rebuild),
// INPUT_CHANGED when an artifact read from a path does not match its
// ExpectedSHA256, CURSOR_INVALID for a foreign or stale cursor,
// INVALID_ARGUMENT for malformed ids and records, RESOURCE_LIMIT (not
// retryable, details.directory) when the disk is full, PERMISSION_DENIED
// (not retryable) for a store directory that is a symbolic link, owned by
// another user or writable by group or others, REPOSITORY_IO_FAILED
// (retryable, details.cause) for other I/O failures.
//
// # Continuations
//
// Continuations (see continuation.go) are the reusable next-page
// mechanism: an opaque token sealed with the store's key, bound to the tool
// name, the ordered input identities (digest, format, producer), and every
// argument except "sources" and "continuation". Any toolset can use it:
// Issue a token with the position of the next row, put it into
// next_action.arguments.continuation, and Resume it on the next call; a
// changed input is INPUT_CHANGED, a changed argument CURSOR_INVALID.
package evidence
