//go:build linux

package capture

import (
	"bytes"
	"cmp"
	"context"
	"hash/maphash"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/inquest-dev/inquest/internal/sample"
	"golang.org/x/sys/unix"
)

// listPIDs returns the numeric entries of the root (the PID directories).
func (fs FS) listPIDs() ([]int32, error) {
	f, err := os.Open(fs.Root())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]int32, 0, len(names))
	for _, n := range names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		v, err := strconv.ParseInt(n, 10, 32)
		if err == nil {
			out = append(out, int32(v))
		}
	}
	// /proc lists PIDs in ascending order; a fixture tree may not
	slices.Sort(out)
	return out, nil
}

// FileUsers scans every readable /proc/PID/fd on the host and returns one
// row per (process, target path): process identity (Verified when the
// process's start time read before and after its fds agree), pid, name
// (comm), path (the fd link target as the kernel prints it, e.g.
// "/tmp/x", "socket:[123]", "/x (deleted)") and handle_count (fds of that
// process on that target). Rows keep scan order (PID directory order, fd
// order within a process, first occurrence of each path).
//
// Coverage: processes_listed, processes_examined, processes_denied (fd
// directory unreadable), processes_exited (ended before or during the
// scan), fds_examined, fds_failed (links that could not be read). Denied or
// exited processes make the capture partial: an empty partial result is not
// a negative finding. ctx cancellation stops the scan between processes.
func FileUsers(ctx context.Context) (*Capture, error) { return FS{}.FileUsersFiltered(ctx, Filter{}) }

// FileUsersFiltered is FileUsers keeping only rows that match f
// (start_capture filter): a process whose executable and command names
// both differ from f.OwnerName is skipped before its fds are read
// (coverage processes_filtered_out), and a path that does not match
// f.Path/f.Extension is never kept (Capture.FilteredOut counts those
// distinct process/path rows).
func FileUsersFiltered(ctx context.Context, f Filter) (*Capture, error) {
	return FS{}.FileUsersFiltered(ctx, f)
}

