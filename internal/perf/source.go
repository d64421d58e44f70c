package perf

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/evidence"
)

// Formats known to the perf toolset.
const (
	FormatText        = "text"
	FormatJSON        = "json"
	FormatJSONL       = "jsonl"
	FormatCSV         = "csv"
	FormatPprof       = "pprof"
	FormatFolded      = "folded"
	FormatGoBench     = "gobench"
	FormatChromeTrace = "chrome-trace"
)

// sourceArg is one element of the sources argument: a path
// source or an evidence source, never both (docs/perf.md, "Analysis tools").
type sourceArg struct {
	Kind             string `json:"kind"`
	Path             string `json:"path,omitempty"`
	Format           string `json:"format,omitempty"`
	Producer         string `json:"producer,omitempty"`
	ExpectedSHA256   string `json:"expected_sha256,omitempty"`
	EvidenceID       string `json:"evidence_id,omitempty"`
	ArtifactSelector string `json:"artifact_selector,omitempty"`
}

// input is a resolved source: where its bytes are, their identity, format.
type input struct {
	index    int
	arg      sourceArg
	file     string // readable path (host path or evidence object)
	sha256   string
	size     int64
	format   string
	producer string
	// evidence origin, when kind is evidence
	evidenceID string
	artifact   string
}

func (in *input) identity() evidence.InputIdentity {
	return evidence.InputIdentity{SHA256: in.sha256, Format: in.format, Producer: in.producer}
}

// describe is the source row reported in data.sources (no host path for
// evidence sources; path sources echo the caller's own path).
func (in *input) describe() map[string]any {
	m := map[string]any{"index": in.index, "kind": in.arg.Kind, "format": in.format, "sha256": in.sha256, "size_bytes": contract.Int(in.size)}
	if in.producer != "" {
		m["producer"] = in.producer
	}
	if in.arg.Kind == "path" {
		m["path"] = in.arg.Path
	} else {
		m["evidence_id"] = in.evidenceID
		m["artifact_selector"] = in.artifact
	}
	return m
}

// replay is the source argument of a next_page: the same kind, with the
// resolved format and (for paths) the digest as expected_sha256.
func (in *input) replay() map[string]any {
	if in.arg.Kind == "path" {
		m := map[string]any{"kind": "path", "path": in.arg.Path, "format": in.format, "expected_sha256": in.sha256}
		if in.arg.Producer != "" {
			m["producer"] = in.arg.Producer
		}
		return m
	}
	return map[string]any{"kind": "evidence", "evidence_id": in.evidenceID, "artifact_selector": in.artifact}
}

// digestCache remembers file digests by (device, inode, size, mtime, ctime)
// so paging a large file hashes it once per process. Any write changes ctime.
type digestCache struct {
	mu sync.Mutex
	m  map[digestKey]string
}

type digestKey struct {
	path                 string
	dev, ino             uint64
	size, mtime, ctimeNS int64
}

func (c *digestCache) get(k digestKey) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *digestCache) put(k digestKey, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) > 4096 {
		c.m = map[digestKey]string{}
	}
	c.m[k] = v
}

