//go:build linux

package sample

import (
	"bytes"
	"strconv"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// sysFile is one system-wide /proc file the collector reads each tick
// (stat, meminfo, loadavg, diskstats, net/dev, uptime). On a procfs
// mount it is kept open and re-read with pread(2) at offset 0, which
// makes the kernel generate a seq_file anew (one syscall per tick instead
// of open, read and close); on a fixture tree, whose files a test may
// replace between ticks, it is opened per read. A failed pread closes the
// fd and the read falls back to an open of path, which is kept again.
//
// A file generated whole by one show call (single_open: stat, meminfo,
// loadavg, uptime) is complete after a read shorter than the buffer; an
// iterated seq_file (diskstats, net/dev) may return a page at a time, so
// it is read until a read returns 0.
type sysFile struct {
	path   string
	fd     int  // the kept fd, -1 when none
	keep   bool // keep an fd (the root is a procfs mount)
	single bool // generated whole: a short read is the end
}

// sysFiles is the system-wide files of one collector.
type sysFiles struct {
	stat, meminfo, loadavg, diskstats, netdev, uptime *sysFile
}

// newSysFiles names the files under the procfs tree root; keep is true
// on a procfs mount.
func newSysFiles(root string, keep bool) sysFiles {
	return sysFiles{
		stat:      newSysFile(root+"/stat", keep, keep),
		meminfo:   newSysFile(root+"/meminfo", keep, keep),
		loadavg:   newSysFile(root+"/loadavg", keep, keep),
		diskstats: newSysFile(root+"/diskstats", keep, false),
		netdev:    newSysFile(root+"/net/dev", keep, false),
		uptime:    newSysFile(root+"/uptime", keep, keep),
	}
}

func (s *sysFiles) close() {
	for _, f := range [...]*sysFile{s.stat, s.meminfo, s.loadavg, s.diskstats, s.netdev, s.uptime} {
		if f != nil {
			f.close()
		}
	}
}

func newSysFile(path string, keep, single bool) *sysFile {
	return &sysFile{path: path, fd: -1, keep: keep, single: single}
}

// read returns the file's content in c.buf (aliasing it).
func (f *sysFile) read(c *LinuxCollector) ([]byte, error) {
	if f.fd >= 0 {
		if b, err := c.preadFull(f.fd, f.single); err == nil {
			return b, nil
		}
		unix.Close(f.fd)
		f.fd = -1
	}
	fd, err := unix.Open(f.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	b, err := c.preadFull(fd, f.single)
	if err != nil || !f.keep {
		unix.Close(fd)
		return b, err
	}
	f.fd = fd
	return b, nil
}

func (f *sysFile) close() {
	if f.fd >= 0 {
		unix.Close(f.fd)
		f.fd = -1
	}
}

// lines calls fn with each line of b (without its newline).
func lines(b []byte, fn func(line []byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		line := b
		if i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		fn(line)
	}
}

// parseProcStat reads the cpu lines of /proc/stat (proc(5)): the total
// and each CPU's times in seconds (USER_HZ ticks / 100), as procfs's
// Stat does. ok is false without a total "cpu" line.
func parseProcStat(b []byte) (total procfs.CPUStat, cpus map[int64]procfs.CPUStat, ok bool) {
	cpus = map[int64]procfs.CPUStat{}
	lines(b, func(line []byte) {
		if !bytes.HasPrefix(line, []byte("cpu")) {
			return
		}
		f := bytes.Fields(line)
		if len(f) < 2 {
			return
		}
		var v [10]float64
		for i := 0; i < len(v) && i+1 < len(f); i++ {
			x, err := strconv.ParseFloat(string(f[i+1]), 64)
			if err != nil {
				return
			}
			v[i] = x / userHZ
		}
		st := procfs.CPUStat{User: v[0], Nice: v[1], System: v[2], Idle: v[3], Iowait: v[4], IRQ: v[5], SoftIRQ: v[6], Steal: v[7], Guest: v[8], GuestNice: v[9]}
		if len(f[0]) == 3 {
			total, ok = st, true
			return
		}
		if id, err := strconv.ParseInt(string(f[0][3:]), 10, 64); err == nil {
			cpus[id] = st
		}
	})
	return total, cpus, ok
}

// memInfo is what the collector reads of /proc/meminfo, in bytes (the
// file's kB are KiB); has tells which were present.
type memInfo struct {
	total, avail, committed, swapTotal, swapFree uint64
	has                                          [5]bool
}

// parseMeminfo reads MemTotal, MemAvailable, Committed_AS, SwapTotal and
// SwapFree of /proc/meminfo ("Key:   N kB").
func parseMeminfo(b []byte) memInfo {
	var m memInfo
	lines(b, func(line []byte) {
		c := bytes.IndexByte(line, ':')
		if c < 0 {
			return
		}
		f := bytes.Fields(line[c+1:])
		if len(f) == 0 {
			return
		}
		v, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return
		}
		if len(f) > 1 && string(f[1]) == "kB" {
			v *= 1024
		}
		var i int
		var dst *uint64
		switch string(line[:c]) {
		case "MemTotal":
			i, dst = 0, &m.total
		case "MemAvailable":
			i, dst = 1, &m.avail
		case "Committed_AS":
			i, dst = 2, &m.committed
		case "SwapTotal":
			i, dst = 3, &m.swapTotal
		case "SwapFree":
			i, dst = 4, &m.swapFree
		default:
			return
		}
		*dst, m.has[i] = v, true
	})
	return m
}

// parseLoadavg reads the 1, 5 and 15 minute load averages of
// /proc/loadavg.
func parseLoadavg(b []byte) (la [3]float64, ok bool) {
	f := bytes.Fields(b)
	if len(f) < 3 {
		return la, false
	}
	for i := range la {
		v, err := strconv.ParseFloat(string(f[i]), 64)
		if err != nil {
			return la, false
		}
		la[i] = v
	}
	return la, true
}

// parseDiskstats calls fn with each device of /proc/diskstats and its
// sectors read (field 6) and written (field 10), in 512-byte units.
func parseDiskstats(b []byte, fn func(name string, rd, wr uint64)) {
	lines(b, func(line []byte) {
		f := bytes.Fields(line)
		if len(f) < 14 {
			return
		}
		rd, err1 := strconv.ParseUint(string(f[5]), 10, 64)
		wr, err2 := strconv.ParseUint(string(f[9]), 10, 64)
		if err1 != nil || err2 != nil {
			return
		}
		fn(string(f[2]), rd, wr)
	})
}

// parseNetDev calls fn with each interface of /proc/net/dev and its
// received and transmitted bytes (the first and ninth field after the
// colon); the two header lines have no colon-separated counters.
func parseNetDev(b []byte, fn func(name []byte, rx, tx uint64)) {
	lines(b, func(line []byte) {
		c := bytes.IndexByte(line, ':')
		if c < 0 {
			return
		}
		f := bytes.Fields(line[c+1:])
		if len(f) < 16 {
			return
		}
		rx, err1 := strconv.ParseUint(string(f[0]), 10, 64)
		tx, err2 := strconv.ParseUint(string(f[8]), 10, 64)
		if err1 != nil || err2 != nil {
			return
		}
		fn(bytes.TrimSpace(line[:c]), rx, tx)
	})
}