// FileUsersFiltered is the package's FileUsersFiltered over the tree fs.
// Processes are scanned in parallel (at most GOMAXPROCS at once); each fd
// costs one getdents share and one readlinkat, and allocates only when its
// path is kept (a new row) or is not plain ASCII.
func (fs FS) FileUsersFiltered(ctx context.Context, f Filter) (*Capture, error) {
	c := &Capture{Kind: KindFileUsers, Started: time.Now(), Coverage: map[string]any{}}
	pids, err := fs.listPIDs()
	if err != nil {
		return nil, err
	}
	m := newPathMatcher(Filter{Path: f.Path, PathBytes: f.PathBytes, Extension: f.Extension})
	budget := rowBudgetOf(ctx)
	scans := make([]pidScan, len(pids))
	workers := min(runtime.GOMAXPROCS(0), len(pids))
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := scratchPool.Get().(*scratch)
			defer scratchPool.Put(sc)
			for !stop.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(pids) {
					return
				}
				if ctx.Err() != nil {
					stop.Store(true)
					return
				}
				scans[i] = fs.scanPID(ctx, pids[i], f, m, sc)
				if budget.exceeded() {
					stop.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if budget.exceeded() {
		return nil, budget.overErr(KindFileUsers, min(int(next.Load()), len(pids)), len(pids))
	}
	var examined, deniedN, exitedN, fdsSeen, fdsFailed, ownerSkipped int
	total := 0
	for i := range scans {
		total += len(scans[i].rows)
	}
	c.Rows = make([]Row, 0, total)
	for i := range scans {
		s := &scans[i]
		switch s.outcome {
		case pidExited:
			exitedN++
		case pidDenied:
			deniedN++
		case pidSkipped:
			ownerSkipped++
		case pidExamined:
			examined++
		case pidExaminedDeniedFds:
			deniedN++
		}
		if s.exitedMid {
			exitedN++
		}
		fdsSeen += s.fds
		fdsFailed += s.failed
		c.FilteredOut += s.filteredOut
		c.Rows = append(c.Rows, s.rows...)
		s.rows = nil
	}
	c.Finished = time.Now()
	c.Coverage["processes_listed"] = len(pids)
	c.Coverage["processes_examined"] = examined
	c.Coverage["processes_denied"] = deniedN
	c.Coverage["processes_exited"] = exitedN
	c.Coverage["fds_examined"] = fdsSeen
	c.Coverage["fds_failed"] = fdsFailed
	if f.OwnerName != "" {
		c.Coverage["processes_filtered_out"] = ownerSkipped
	}
	if deniedN > 0 {
		c.warn(strconv.Itoa(deniedN) + " processes' fd tables could not be read (access denied); their files are not listed")
	}
	if exitedN > 0 {
		c.warn(strconv.Itoa(exitedN) + " processes ended (or were zombies) before or during the scan; their files are listed only up to that point")
	}
	if fdsFailed > 0 {
		c.warn(strconv.Itoa(fdsFailed) + " fds could not be resolved (closed during the scan or access denied)")
	}
	return c, nil
}

// pidOutcome is how one process's scan ended.
type pidOutcome uint8

const (
	pidExited            pidOutcome = iota // gone before its fd directory was read
	pidDenied                              // fd directory unreadable
	pidSkipped                             // owner filter did not match
	pidExamined                            // fds read
	pidExaminedDeniedFds                   // fd directory listed, but no link readable
)

// pidScan is one process's part of a file_users capture.
type pidScan struct {
	outcome     pidOutcome
	exitedMid   bool
	fds         int
	failed      int
	filteredOut int
	rows        []Row
}

// scratch is one scan worker's reusable buffers.
type scratch struct {
	dents []byte // getdents64 records
	name  []byte // an fd name, NUL-terminated for readlinkat
	link  []byte // readlinkat target
	exe   []byte // the executable link, kept while the fds are read
	maps  []byte // /proc/PID/maps
	fold  []byte // the link folded for case-insensitive matching
	// per process: kept links (plain) -> row index; links ending in the
	// deletion suffix -> row index or -1 (filtered out); and the hashes
	// of plain links filtered out, so FilteredOut counts distinct
	// process/path rows without keeping (allocating) their strings (a
	// 64-bit hash collision could undercount by one).
	seen     map[string]int
	seenDel  map[delKey]int
	filtered hashSet
	seed     maphash.Seed
}

type delKey struct {
	link string
	del  Deletion
}

// reset empties the per-process maps. Clearing walks a map's whole table,
// so a map that grew for a process with thousands of paths is replaced
// (the next processes would otherwise pay for its size), and one already
// empty is left alone.
func (sc *scratch) reset() {
	const big = 256
	switch n := len(sc.seen); {
	case n > big:
		sc.seen = map[string]int{}
	case n > 0:
		clear(sc.seen)
	}
	if len(sc.seenDel) > 0 {
		clear(sc.seenDel)
	}
	sc.filtered.reset()
}

// hashSet is a set of 64-bit hashes with open addressing (linear probing
// in a power-of-two table, at most half full), reused across processes:
// the filtered-out links of a process with thousands of fds cost one probe
// each, without a map's per-insert bookkeeping and growth allocations.
// 0 marks an empty slot, so a hash of 0 is stored as 1.
type hashSet struct {
	slots []uint64
	n     int
}

// add inserts h and reports whether it was absent.
func (s *hashSet) add(h uint64) bool {
	if h == 0 {
		h = 1
	}
	if 2*(s.n+1) > len(s.slots) {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = h
			s.n++
			return true
		case h:
			return false
		}
	}
}

// grow doubles the table (64 slots at first) and re-inserts the hashes.
func (s *hashSet) grow() {
	old := s.slots
	s.slots = make([]uint64, max(64, 2*len(old)))
	s.n = 0
	for _, h := range old {
		if h != 0 {
			s.add(h)
		}
	}
}

// reset empties the set, keeping a table of up to 64Ki slots (512 KiB)
// for the next process; a larger one is dropped.
func (s *hashSet) reset() {
	if s.n == 0 {
		return
	}
	if len(s.slots) > 1<<16 {
		s.slots = nil
	} else {
		clear(s.slots)
	}
	s.n = 0
}

