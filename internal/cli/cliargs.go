package cli

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/inquest-dev/inquest/internal/sample"
)

// pidMax is the largest PID Linux can assign (PID_MAX_LIMIT on 64-bit
// kernels, the ceiling of /proc/sys/kernel/pid_max) and the maximum of the
// proc tools' filter.pid.
const pidMax = 4194304

// parsePID parses a PID command-line argument: a decimal integer in
// 1..pidMax. Its errors name the CLI argument (never a tool's schema
// path) and may repeat what the user typed on this command line.
func parsePID(s string) (int, error) {
	pid, err := strconv.Atoi(s)
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && pid > pidMax:
		return 0, badFlag("PID", "PID %s is out of range: Linux PIDs are 1..%d", s, pidMax)
	case err != nil || pid < 1:
		return 0, badFlag("PID", "PID %q is not a positive integer", s)
	}
	return pid, nil
}

// psSortKey resolves ps --sort: pid, name, a process metric id
// (sample.ProcessMetrics) or an alias of metricAliases. An unknown word is
// an error listing what --sort accepts, aliases included.
func psSortKey(s string) (string, error) {
	if s == "pid" || s == "name" {
		return s, nil
	}
	id := metricID(s)
	var ids []string
	for _, m := range sample.ProcessMetrics {
		if m.ID == id {
			return id, nil
		}
		ids = append(ids, m.ID)
	}
	aliases := make([]string, 0, len(metricAliases))
	for a := range metricAliases {
		aliases = append(aliases, a)
	}
	slices.Sort(aliases)
	return "", badFlag("--sort", "--sort %q is not a sort key: use pid, name, a process metric id (%s) or an alias (%s)",
		s, strings.Join(ids, ", "), strings.Join(aliases, ", "))
}
