//go:build linux

package capture

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/contract"
	"github.com/inquest-dev/inquest/internal/sample"
)

// TestCollectionFilters: a child holding 200 distinct files plus one
// needle; OpenFilesFiltered and FileUsersFiltered keep only the matching
// rows and count what they dropped; an owner filter skips other processes
// before their fds are read.
func TestCollectionFilters(t *testing.T) {
	dir := realPath(t, t.TempDir())
	needle := realPath(t, tempFile(t, "needle.log"))
	c := startChild(t, "CAPTURE_DIR="+dir, "CAPTURE_DISTINCT=200", "CAPTURE_FILE="+needle)
	all, err := OpenFiles(context.Background(), c.id)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    Filter
		want int
	}{
		{Filter{Extension: ".log"}, 1},
		{Filter{Path: "needle"}, 1},
		{Filter{Path: filepath.Base(dir) + " held-1"}, 111}, // held-1, held-10..19, held-100..199
		{Filter{Extension: ".dat"}, 200},
	} {
		got, err := OpenFilesFiltered(context.Background(), c.id, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Rows) != tc.want || got.FilteredOut != len(all.Rows)-tc.want {
			t.Fatalf("%+v: %d rows (want %d), %d filtered out of %d", tc.f, len(got.Rows), tc.want, got.FilteredOut, len(all.Rows))
		}
		for _, r := range got.Rows {
			if !tc.f.Match(&r) {
				t.Fatalf("%+v kept %q", tc.f, r.Path)
			}
		}
	}
	fu, err := FileUsersFiltered(context.Background(), Filter{Path: "needle.log"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fu.Rows) != 1 || fu.Rows[0].Path != needle || fu.FilteredOut == 0 {
		t.Fatalf("file_users path filter: %d rows, %d filtered", len(fu.Rows), fu.FilteredOut)
	}
	st, _ := readStat(t, c.id.PID)
	own, err := FileUsersFiltered(context.Background(), Filter{OwnerName: strings.ToUpper(st)})
	if err != nil {
		t.Fatal(err)
	}
	if len(own.Rows) < 201 || own.Coverage["processes_filtered_out"].(int) == 0 {
		t.Fatalf("owner filter: %d rows, coverage %v", len(own.Rows), own.Coverage)
	}
	for _, r := range own.Rows {
		if !strings.EqualFold(r.Owner, st) && !strings.EqualFold(r.Comm, st) {
			t.Fatalf("owner filter kept %s/%s", r.Owner, r.Comm)
		}
	}
}

func TestFilterValidate(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		f     Filter
		field string
	}{
		{KindOpenFiles, Filter{OwnerName: "x"}, "/filter/owner_name"},
		{KindModules, Filter{OwnerName: "x"}, "/filter/owner_name"},
		{KindThreads, Filter{Path: "x"}, "/filter/path"},
		{KindScheduling, Filter{Extension: ".x"}, "/filter/extension"},
		{KindFileUsers, Filter{Path: " \t "}, "/filter/path"},
		{KindNetwork, Filter{OwnerName: "  "}, "/filter/owner_name"},
		{KindFileUsers, Filter{Path: "a b", Extension: ".log", OwnerName: "sshd"}, ""},
		{KindThreads, Filter{OwnerName: "sleep"}, ""},
	} {
		err := tc.f.Validate(tc.kind, "/filter")
		if tc.field == "" {
			if err != nil {
				t.Fatalf("%s %+v: %v", tc.kind, tc.f, err)
			}
			continue
		}
		e, ok := err.(interface{ Error() string })
		if !ok || !strings.Contains(e.Error(), "INVALID_ARGUMENT") || fieldOf(err) != tc.field {
			t.Fatalf("%s %+v: %v (field %q)", tc.kind, tc.f, err, fieldOf(err))
		}
	}
}

func readStat(t *testing.T, pid int32) (string, error) {
	t.Helper()
	p, err := openPinned(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	st, err := p.stat()
	if err != nil {
		t.Fatal(err)
	}
	return st.name, nil
}

func fieldOf(err error) string {
	if e := contract.AsError(err); e != nil {
		return e.Field
	}
	return ""
}

// TestOwnerNameErrorNamesRealKinds: the owner_name error must not offer
// process_info as a start_capture kind (get_process_info takes no filter;
// its result is only readable with read_capture selectors).
func TestOwnerNameErrorNamesRealKinds(t *testing.T) {
	for _, k := range []string{KindOpenFiles, KindModules} {
		err := Filter{OwnerName: "sshd"}.Validate(k, "/filter")
		if err == nil {
			t.Fatalf("%s accepted owner_name", k)
		}
		msg := err.Error()
		if strings.Contains(msg, "scheduling and process_info") || !strings.Contains(msg, "threads and scheduling captures") || !strings.Contains(msg, "get_process_info results read with read_capture") {
			t.Fatalf("%s: %s", k, msg)
		}
	}
	for _, k := range Kinds {
		if k == KindProcessInfo {
			t.Fatal("process_info is not a start_capture kind")
		}
	}
}

// FuzzPathBytesFilter: a path_bytes filter of any byte string with a
// non-space term selects a row whose path holds those exact bytes, and a
// query in which one byte that is not UTF-8 was replaced by U+FFFD (what a
// lossy string carries) does not select it.
func FuzzPathBytesFilter(f *testing.F) {
	for _, s := range []string{"/tmp/bad\xffbyte.txt", "/tmp/caf\xe9", "/x (deleted)", "/a b\tc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		row := &Row{Path: path}
		flt := Filter{PathBytes: sample.EncodeBytes(path)}
		if len(strings.Fields(path)) == 0 {
			if flt.Validate(KindOpenFiles, "") == nil && path != "" {
				t.Fatalf("blank path_bytes %q accepted", path)
			}
			return
		}
		if err := flt.Validate(KindOpenFiles, ""); err != nil {
			t.Fatalf("Validate(%q): %v", path, err)
		}
		if !flt.Match(row) {
			t.Fatalf("path_bytes %q does not match itself", path)
		}
		if sample.Lossy(path) && !strings.Contains(path, "\uFFFD") {
			lossy := Filter{PathBytes: sample.EncodeBytes(sample.Display(path))}
			if lossy.Validate(KindOpenFiles, "") == nil && lossy.Match(row) {
				t.Fatalf("the display form of %q matched its exact bytes", path)
			}
		}
	})
}