// scratchPool keeps scan workers' buffers and maps between captures.
var scratchPool = sync.Pool{New: func() any { return newScratch() }}

func newScratch() *scratch {
	return &scratch{dents: make([]byte, 32<<10), name: make([]byte, 0, 32), link: make([]byte, 4096),
		seen: map[string]int{}, seenDel: map[delKey]int{}, seed: maphash.MakeSeed()}
}

// Access bits of a file_users row (psmisc fuser's letters): an open fd
// (f, or F when one of them is open for writing), the root directory (r),
// the working directory (c), the executable (e) and a memory mapping (m).
const (
	accFile uint8 = 1 << iota
	accFileWrite
	accRoot
	accCwd
	accExe
	accMmap
)

// accessText is the access field of a row: psmisc fuser's letters in its
// order (f or F, r, c, e, m), each only when that use was found.
func accessText(a uint8) string {
	var b [5]byte
	n := 0
	switch {
	case a&accFileWrite != 0:
		b[n] = 'F'
		n++
	case a&accFile != 0:
		b[n] = 'f'
		n++
	}
	for _, u := range [...]struct {
		bit uint8
		c   byte
	}{{accRoot, 'r'}, {accCwd, 'c'}, {accExe, 'e'}, {accMmap, 'm'}} {
		if a&u.bit != 0 {
			b[n] = u.c
			n++
		}
	}
	return string(b[:n])
}

// procRows is one process's rows while its uses are read: per row the fd
// count, the first fd number (or the order of a use that is not an fd,
// after every fd) and the access bits.
type procRows struct {
	head    []Field
	owner   string
	comm    string
	id      sample.Identity
	rows    []Row
	counts  []int
	firstFD []int
	access  []uint8
}

// keep adds a row for path (deletion del) first seen at order and returns
// its index.
func (pr *procRows) keep(path string, del Deletion, order int) int {
	pr.counts = append(pr.counts, 0)
	pr.firstFD = append(pr.firstFD, order)
	pr.access = append(pr.access, 0)
	pr.rows = append(pr.rows, newFileUsersRow(pr.head, path, del, pr.owner, pr.comm, pr.id))
	return len(pr.rows) - 1
}

// use records a use of link (an fd target when fd >= 0, else a root,
// working directory, executable or mapping target with bit) and returns
// the row index (-1 when the filter left it out) and whether the row is
// new. resolve decides a link ending in the deletion suffix.
func (sc *scratch) use(pr *procRows, out *pidScan, m *pathMatcher, link []byte, order int, resolve func() (string, Deletion)) (int, bool) {
	if bytes.HasSuffix(link, []byte(sample.DeletedSuffix)) {
		// Rare: decided from the object's link count, keyed by (link,
		// deletion) since a live file may carry the suffix.
		path, del := resolve()
		k := delKey{string(link), del}
		if j, ok := sc.seenDel[k]; ok {
			return j, false
		}
		if !m.any && !m.matchString(path) {
			sc.seenDel[k] = -1
			out.filteredOut++
			return -1, false
		}
		j := pr.keep(path, del, order)
		sc.seenDel[k] = j
		return j, true
	}
	if !m.any && !m.match(link, sc) {
		// a kept path always matches, so a link that does not was never
		// kept: one hash, no lookup in seen
		if sc.filtered.add(maphash.Bytes(sc.seed, link)) {
			out.filteredOut++
		}
		return -1, false
	}
	if j, ok := sc.seen[string(link)]; ok { // no allocation for the lookup
		return j, false
	}
	path := string(link)
	j := pr.keep(path, sample.NotDeleted, order)
	sc.seen[path] = j
	return j, true
}

