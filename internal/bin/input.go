package bin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

// MaxInputBytes bounds the file a bin tool reads into memory (1 GiB). The
// whole file is hashed and sections are digested, so the bound is on
// resident memory; larger files fail with LIMIT_EXCEEDED before any read.
const MaxInputBytes int64 = 1 << 30

// File is one caller-supplied local file read whole: its verbatim path, its
// identity (size, modification time, SHA-256 of the bytes) and its bytes.
type File struct {
	// CallerPath is the path exactly as the caller spelled it.
	CallerPath string
	// Size is the number of bytes read.
	Size int64
	// ModTime is the file's modification time observed before the read.
	ModTime time.Time
	// Data holds the file bytes.
	Data []byte

	// sum is the hex SHA-256 of the whole file, computed on first use
	// (once) by SHA256.
	sum  string
	once sync.Once
	// unmap releases Data when it is a read-only mapping of the file
	// (ReadFileMapped); nil when Data is an ordinary slice.
	unmap func()
	// release unmaps a mapped Data without restoring the fault setting
	// of the goroutine that opened the File, which prevFault holds
	// (kept inspections, keptinspect.go); nil otherwise.
	release   func()
	prevFault bool
	// whole is the whole file when Data is one slice of a universal
	// file (selectSlice); nil otherwise.
	whole []byte
	// state is the file's state as opened (fileState), under which its
	// digest may be kept (digests); zero for bytes not read from a file.
	state fileState
	// kept is the kept inspection whose bytes Data is (keptinspect.go);
	// nil otherwise.
	kept *keptInspection
}

// bytes returns the whole file's bytes (what SHA256 identifies).
func (f *File) bytes() []byte {
	if f.whole != nil {
		return f.whole
	}
	return f.Data
}

// SHA256 returns the lowercase hex SHA-256 of the whole file's bytes,
// computing it on first use: a tool that never asks for the file digest
// never reads every page of the file.
func (f *File) SHA256() string {
	f.once.Do(func() {
		if s, ok := cachedDigest(f.state); ok {
			f.sum = s
			return
		}
		defer func() { keepDigest(f.state, f.sum) }()
		h := sha256.New()
		b := f.bytes()
		for off := 0; off < len(b); off += digestChunk {
			c := b[off:min(off+digestChunk, len(b))]
			h.Write(c)
			releasePages(c)
		}
		f.sum = hex.EncodeToString(h.Sum(nil))
	})
	return f.sum
}

// Close releases the file's mapping (ReadFileMapped); Data and every
// slice of it must not be used afterwards. It is a no-op for a File read
// into memory.
func (f *File) Close() {
	if f.unmap != nil {
		f.unmap()
		f.unmap = nil
	}
}

// NewFile returns a File for bytes already in memory (tests, fuzzing).
func NewFile(path string, data []byte) *File {
	return &File{CallerPath: path, Size: int64(len(data)), Data: data}
}

// Identity is the JSON projection of a File's identity. SHA256 is the
// whole file's digest; it is left out, and Digests is "not_requested",
// when the call did not ask for digests (inspect_binary without digests).
type Identity struct {
	CallerInputPath string              `json:"caller_input_path"`
	Size            string              `json:"size"`
	SHA256          string              `json:"sha256,omitempty"`
	Digests         string              `json:"digests,omitempty"`
	ModifiedAt      *contract.Timestamp `json:"modified_at,omitempty"`
}

// Digest states of Identity.Digests and Inspection.Digests.
const (
	// DigestsComputed: whole-file and per-section sha256 and entropy are
	// present.
	DigestsComputed = "computed"
	// DigestsNotRequested: the call did not ask for digests, so none were
	// computed; their absence says nothing about the file.
	DigestsNotRequested = "not_requested"
)

// Identity returns f's identity projection, with the whole-file SHA-256.
func (f *File) Identity() Identity {
	return Identity{CallerInputPath: f.CallerPath, Size: contract.Int(f.Size), SHA256: f.SHA256(), ModifiedAt: contract.TS(f.ModTime)}
}

// identityNoDigest is Identity without computing the file digest;
// Digests says it was not requested.
func (f *File) identityNoDigest() Identity {
	return Identity{CallerInputPath: f.CallerPath, Size: contract.Int(f.Size), Digests: DigestsNotRequested, ModifiedAt: contract.TS(f.ModTime)}
}

// readChunk is the read size between cancellation checks in ReadFile.
const readChunk = 4 << 20

// ReadFile reads the regular file at path (at most limit bytes) and returns
// it with its identity. The file type is checked before any blocking
// operation: path is stat'ed first, then opened non-blocking (O_NONBLOCK on
// Unix) and fstat'ed, so a FIFO, socket or device is rejected at once
// instead of waiting for a writer. The read is done in 4 MiB chunks and
// stops when ctx is done. Errors are *contract.Error: INVALID_ARGUMENT
// (field given by field) when the path does not exist or is not a regular
// file or is a kernel pseudo-file (procfs, sysfs, ...: details
// file_system), PERMISSION_DENIED, LIMIT_EXCEEDED when the file is larger than
// limit, INPUT_CHANGED when the file was replaced or its size or
// modification time changed during the read, CANCELLED (ctx's code via
// contract.AsError) when ctx ends. Messages never echo the path.
func ReadFile(ctx context.Context, path, field string, limit int64) (*File, error) {
	return readFile(ctx, path, field, limit, false)
}

