package sample

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
)

// Command line bounds. A command line can be megabytes (the kernel allows
// a quarter of the stack limit for argv and the environment), more than a
// result may carry, so the proc tools return it in pages of whole
// arguments and say when one was cut.
const (
	// RowCommandLineBytes is how many bytes of a command line a
	// list_processes row carries (whole arguments, NUL separators counted).
	RowCommandLineBytes = 4 << 10
	// DefaultCommandLinePage is get_process_info's default page of a
	// command line in bytes (command_line_limit).
	DefaultCommandLinePage = 8 << 10
	// MaxCommandLinePage is the largest command_line_limit: the page, JSON
	// escaped at worst six bytes per byte, stays under a 64 KiB result
	// only for text; most command lines are.
	MaxCommandLinePage = 32 << 10
	// MaxCommandLineRead bounds the bytes read from /proc/PID/cmdline; a
	// longer command line has unknown length and digest.
	MaxCommandLineRead = 16 << 20
)

// ArgvPage is one page of a command line read as raw /proc/PID/cmdline
// bytes (NUL-terminated arguments).
type ArgvPage struct {
	// Args are the arguments from index Offset on, whole, as many as fit
	// the page's byte limit (each argument's bytes plus its NUL); when the
	// first alone does not fit it is cut to the limit and Cut is set.
	Args []string
	// Offset is the index of Args[0] among all arguments.
	Offset int
	// Next is the index of the first argument not returned (Total when
	// the page reaches the end).
	Next int
	// Total is the number of arguments; Bytes the length of the whole
	// command line as the kernel reports it (what `wc -c
	// /proc/PID/cmdline` counts); SHA256 the hex digest of those bytes
	// (`sha256sum /proc/PID/cmdline`).
	Total, Bytes int
	SHA256       string
	// Cut says Args[0] is a prefix of its argument (it alone exceeds the
	// limit).
	Cut bool
	// Complete says the read reached the end of the command line (false
	// beyond MaxCommandLineRead: Total, Bytes and SHA256 then count only
	// what was read).
	Complete bool
}

// Truncated reports whether the page is not the whole command line: it
// starts after the first argument, ends before the last, or cuts one.
func (p ArgvPage) Truncated() bool {
	return p.Offset > 0 || p.Next < p.Total || p.Cut || !p.Complete
}

// PageArgv splits raw (the bytes of /proc/PID/cmdline, read up to
// MaxCommandLineRead; complete says the read reached the end) into
// arguments and returns those from index offset whose bytes, each with
// its NUL, fit within limit (limit <= 0 means no limit). A trailing NUL is
// the last argument's terminator; a command line rewritten without one
// (setproctitle) is still split on NUL. An offset past the end returns no
// arguments with Next = Total; an empty command line (a kernel thread)
// has Total 0.
func PageArgv(raw []byte, offset, limit int, complete bool) ArgvPage {
	sum := sha256.Sum256(raw)
	p := ArgvPage{Offset: offset, Bytes: len(raw), SHA256: hex.EncodeToString(sum[:]), Complete: complete, Args: []string{}}
	body := bytes.TrimSuffix(raw, []byte{0})
	if offset < 0 {
		offset, p.Offset = 0, 0
	}
	if len(raw) == 0 {
		return p
	}
	used := 0
	i := 0
	p.Next = -1
	for rest := body; ; i++ {
		j := bytes.IndexByte(rest, 0)
		arg := rest
		if j >= 0 {
			arg = rest[:j]
		}
		if i >= offset && p.Next < 0 {
			switch {
			case limit <= 0 || used+len(arg)+1 <= limit:
				p.Args = append(p.Args, string(arg))
				used += len(arg) + 1
			case len(p.Args) == 0:
				p.Args = append(p.Args, string(arg[:limit]))
				p.Cut = true
				p.Next = i + 1
			default:
				p.Next = i
			}
		}
		if j < 0 {
			break
		}
		rest = rest[j+1:]
	}
	p.Total = i + 1
	if p.Next < 0 || p.Next > p.Total {
		p.Next = p.Total
	}
	return p
}
