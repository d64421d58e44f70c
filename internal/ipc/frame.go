package ipc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxFrame is the largest frame payload in bytes: 4 MiB (docs/host.md,
// "Protocol"). The 4-byte length prefix is not counted.
const MaxFrame = 4 << 20

// Frame errors. ReadFrame wraps them with the offending length; all of them
// are protocol violations that close the connection: zero-length,
// oversized, malformed and invalid-UTF-8 frames are rejected before
// dispatch (docs/host.md, "Protocol").
var (
	ErrFrameEmpty    = errors.New("ipc: zero-length frame")
	ErrFrameTooLarge = errors.New("ipc: frame larger than 4 MiB")
	ErrFrameUTF8     = errors.New("ipc: frame is not valid UTF-8")
	ErrFrameJSON     = errors.New("ipc: frame is not one JSON object")
)

// ReadFrame reads one frame from r: a 4-byte unsigned little-endian payload
// length, then exactly that many bytes, which must be valid UTF-8 holding
// exactly one JSON object. It never allocates more than MaxFrame for an
// announced length, and handles fragmented reads (io.ReadFull) and coalesced
// frames (it reads only the announced bytes, leaving the next frame in r).
// io.EOF is returned only when r ends cleanly before a frame starts; a frame
// cut short is io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n == 0 {
		return nil, ErrFrameEmpty
	}
	if n > MaxFrame {
		return nil, fmt.Errorf("%w (announced %d bytes)", ErrFrameTooLarge, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if err := checkPayload(buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// checkPayload enforces UTF-8 and "one JSON object".
func checkPayload(b []byte) error {
	if !utf8.Valid(b) {
		return ErrFrameUTF8
	}
	if !json.Valid(b) {
		return ErrFrameJSON
	}
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return nil
		}
		return ErrFrameJSON
	}
	return ErrFrameJSON
}

// AppendFrame appends the frame of payload (length prefix + payload) to dst.
// payload must already be a JSON object; an empty or oversized payload is
// an error (the sender never emits what the reader would reject).
func AppendFrame(dst, payload []byte) ([]byte, error) {
	if len(payload) == 0 {
		return dst, ErrFrameEmpty
	}
	if len(payload) > MaxFrame {
		return dst, ErrFrameTooLarge
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...), nil
}

// WriteFrame writes payload as one frame with a single Write call, so one
// writer per direction (the caller's lock) keeps frames whole.
func WriteFrame(w io.Writer, payload []byte) error {
	b, err := AppendFrame(make([]byte, 0, 4+len(payload)), payload)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