// scanPID reads one process's fd table: identity before and after, the
// owner name, and one readlinkat per fd. With a path selector (m.uses) it
// also reads the process's root, working directory, executable and
// mappings, and the open mode of each kept fd (the access field).
func (fs FS) scanPID(ctx context.Context, pid int32, f Filter, m *pathMatcher, sc *scratch) pidScan {
	var out pidScan
	budget := rowBudgetOf(ctx)
	p, err := fs.openPinned(pid)
	if err != nil {
		out.outcome = pidExited
		return out
	}
	defer p.close()
	st, err := p.stat()
	if err != nil || !p.useLiveTask(st) {
		out.outcome = pidExited
		return out
	}
	dfd, err := unix.Openat(p.tfd, "fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	fdErr := err
	if err != nil && !(m.uses && denied(err)) {
		if denied(err) {
			out.outcome = pidDenied
		} else {
			out.outcome = pidExited
		}
		return out
	}
	if err == nil {
		defer unix.Close(dfd)
	}
	owner, exeLink, exePath, exeDel := p.processNameExe(st.name, sc.link)
	if !f.MatchOwner(owner, st.name) {
		out.outcome = pidSkipped
		return out
	}
	if m.uses && exeLink != nil {
		sc.exe = append(sc.exe[:0], exeLink...)
		exeLink = sc.exe
	}
	pr := procRows{owner: owner, comm: st.name, id: sample.Identity{PID: pid, StartTicks: st.startTicks}}
	// the process's fields, shared by its rows
	pr.head = append(pr.head, Field{"process_ref", nil}, Field{"pid", any(pid)})
	pr.head = appendText(pr.head, "name", owner)
	pr.head = appendText(pr.head, "comm", st.name)
	sc.reset()
	deniedFds := 0
	exitedMid := false
	listDenied := fdErr != nil
	halted := false
	for fdErr == nil {
		n, err := unix.Getdents(dfd, sc.dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			listDenied = denied(err) && out.fds == 0
			break
		}
		if n <= 0 {
			break
		}
		sample.Dirents(sc.dents[:n], func(name []byte) {
			if halted {
				return
			}
			out.fds++
			if out.fds&1023 == 0 && ctx.Err() != nil {
				halted = true
				return
			}
			link, err := sc.readlink(dfd, name)
			if err != nil {
				if gone(err) && !exitedMid {
					// ENOENT is also an fd closed between getdents and
					// readlink; check the process itself.
					// (its lifetime: start time, zombie, PF_EXITING, a
					// group exit's zombie leader).
					if !p.stillRuns(st.startTicks) {
						exitedMid = true
					}
				}
				if exitedMid {
					// The exit's failure, not a failed fd.
					halted = true
					return
				}
				out.failed++
				if denied(err) {
					deniedFds++
				}
				return
			}
			j, isNew := sc.use(&pr, &out, m, link, fdNumber(name), func() (string, Deletion) {
				return resolveLink(p.tfd, dfd, string(name), link)
			})
			if j < 0 {
				return
			}
			pr.counts[j]++
			if m.uses && pr.access[j]&accFileWrite == 0 {
				// the magic link's mode is the open mode (S_IWUSR:
				// open for writing), as fdinfo's flags say
				pr.access[j] |= accFile
				var lst unix.Stat_t
				if unix.Fstatat(dfd, string(sc.name[:len(sc.name)-1]), &lst, unix.AT_SYMLINK_NOFOLLOW) == nil && lst.Mode&unix.S_IWUSR != 0 {
					pr.access[j] |= accFileWrite
				}
			}
			if isNew && !budget.take(len(pr.rows[j].Path)+len(owner)) {
				halted = true
			}
		})
		if halted {
			break
		}
	}
	if m.uses && !halted && !exitedMid {
		halted = sc.scanUses(p, &pr, &out, m, budget, exeLink, exePath, exeDel)
	}
	rows := pr.rows
	for j := range rows {
		rows[j].Fields = append(rows[j].Fields, Field{"handle_count", pr.counts[j]})
		if m.uses {
			rows[j].Fields = append(rows[j].Fields, Field{"access", accessText(pr.access[j])})
		}
	}
	// rows in fd order of their first fd, then the other uses: /proc
	// lists fds in ascending order already; a fixture tree may not
	if !slices.IsSorted(pr.firstFD) {
		idx := make([]int, len(rows))
		for j := range idx {
			idx[j] = j
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(pr.firstFD[a], pr.firstFD[b]) })
		sorted := make([]Row, len(rows))
		for j, k := range idx {
			sorted[j] = rows[k]
		}
		rows = sorted
	}
	out.rows = rows
	switch {
	case listDenied && len(rows) == 0:
		out.outcome = pidDenied
	case listDenied:
		out.outcome = pidExaminedDeniedFds // uses found, but the fd table was unreadable
	case deniedFds > 0 && deniedFds == out.fds:
		out.outcome = pidExaminedDeniedFds // the fd list was readable but no link was
	default:
		out.outcome = pidExamined
	}
	verified := false
	if !exitedMid {
		if p.stillRuns(st.startTicks) {
			verified = true
		} else {
			exitedMid = true
		}
	}
	out.exitedMid = exitedMid
	for j := range out.rows {
		out.rows[j].Verified = verified
	}
	return out
}

