package tui

import (
	"slices"
	"strings"
)

// SortKey is a process table column the rows can be ordered by.
type SortKey int

// Sort keys, in the order `<` and `>` cycle through them.
const (
	SortCPU SortKey = iota
	SortMem
	SortIO
	SortThreads
	SortName
	SortPID
	SortTime
	numSortKeys
)

// String names the key as the header shows it.
func (k SortKey) String() string {
	return [...]string{"CPU%", "MEM", "IO/s", "THR", "COMMAND", "PID", "TIME+"}[k]
}

// descByDefault: numeric columns sort largest first (htop's default).
func (k SortKey) descByDefault() bool { return k <= SortThreads || k == SortTime }

// view is one row of the displayed table: the row and its tree prefix.
type view struct {
	r      *Row
	prefix string
	// ord is the row's index in the frame (the host's order), the last
	// tie-break of a flat table's sort.
	ord int
}

// arrange filters, sorts and (tree) nests rows. filter is a case-
// insensitive substring of the name or a PID prefix. Rows with an
// unmeasured sort value go last in either order; ties go by PID.
func arrange(rows []Row, key SortKey, reverse bool, filter string, tree bool) []view {
	desc := key.descByDefault() != reverse
	// cmpRows orders two rows: negative when a goes first, 0 for a tie.
	cmpRows := func(a, b *Row) int {
		var c int
		switch key {
		case SortCPU:
			c = cmpOpt(a.CPU, a.CPUOK, b.CPU, b.CPUOK, desc)
		case SortMem:
			c = cmpOpt(float64(a.RSS), a.RSSOK, float64(b.RSS), b.RSSOK, desc)
		case SortIO:
			c = cmpOpt(a.IORate, a.IORateOK, b.IORate, b.IORateOK, desc)
		case SortThreads:
			c = cmpOpt(float64(a.Threads), a.ThreadsOK, float64(b.Threads), b.ThreadsOK, desc)
		case SortName:
			c = strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
			if desc {
				c = -c
			}
		case SortPID:
			c = a.PID - b.PID
			if desc {
				c = -c
			}
		case SortTime:
			c = cmpOpt(float64(a.CPUTime), a.CPUTimeOK, float64(b.CPUTime), b.CPUTimeOK, desc)
		}
		if a.Ended != b.Ended {
			// live rows first in either order: ended lifetimes never push
			// live ones off the screen
			if b.Ended {
				return -1
			}
			return 1
		}
		if c != 0 {
			return c
		}
		return a.PID - b.PID
	}
	f := strings.ToLower(filter)
	match := func(r *Row) bool { return f == "" || matches(r, f, true) }
	if !tree {
		out := make([]view, 0, len(rows))
		for i := range rows {
			if match(&rows[i]) {
				out = append(out, view{r: &rows[i], ord: i})
			}
		}
		// cmpRows, then the host's order (a stable sort's result, by a
		// total order: pdqsort on small values, no reflection)
		slices.SortFunc(out, func(a, b view) int {
			if c := cmpRows(a.r, b.r); c != 0 {
				return c
			}
			return a.ord - b.ord
		})
		return out
	}
	// Tree: children hang under a live parent only when the relationship
	// is verified (parent start time precedes the child's); a filter keeps
	// matching rows and their ancestors.
	byPID := map[int]*Row{}
	for i := range rows {
		if !rows[i].Ended {
			byPID[rows[i].PID] = &rows[i]
		}
	}
	kids := map[*Row][]*Row{}
	var roots []*Row
	for i := range rows {
		r := &rows[i]
		if p := byPID[r.PPID]; p != nil && r.ParentVerified && !r.Ended && p != r {
			kids[p] = append(kids[p], r)
		} else {
			roots = append(roots, r)
		}
	}
	keep := map[*Row]bool{}
	var mark func(r *Row) bool
	mark = func(r *Row) bool {
		k := match(r)
		for _, c := range kids[r] {
			if mark(c) {
				k = true
			}
		}
		keep[r] = k
		return k
	}
	for _, r := range roots {
		mark(r)
	}
	var out []view
	var walk func(rs []*Row, indent string)
	walk = func(rs []*Row, indent string) {
		slices.SortStableFunc(rs, cmpRows)
		var shown []*Row
		for _, r := range rs {
			if keep[r] {
				shown = append(shown, r)
			}
		}
		for i, r := range shown {
			branch, next := "├─ ", "│  "
			if i == len(shown)-1 {
				branch, next = "└─ ", "   "
			}
			if indent == "" {
				out = append(out, view{r: r})
				walk(kids[r], " ")
				continue
			}
			out = append(out, view{r: r, prefix: indent + branch})
			walk(kids[r], indent+next)
		}
	}
	walk(roots, "")
	return out
}

func cmpOpt(a float64, aok bool, b float64, bok bool, desc bool) int {
	switch {
	case aok && !bok:
		return -1
	case !aok && bok:
		return 1
	case !aok && !bok:
		return 0
	}
	if a == b {
		return 0
	}
	if (a < b) != desc {
		return -1
	}
	return 1
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// matches reports whether row r matches the lower-case text f: a
// substring of its name (or, with args, of its command line when read)
// or a prefix of its PID.
func matches(r *Row, f string, args bool) bool {
	if strings.Contains(strings.ToLower(r.Name), f) || strings.HasPrefix(itoa(r.PID), f) {
		return true
	}
	if r.Container != "" && len(r.Container) > 1 && strings.Contains(strings.ToLower(r.Container), f) {
		return true
	}
	if args && r.ArgsOK {
		return strings.Contains(strings.ToLower(strings.Join(r.Args, " ")), f)
	}
	return false
}
