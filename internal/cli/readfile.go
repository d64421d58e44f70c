package cli

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// maxOptionFileBytes bounds a file named by a CLI option (--experiment):
// such files are small JSON documents; a larger one is refused unread.
const maxOptionFileBytes = 16 << 20

// readOptionFile reads the regular file path named by a CLI option (flag,
// e.g. "--experiment") whole. It opens the file non-blocking and fstats it
// before reading a byte, so a FIFO, socket, device or directory is refused
// at once ("--experiment: x is not a regular file (a FIFO)") instead of
// waiting forever for a writer; a file above maxOptionFileBytes is refused
// too. Errors name the flag and the path.
func readOptionFile(flag, path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|optionFileOpenFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if m := st.Mode(); !m.IsRegular() {
		if m.IsDir() {
			return nil, fmt.Errorf("%s: %s is a directory; give a JSON file", flag, path)
		}
		return nil, fmt.Errorf("%s: %s is not a regular file (%s); give a JSON file", flag, path, fileTypeName(m))
	}
	if st.Size() > maxOptionFileBytes {
		return nil, fmt.Errorf("%s: %s is %d bytes, above the %d-byte limit for an option file", flag, path, st.Size(), maxOptionFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxOptionFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if len(b) > maxOptionFileBytes {
		return nil, fmt.Errorf("%s: %s grew above the %d-byte limit for an option file", flag, path, maxOptionFileBytes)
	}
	return b, nil
}

// fileTypeName names a non-regular file type for messages.
func fileTypeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "type " + m.Type().String()
}