// nonFD orders the uses that are not fds after every fd.
const nonFD = 1 << 62

// scanUses adds the process's root (r), working directory (c), executable
// (e, exeLink as read by processNameExe) and mapped files (m) that match
// the filter to pr. The maps file is read once; a line is matched only
// when it names a file (a path and a non-zero inode) not seen before in
// this process. It returns true when the row budget ran out.
func (sc *scratch) scanUses(p *pinned, pr *procRows, out *pidScan, m *pathMatcher, budget *RowBudget, exeLink []byte, exePath string, exeDel Deletion) bool {
	add := func(link []byte, bit uint8, order int, resolve func() (string, Deletion)) bool {
		j, isNew := sc.use(pr, out, m, link, order, resolve)
		if j < 0 {
			return false
		}
		pr.access[j] |= bit
		return isNew && !budget.take(len(pr.rows[j].Path)+len(pr.owner))
	}
	for i, u := range [...]struct {
		name string
		bit  uint8
	}{{"root", accRoot}, {"cwd", accCwd}} {
		link, err := sc.readlink(p.tfd, []byte(u.name))
		if err != nil {
			continue // unreadable (kernel threads' are readable; denied otherwise)
		}
		if add(link, u.bit, nonFD+i, func() (string, Deletion) { return resolveLink(p.tfd, p.tfd, u.name, link) }) {
			return true
		}
	}
	if exeLink != nil && add(exeLink, accExe, nonFD+2, func() (string, Deletion) { return exePath, exeDel }) {
		return true
	}
	b, err := sc.readMaps(p.tfd)
	if err != nil {
		return false // kernel threads have none; unreadable maps: no m rows
	}
	order := nonFD + 3
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		rng, path, ok := mapsFile(line)
		if !ok || bytes.Equal(path, exeLink) {
			// the executable's own mappings are its e use, not m (as
			// psmisc's fuser reports them)
			continue
		}
		if bytes.IndexByte(path, '\\') >= 0 {
			// maps escapes a newline in a name as \012, so a name holding
			// a backslash is ambiguous: the map_files link is exact
			// (readable with CAP_SYS_ADMIN; else the text as printed)
			if l, err := readlinkAt(p.tfd, "map_files/"+string(rng), make([]byte, 256)); err == nil {
				path = l
			}
		}
		order++
		if add(path, accMmap, order, func() (string, Deletion) {
			var obj unix.Stat_t
			o := &obj
			if unix.Fstatat(p.tfd, "map_files/"+string(rng), &obj, 0) != nil {
				o = nil
			}
			return sample.ResolveDeleted(string(path), o, sample.StatInRoot(p.tfd))
		}) {
			return true
		}
	}
	return false
}

// mapsFile returns the address range and the path of a /proc/PID/maps
// line that maps a file (inode field not 0, path absolute); ok is false
// for anonymous and special mappings ([heap], [stack], [vdso]).
func mapsFile(line []byte) (rng, path []byte, ok bool) {
	// start-end perms offset dev inode   path
	rest := line
	var f [5][]byte
	for i := range f {
		rest = bytes.TrimLeft(rest, " ")
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			return nil, nil, false
		}
		f[i], rest = rest[:j], rest[j:]
	}
	if len(f[4]) == 1 && f[4][0] == '0' {
		return nil, nil, false
	}
	rest = bytes.TrimLeft(rest, " ")
	if len(rest) == 0 || rest[0] != '/' {
		return nil, nil, false
	}
	return f[0], rest, true
}

