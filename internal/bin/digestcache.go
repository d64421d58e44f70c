package bin

import (
	"os"
	"sync"
	"time"
)

// fileState identifies one state of a file's bytes as the kernel reports
// it: device, inode, size, and the modification and status-change times in
// nanoseconds. A write to the file changes its status-change time, which no
// caller can set back (a modification time can be: touch -r, cp -p). ok is
// false where the platform does not report all of it (fileStateOf).
type fileState struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
	ok           bool
}

// racyWindow is how recent a file's last change may be for its digest to
// be kept: the kernel stamps changes with a coarse clock (a few
// milliseconds), so a second write within the same tick as the first can
// leave every field of fileState as it was. A file changed less than this
// long before it was read is hashed on every read (as git treats an index
// entry as racily clean).
var racyWindow = 2 * time.Second

// maxDigests bounds the digests kept (the files of one session's paging).
const maxDigests = 64

// digests keeps the SHA-256 of the files read by this process, by
// fileState: paging a listing reads the file again on every page and
// binds each cursor to the file's digest, and hashing a large file per
// page was a measurable part of a page's cost. The cursor is still
// checked against the digest of the file's state as read.
var digests = struct {
	sync.Mutex
	m map[fileState]string
}{m: map[fileState]string{}}

// keepable says whether the digest of the file in state st may be kept:
// the platform reports its full state and its last change is older than
// racyWindow at now.
func (st fileState) keepable(now time.Time) bool {
	return st.ok && now.Sub(time.Unix(0, max(st.mtime, st.ctime))) > racyWindow
}

func cachedDigest(st fileState) (string, bool) {
	if !st.ok {
		return "", false
	}
	digests.Lock()
	defer digests.Unlock()
	s, ok := digests.m[st]
	return s, ok
}

func keepDigest(st fileState, sum string) {
	if !st.keepable(time.Now()) {
		return
	}
	digests.Lock()
	defer digests.Unlock()
	if len(digests.m) >= maxDigests {
		clear(digests.m)
	}
	digests.m[st] = sum
}

// stateOf is fileStateOf for fi, with its size.
func stateOf(fi os.FileInfo) fileState {
	st := fileStateOf(fi)
	st.size = fi.Size()
	return st
}

// Unchanged reports whether a and b, two stats of one path, show the same
// file in the same state: the same file (os.SameFile: device and inode),
// size and modification time, and where the platform reports it (Linux)
// the same status-change time, which every write changes and no caller
// can set back.
func Unchanged(a, b os.FileInfo) bool {
	if !os.SameFile(a, b) || a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime()) {
		return false
	}
	sa, sb := fileStateOf(a), fileStateOf(b)
	return !sa.ok || !sb.ok || sa.ctime == sb.ctime
}
