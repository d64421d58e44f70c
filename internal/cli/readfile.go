package cli

import (
	"errors"
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
// too. Errors are INVALID_ARGUMENT (badFlag) naming the flag and the path.
func readOptionFile(flag, path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|optionFileOpenFlags, 0)
	if err != nil {
		return nil, badFlag(flag, "%s: %s", flag, pathErrText(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, badFlag(flag, "%s: %s", flag, pathErrText(err))
	}
	if m := st.Mode(); !m.IsRegular() {
		if m.IsDir() {
			return nil, badFlag(flag, "%s: %s is a directory; give a JSON file", flag, path)
		}
		return nil, badFlag(flag, "%s: %s is not a regular file (%s); give a JSON file", flag, path, fileTypeName(m))
	}
	if st.Size() > maxOptionFileBytes {
		return nil, badFlag(flag, "%s: %s is %d bytes, above the %d-byte limit for an option file", flag, path, st.Size(), maxOptionFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxOptionFileBytes+1))
	if err != nil {
		return nil, badFlag(flag, "%s: %s", flag, pathErrText(err))
	}
	if len(b) > maxOptionFileBytes {
		return nil, badFlag(flag, "%s: %s grew above the %d-byte limit for an option file", flag, path, maxOptionFileBytes)
	}
	return b, nil
}

// pathErrText is an open or read error's text as a person reads it:
// "open /x: no such file or directory" (the path is the one the person
// typed).
func pathErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + " " + pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
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