// readMaps reads /proc/PID/maps under dir whole into sc.maps.
func (sc *scratch) readMaps(dir int) ([]byte, error) {
	fd, err := unix.Openat(dir, "maps", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if cap(sc.maps) < 32<<10 {
		sc.maps = make([]byte, 0, 32<<10)
	}
	b := sc.maps[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			sc.maps = b
			return nil, err
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
	}
	sc.maps = b
	return b, nil
}

// fdNumber parses an fd directory entry name (decimal; other names sort
// last).
func fdNumber(name []byte) int {
	v := 0
	for _, c := range name {
		if c < '0' || c > '9' || v > 1<<40 {
			return 1 << 62
		}
		v = v*10 + int(c-'0')
	}
	return v
}

// newFileUsersRow is one file_users row: the process's head fields, the
// path and its deletion (handle_count is appended when the process is
// done).
func newFileUsersRow(head []Field, path string, del Deletion, owner, comm string, id sample.Identity) Row {
	fields := make([]Field, len(head), len(head)+6)
	copy(fields, head)
	fields = appendText(fields, "path", path)
	fields = append(fields, Field{"deleted", del.JSON()})
	return Row{Path: path, Owner: owner, Comm: comm, Proc: id, Fields: fields}
}

// readlink reads the fd link name (relative to dfd) into sc.link without
// allocating: the name is NUL-terminated in sc.name and readlinkat(2) is
// called directly. A target longer than the buffer grows it (up to 64 KiB).
func (sc *scratch) readlink(dfd int, name []byte) ([]byte, error) {
	sc.name = append(append(sc.name[:0], name...), 0)
	for {
		r, _, e := unix.Syscall6(unix.SYS_READLINKAT, uintptr(dfd), uintptr(unsafe.Pointer(&sc.name[0])), uintptr(unsafe.Pointer(&sc.link[0])), uintptr(len(sc.link)), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return nil, e
		}
		n := int(r)
		if n < len(sc.link) || len(sc.link) >= 1<<16 {
			return sc.link[:n], nil
		}
		sc.link = make([]byte, 2*len(sc.link))
	}
}

// pathMatcher is a Filter's path and extension selectors prepared once
// for a scan: the query terms folded (sample.FoldBytes) and split once.
// Matching a plain-ASCII link folds it into a scratch buffer; other links
// go through Filter.Match, so the semantics are Filter's exactly.
type pathMatcher struct {
	f     Filter
	any   bool     // no selector at all: every path is kept
	uses  bool     // a path selector: root, cwd, exe, mappings and fd modes are read too
	terms [][]byte // folded all-term path query (Path and PathBytes)
}

func newPathMatcher(f Filter) *pathMatcher {
	m := &pathMatcher{f: f, any: f.IsZero(), uses: f.Path != "" || f.PathBytes != ""}
	for _, q := range []string{f.Path, f.pathBytes()} {
		for _, t := range strings.Fields(q) {
			m.terms = append(m.terms, []byte(sample.FoldBytes(t)))
		}
	}
	return m
}

// matchString is Filter.Match on a row path.
func (m *pathMatcher) matchString(path string) bool { return m.f.Match(&Row{Path: path}) }

// match is matchString for a link, without allocating when the link is
// ASCII.
func (m *pathMatcher) match(link []byte, sc *scratch) bool {
	if cap(sc.fold) < len(link) {
		sc.fold = make([]byte, len(link), max(len(link), 256))
	}
	lp := sc.fold[:len(link)]
	for i, c := range link {
		if c >= 0x80 {
			return m.matchString(string(link))
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lp[i] = c
	}
	if len(lp) == 0 {
		return false
	}
	for _, t := range m.terms {
		if !bytes.Contains(lp, t) {
			return false
		}
	}
	// the extension on the unfolded link, viewed as a string (not kept)
	return m.f.Extension == "" || HasExtension(unsafe.String(&link[0], len(link)), m.f.Extension)
}