// ReadFileMapped is ReadFile, except that where the platform allows it the
// file is mapped read-only (mmap, PROT_READ, MAP_SHARED) instead of read:
// only the pages a parser touches are read, so time and resident memory
// follow the metadata read, not the file size. The caller must Close the
// File once no slice of Data is in use. While the File is open, a fault on
// a page the file no longer backs (the file was truncated under the
// mapping) panics in the faulting goroutine instead of killing the process
// (debug.SetPanicOnFault); the tool runtime reports it as an error. When
// mapping fails the file is read as by ReadFile.
func ReadFileMapped(ctx context.Context, path, field string, limit int64) (*File, error) {
	return readFile(ctx, path, field, limit, true)
}

func readFile(ctx context.Context, path, field string, limit int64, mapped bool) (*File, error) {
	notRegular := func() error {
		e := contract.Errorf(contract.CodeInvalidArgument, "the file named by %s is not a regular file", field)
		e.Field = field
		return e
	}
	pre, err := os.Stat(path)
	if err != nil {
		return nil, openError(err, field)
	}
	if !pre.Mode().IsRegular() {
		return nil, notRegular()
	}
	fh, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, openError(err, field)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, openError(err, field)
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular()
	}
	if fs := pseudoFS(fh); fs != "" {
		e := contract.Errorf(contract.CodeInvalidArgument, "the file named by %s is a kernel pseudo-file (%s) whose size is not its content; copy it to a regular file first", field, fs)
		e.Field = field
		return nil, e.WithDetail("file_system", fs)
	}
	if !os.SameFile(pre, st) {
		return nil, contract.Errorf(contract.CodeInputChanged, "the file named by %s was replaced while it was opened; retry when it is stable", field)
	}
	if st.Size() > limit {
		return nil, contract.Errorf(contract.CodeLimitExceeded, "the file named by %s is %d bytes; bin tools read at most %d bytes", field, st.Size(), limit).
			WithDetail("limit_bytes", contract.Int(limit)).WithDetail("size_bytes", contract.Int(st.Size()))
	}
	if mapped && st.Size() > 0 {
		if data, release, ok := mapFile(fh, st.Size()); ok {
			// A fault on a page the file no longer backs panics in this
			// goroutine, until the File is closed.
			prev := debug.SetPanicOnFault(true)
			unmap := func() {
				debug.SetPanicOnFault(prev)
				release()
			}
			st2, err := fh.Stat()
			if err != nil || st2.Size() != st.Size() || !st2.ModTime().Equal(st.ModTime()) {
				unmap()
				return nil, contract.Errorf(contract.CodeInputChanged, "the file named by %s changed while it was opened; retry when it is stable", field)
			}
			return &File{CallerPath: path, Size: st.Size(), ModTime: st.ModTime(), Data: data, unmap: unmap, release: release, prevFault: prev, state: stateOf(st2)}, nil
		}
	}
	data := make([]byte, st.Size())
	n := 0
	for n < len(data) {
		if err := ctx.Err(); err != nil {
			return nil, contract.AsError(err)
		}
		m, err := io.ReadFull(fh, data[n:min(n+readChunk, len(data))])
		n += m
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				break
			}
			return nil, contract.Errorf(contract.CodeCollectionFailed, "reading the file named by %s failed", field)
		}
	}
	data = data[:n]
	st2, err := fh.Stat()
	if err != nil || st2.Size() != st.Size() || !st2.ModTime().Equal(st.ModTime()) || int64(n) != st.Size() {
		return nil, contract.Errorf(contract.CodeInputChanged, "the file named by %s changed while it was read; retry when it is stable", field)
	}
	f := &File{CallerPath: path, Size: int64(n), ModTime: st.ModTime(), Data: data}
	if s1, s2 := stateOf(st), stateOf(st2); s1 == s2 {
		f.state = s1
	}
	return f, nil
}

// notExistMessage is the message of the INVALID_ARGUMENT for a file that
// does not exist (%s is the argument's JSON Pointer); vanished recognises it.
const notExistMessage = "the file named by %s does not exist"

// vanished turns the INVALID_ARGUMENT of a file that does not exist into
// INPUT_CHANGED when the call resumes a listing (cursor set): the file
// existed when the cursor was issued, so it vanished between the calls.
// Any other error is returned unchanged.
func vanished(err error, cursor bool) error {
	e, ok := err.(*contract.Error)
	if !cursor || !ok || e.Code != contract.CodeInvalidArgument || e.Field == "" || e.Message != fmt.Sprintf(notExistMessage, e.Field) {
		return err
	}
	c := contract.Errorf(contract.CodeInputChanged, "the file named by %s vanished since the cursor was issued (it no longer exists); start a fresh analysis without a cursor", e.Field)
	c.Field = e.Field
	return c
}

func openError(err error, field string) error {
	var e *contract.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		e = contract.Errorf(contract.CodeInvalidArgument, notExistMessage, field)
		e.Field = field
	case errors.Is(err, fs.ErrPermission):
		e = contract.Errorf(contract.CodePermissionDenied, "the file named by %s cannot be opened: permission denied", field)
		e.Field = field
	default:
		e = contract.Errorf(contract.CodeInvalidArgument, "the file named by %s cannot be opened", field)
		e.Field = field
	}
	return e
}
