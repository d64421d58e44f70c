package host

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// MappedByMethod is the host method behind inspect_binary's mapped_by
// (bin -> proc): {"path": P, "exclude_pid": C} (C, optional, the calling
// process, which maps P while it reads it: not counted) returns data {path, count, processes,
// processes_unreadable, complete}: count is the number of live processes
// whose /proc/PID/maps maps the regular file at P (capture.MappersOf:
// same device and inode), processes the first MappedByListed of them by
// PID, each {pid, process_ref, name} (process_ref and name null for a
// process not yet in a sample or whose lifetime cannot be verified now);
// processes_unreadable counts processes whose maps could not be read, and
// complete is false when there are any (count is then a lower bound). A
// path that is not a regular file is INVALID_ARGUMENT. It is not a tool.
const MappedByMethod = "mapped_by"

// MappedByListed is how many mapping processes mapped_by lists.
const MappedByListed = 20

type mappedByArgs struct {
	Path string `json:"path"`
	// ExcludePID is the caller's own process, which maps the file while
	// it reads it; it is not counted (0: none).
	ExcludePID int32 `json:"exclude_pid"`
}

func (h *Host) mappedBy(ctx context.Context, s *Session, raw json.RawMessage) (*contract.Result, error) {
	a, err := tool.Decode[mappedByArgs](raw)
	if err != nil || a.Path == "" {
		e := contract.Errorf(contract.CodeInvalidArgument, "mapped_by needs a path")
		e.Field = "/path"
		return nil, e
	}
	m, err := capture.MappersOf(ctx, a.Path)
	if err != nil {
		return nil, err
	}
	m.PIDs = slices.DeleteFunc(m.PIDs, func(pid int32) bool { return pid == a.ExcludePID })
	snap := h.sampler.Latest()
	procs := []map[string]any{}
	for _, pid := range m.PIDs {
		if len(procs) == MappedByListed {
			break
		}
		row := map[string]any{"pid": pid, "process_ref": nil, "name": nil}
		if p := snap.Find(pid); p != nil && sample.Verify(p.ID()) == sample.Alive {
			row["process_ref"] = h.Ref(p.ID())
			row["name"] = p.Name
		}
		procs = append(procs, row)
	}
	data := map[string]any{
		"path": a.Path, "count": len(m.PIDs), "processes": procs,
		"processes_examined": m.Examined, "processes_unreadable": m.Unreadable, "complete": m.Unreadable == 0,
	}
	return contract.NewResult("live", snap.Time, data), nil
}
