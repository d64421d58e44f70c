package bin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
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

	// sum is the hex SHA-256 of Data, computed concurrently with the
	// caller's parsing and ready when done is closed.
	sum  string
	done chan struct{}
	// whole is the whole file when Data is one slice of a universal
	// file (selectSlice); nil otherwise.
	whole []byte
}

// bytes returns the whole file's bytes (what SHA256 identifies).
func (f *File) bytes() []byte {
	if f.whole != nil {
		return f.whole
	}
	return f.Data
}

// SHA256 returns the lowercase hex SHA-256 of Data, waiting for the
// concurrent hash started by ReadFile.
func (f *File) SHA256() string {
	if f.done != nil {
		<-f.done
	}
	return f.sum
}

// NewFile returns a File for bytes already in memory (tests, fuzzing).
func NewFile(path string, data []byte) *File {
	f := &File{CallerPath: path, Size: int64(len(data)), Data: data}
	f.hash()
	return f
}

func (f *File) hash() {
	f.done = make(chan struct{})
	go func() {
		sum := sha256.Sum256(f.Data)
		f.sum = hex.EncodeToString(sum[:])
		close(f.done)
	}()
}

// Identity is the JSON projection of a File's identity.
type Identity struct {
	CallerInputPath string              `json:"caller_input_path"`
	Size            string              `json:"size"`
	SHA256          string              `json:"sha256"`
	ModifiedAt      *contract.Timestamp `json:"modified_at,omitempty"`
}

// Identity returns f's identity projection.
func (f *File) Identity() Identity {
	return Identity{CallerInputPath: f.CallerPath, Size: contract.Int(f.Size), SHA256: f.SHA256(), ModifiedAt: contract.TS(f.ModTime)}
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
	f.hash()
	return f, nil
}

func openError(err error, field string) error {
	var e *contract.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		e = contract.Errorf(contract.CodeInvalidArgument, "the file named by %s does not exist", field)
		e.Field = field
	case errors.Is(err, fs.ErrPermission):
		e = contract.Errorf(contract.CodePermissionDenied, "the file named by %s cannot be opened: permission denied", field)
	default:
		e = contract.Errorf(contract.CodeInvalidArgument, "the file named by %s cannot be opened", field)
		e.Field = field
	}
	return e
}