// hashFile returns the SHA-256 of path, from the cache when its stat
// identity is unchanged.
func (rt *Runtime) hashFile(ctx context.Context, path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	k, cacheable := keyOf(path, fi)
	if cacheable {
		if v, ok := rt.digests.get(k); ok {
			return v, fi.Size(), nil
		}
	}
	h := sha256.New()
	n, err := io.CopyBuffer(h, ctxReader{ctx, f}, make([]byte, 1<<20))
	if err != nil {
		return "", 0, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if cacheable {
		if fi2, err := os.Stat(path); err == nil {
			if k2, ok := keyOf(path, fi2); ok && k2 == k && n == fi.Size() {
				rt.digests.put(k, sum)
			}
		}
	}
	return sum, n, nil
}

// isPseudoFile reports whether the regular file path (stat fi) is a
// kernel pseudo-file whose size is not its content: on procfs or sysfs
// (statfs f_type, Linux), or of size 0 yet producing bytes when read.
// Such a file is refused before hashing or decoding: reading
// /proc/self/pagemap, for one, yields hundreds of GiB.
func isPseudoFile(path string, fi os.FileInfo) bool {
	if onPseudoFS(path) {
		return true
	}
	if fi.Size() != 0 {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	n, _ := f.Read(b[:])
	if n == 0 {
		return false
	}
	fi2, err := f.Stat()
	return err == nil && fi2.Size() == 0 // data from a file that still reports 0 bytes
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// permissionDenied is the error for a source path this user may not read
// (open or stat failed with EACCES/EPERM): PERMISSION_DENIED, not
// retryable, since repeating the call cannot change the file's mode.
func permissionDenied(field string, i int) *contract.Error {
	e := fieldErr(contract.CodePermissionDenied, field, "source %d cannot be read: permission denied (check the file's mode and its directories' search permission)", i)
	e.Retryable = false
	return e
}

func fieldErr(code contract.Code, field, format string, args ...any) *contract.Error {
	e := contract.Errorf(code, format, args...)
	e.Field = field
	return e
}

// sourceError returns err with the field /sources/index when it is a
// contract error of a code a source's content or file causes
// (LIMIT_EXCEEDED, DECODE_FAILED, INPUT_CHANGED) that names no field yet;
// any other error is returned unchanged. err is copied, never changed in
// place.
func sourceError(err error, index int) error {
	var ce *contract.Error
	if !errors.As(err, &ce) || ce.Field != "" {
		return err
	}
	switch ce.Code {
	case contract.CodeLimitExceeded, contract.CodeDecodeFailed, contract.CodeInputChanged:
		c := *ce
		c.Field = "/sources/" + itoa(index)
		return &c
	}
	return err
}

// resolve turns the sources argument into inputs: paths are checked and
// hashed, evidence records loaded and verified, formats declared or
// detected and checked against the operation (before any decoding).
func (rt *Runtime) resolve(ctx context.Context, op *Operation, raw []sourceArg, lim Limits, resuming bool) ([]*input, error) {
	var out []*input
	for i, s := range raw {
		field := "/sources/" + itoa(i)
		in := &input{index: i, arg: s, producer: s.Producer}
		switch s.Kind {
		case "path":
			if !filepath.IsAbs(s.Path) {
				return nil, fieldErr(contract.CodeInvalidArgument, field+"/path", "source %d: path must be absolute", i)
			}
			p := filepath.Clean(s.Path)
			fi, err := os.Stat(p)
			if errors.Is(err, fs.ErrPermission) {
				return nil, permissionDenied(field+"/path", i)
			}
			if err != nil {
				if resuming || s.ExpectedSHA256 != "" {
					return nil, fieldErr(contract.CodeInputChanged, field+"/path", "source %d no longer exists or cannot be read; start a fresh analysis", i)
				}
				return nil, fieldErr(contract.CodeInvalidArgument, field+"/path", "source %d does not exist or cannot be read (missing, cyclic link, or permission denied)", i)
			}
			if !fi.Mode().IsRegular() {
				return nil, fieldErr(contract.CodeInvalidArgument, field+"/path", "source %d is not a regular file", i)
			}
			if isPseudoFile(p, fi) {
				return nil, fieldErr(contract.CodeInvalidArgument, field+"/path", "source %d is a /proc or /sys pseudo-file; copy it to a regular file first", i)
			}
			if fi.Size() > lim.MaxInputBytes {
				return nil, fieldErr(contract.CodeLimitExceeded, field, "source %d is %d bytes, above limits.max_input_bytes %d", i, fi.Size(), lim.MaxInputBytes).
					WithDetail("size_bytes", contract.Int(fi.Size())).WithDetail("max_input_bytes", contract.Int(lim.MaxInputBytes))
			}
			in.file = p
			in.format = s.Format
		case "evidence":
			st, err := rt.Store()
			if err != nil {
				return nil, err
			}
			m, err := st.Get(s.EvidenceID)
			if err != nil {
				if ce := contract.AsError(err); ce.Field == "" {
					ce.Field = field + "/evidence_id"
				}
				return nil, err
			}
			sel := s.ArtifactSelector
			if sel == "" {
				srcs := m.AnalysisSources()
				if len(srcs) != 1 {
					names := []string{}
					for _, a := range srcs {
						names = append(names, a.Name)
					}
					return nil, fieldErr(contract.CodeInvalidArgument, field+"/artifact_selector", "evidence %s has %d analysis sources; name one with artifact_selector", m.EvidenceID, len(srcs)).WithDetail("artifact_selectors", names)
				}
				sel = srcs[0].Name
			}
			path, a, err := st.ArtifactPath(m, sel)
			if err != nil {
				return nil, err
			}
			if a.Size > lim.MaxInputBytes {
				return nil, fieldErr(contract.CodeLimitExceeded, field, "source %d is %d bytes, above limits.max_input_bytes %d", i, a.Size, lim.MaxInputBytes)
			}
			in.file, in.evidenceID, in.artifact = path, m.EvidenceID, sel
			in.format, in.producer = a.Format, a.Producer
			if !contains(op.Formats, in.format) {
				return nil, fieldErr(contract.CodeUnsupportedFormat, field, "evidence artifact format %q is not accepted by %s", in.format, op.Name).WithDetail("accepted_formats", op.Formats)
			}
			in.sha256 = a.SHA256
		default:
			return nil, fieldErr(contract.CodeInvalidArgument, field+"/kind", "source kind must be path or evidence")
		}
		out = append(out, in)
	}
	// Digests after every path passed its cheap checks.
	for _, in := range out {
		sum, n, err := rt.hashFile(ctx, in.file)
		if err != nil {
			if ce := contract.AsError(err); ce.Code == contract.CodeCancelled || ce.Code == contract.CodeTimeout {
				return nil, ce
			}
			if errors.Is(err, fs.ErrPermission) {
				return nil, permissionDenied("/sources/"+itoa(in.index)+"/path", in.index)
			}
			return nil, fieldErr(contract.CodeInputChanged, "/sources/"+itoa(in.index), "source %d could not be read completely", in.index)
		}
		if in.arg.Kind == "evidence" {
			if sum != in.sha256 {
				return nil, contract.Errorf(contract.CodeRepositoryCorrupt, "artifact %q of %s does not match its recorded sha256", in.artifact, in.evidenceID).WithDetail("evidence_id", in.evidenceID)
			}
		} else {
			in.sha256, in.size = sum, n
			if in.arg.ExpectedSHA256 != "" && in.arg.ExpectedSHA256 != sum {
				return nil, fieldErr(contract.CodeInputChanged, "/sources/"+itoa(in.index), "source %d changed: its sha256 differs from expected_sha256; start a fresh analysis", in.index).
					WithDetail("expected_sha256", in.arg.ExpectedSHA256).WithDetail("actual_sha256", sum)
			}
		}
		in.size = n
		if in.format == "" {
			f, err := detect(in.file, op.Formats)
			if err != nil {
				err.Field = "/sources/" + itoa(in.index) + "/format"
				return nil, err
			}
			in.format = f
		}
	}
	return out, nil
}

// detect picks the format of path among accepted: the only accepted format,
// else by file extension, else by content sniffing of the first 4 KiB. An
// ambiguous file is UNSUPPORTED_FORMAT listing the accepted formats.
func detect(path string, accepted []string) (string, *contract.Error) {
	if len(accepted) == 1 {
		return accepted[0], nil
	}
	ext := strings.ToLower(filepath.Ext(strings.TrimSuffix(path, ".gz")))
	byExt := map[string]string{
		".txt": FormatText, ".log": FormatText, ".out": FormatText,
		".json": FormatJSON, ".jsonl": FormatJSONL, ".ndjson": FormatJSONL,
		".csv": FormatCSV, ".pprof": FormatPprof, ".pb": FormatPprof, ".prof": FormatPprof,
		".folded": FormatFolded, ".collapsed": FormatFolded,
	}
	if f, ok := byExt[ext]; ok && contains(accepted, f) {
		return f, nil
	}
	head := make([]byte, 4096)
	fh, err := os.Open(path)
	if err == nil {
		n, _ := io.ReadFull(fh, head)
		head = head[:n]
		fh.Close()
	}
	var cands []string
	for _, f := range accepted {
		if sniff(f, head) {
			cands = append(cands, f)
		}
	}
	// Text is the reading of last resort for preview: every file has one.
	if len(cands) == 0 && contains(accepted, FormatText) {
		return FormatText, nil
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	return "", contract.Errorf(contract.CodeUnsupportedFormat, "the source format is ambiguous or not one this operation reads; declare format").WithDetail("accepted_formats", accepted)
}

func sniff(format string, head []byte) bool {
	if len(head) >= 2 && (head[0] == 0xff && head[1] == 0xfe || head[0] == 0xfe && head[1] == 0xff) {
		// UTF-16 with a byte-order mark: sniff the decoded text.
		if dec, err := io.ReadAll(io.LimitReader(foldedDecoder(bytes.NewReader(head)), 8192)); err == nil {
			head = dec
		}
	}
	t := bytes.TrimLeft(head, " \t\r\n\xef\xbb\xbf")
	switch format {
	case FormatPprof:
		if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
			return true
		}
		// Legacy formats profile.ParseData reads.
		return strings.HasPrefix(recognizedProfile(head), "legacy")
	case FormatFolded:
		// Detection follows the reader (decodeFolded): lines it skips
		// (blank lines, "#" or "//" comments, anything that is not
		// "frames COUNT") are skipped here too, and the first line it
		// reads as a stack must have two or more frames ("a;b 3").
		rest := t
		for len(rest) > 0 {
			var line []byte
			line, rest, _ = bytes.Cut(rest, []byte("\n"))
			line = bytes.TrimRight(line, "\r")
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			stack, _, why := splitFoldedLine(line)
			if why != "" || len(stack) == 0 || bytes.HasPrefix(stack, []byte(";")) || bytes.HasSuffix(stack, []byte(";")) || bytes.Contains(stack, []byte(";;")) {
				continue
			}
			return bytes.IndexByte(stack, ';') >= 0
		}
		return false
	case FormatChromeTrace:
		return len(t) > 0 && (t[0] == '[' || t[0] == '{') && bytes.Contains(head, []byte(`"ph"`))
	case FormatGoBench:
		return bytes.Contains(head, []byte("\nBenchmark")) || bytes.HasPrefix(t, []byte("Benchmark"))
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func itoa(i int) string { return contract.Int(int64(i)) }

// decodeSources parses the sources argument.
func decodeSources(raw json.RawMessage) ([]sourceArg, error) {
	var s []sourceArg
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, contract.Errorf(contract.CodeInvalidArgument, "sources do not match the source union")
	}
	return s, nil
}
