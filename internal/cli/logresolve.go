package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/inquest-dev/inquest/internal/host"
)

// resolveLogArg turns the FILE argument of `inquest log show|export` into
// a path. An existing path is used as given. Otherwise a bare name (no
// path separator) is looked up in the recording directory (the
// recording_directory setting, else $XDG_DATA_HOME/inquest/recordings),
// and a log id that `inquest log list` printed (log_…) is resolved to its
// name through the host's list_logs. A name that matches nothing is
// returned unchanged, so the reader reports the path the person typed.
func resolveLogArg(ctx context.Context, arg string) string {
	if _, err := os.Lstat(arg); !errors.Is(err, fs.ErrNotExist) || strings.ContainsRune(arg, filepath.Separator) {
		return arg
	}
	dir, _, err := host.RecordingDirectory()
	if err != nil {
		return arg
	}
	name := arg
	if strings.HasPrefix(arg, "log_") && !strings.HasSuffix(arg, ".log") {
		if n := logNameOf(ctx, arg); n != "" {
			name = n
		}
	}
	p := filepath.Join(dir, name)
	if _, err := os.Lstat(p); err == nil {
		return p
	}
	return arg
}

// logNameOf asks the host's list_logs for the file name of a log id ("" if
// the host does not know it).
func logNameOf(ctx context.Context, id string) string {
	rt, err := newRuntime(ctx, runtimeOptions{})
	if err != nil {
		return ""
	}
	defer rt.Close()
	for cursor := ""; ; {
		a := map[string]any{"wait_ms": 10000}
		if cursor != "" {
			a = map[string]any{"cursor": cursor}
		}
		raw, _ := json.Marshal(a)
		tool := "list_logs"
		if cursor != "" {
			tool = "read_capture"
		}
		res, err := rt.Registry.Call(ctx, tool, raw)
		if err != nil {
			return ""
		}
		var d struct {
			Rows []struct {
				ID   string `json:"log_id"`
				Name string `json:"name"`
			} `json:"rows"`
			NextCursor string `json:"next_cursor"`
		}
		remarshal(res.Data, &d)
		for _, r := range d.Rows {
			if r.ID == id {
				return r.Name
			}
		}
		if d.NextCursor == "" {
			return ""
		}
		cursor = d.NextCursor
	}
}
