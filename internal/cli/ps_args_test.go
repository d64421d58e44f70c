package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/host"
	"github.com/inquest-dev/inquest/internal/sample"
	"github.com/inquest-dev/inquest/internal/tool"
)

// psSchemaRegistry is the registry `inquest ps` builds (list_processes
// only, the CLI's bridge); its Validate is the check ps skips when psArgs
// reports its arguments as checked.
func psSchemaRegistry(t testing.TB) *tool.Registry {
	t.Helper()
	rt, err := newProcRuntime(context.Background(), runtimeOptions{ProcTools: []string{"list_processes"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt.Registry
}

// checkPsArgs fails when psArgs vouches for arguments the schema rejects
// (skipping validation would then change the answer), or, with exact,
// when it does not vouch for arguments the schema accepts.
func checkPsArgs(t testing.TB, reg *tool.Registry, sortKey, order, name string, limit int, limitSet, table, exact bool) {
	t.Helper()
	raw, checked := psArgs(sortKey, order, name, limit, limitSet, table)
	err := reg.Validate("list_processes", raw)
	if checked && err != nil {
		t.Fatalf("psArgs(%q, %q, %q, %d) vouches for %s, which the schema rejects: %v", sortKey, order, name, limit, raw, err)
	}
	if exact && !checked && err == nil {
		t.Fatalf("psArgs(%q, %q, %q, %d) does not vouch for %s, which the schema accepts", sortKey, order, name, limit, raw)
	}
}

// TestPsArgsChecked: for every sort key and alias ps takes, every order,
// names at and past the schema's bounds (characters, not bytes; bytes that
// are not UTF-8 as name_bytes) and limits, the arguments ps sends without
// validation (checked) pass the list_processes schema, and those it does
// not vouch for are exactly the ones the schema rejects (they go through
// Registry.Call, whose INVALID_ARGUMENT the user sees as before).
func TestPsArgsChecked(t *testing.T) {
	reg := psSchemaRegistry(t)
	sorts := []string{"pid", "name"}
	for _, m := range sample.ProcessMetrics {
		sorts = append(sorts, m.ID)
	}
	for a := range metricAliases {
		sorts = append(sorts, a)
	}
	keys := map[string]bool{}
	for _, s := range sorts {
		k, err := psSortKey(s)
		if err != nil {
			t.Fatalf("psSortKey(%q): %v", s, err)
		}
		keys[k] = true
	}
	names := []string{"", "a", "sleep", "\x00", "ü", strings.Repeat("ü", 256), strings.Repeat("ü", 257), strings.Repeat("a", 257),
		"\xff", "a\xffb", strings.Repeat("\xff", 258), strings.Repeat("\xff", 259), strings.Repeat("é", 255) + "\xff"}
	for k := range keys {
		for _, order := range []string{"", "asc", "desc", "ASC", "up"} {
			for _, name := range names {
				for _, lim := range []struct {
					n   int
					set bool
				}{{0, false}, {1, true}, {host.MaxPageRows, true}} {
					for _, table := range []bool{true, false} {
						checkPsArgs(t, reg, k, order, name, lim.n, lim.set, table, true)
					}
				}
			}
		}
	}
	// The common call is vouched for: `inquest ps` compiles no schema.
	if _, checked := psArgs("pid", "", "", 0, false, true); !checked {
		t.Fatal("plain ps is not checked")
	}
}

// FuzzPsArgs: whatever --sort, --order, --name and --limit a user gives,
// the arguments ps vouches for pass the schema, and the ones it does not
// are rejected by it (so validating them reports what is wrong).
func FuzzPsArgs(f *testing.F) {
	reg := psSchemaRegistry(f)
	f.Add("pid", "", "", 0, false)
	f.Add("cpu", "desc", "sleep", 10, true)
	f.Add("rss", "asc", "\xff\xfe", 5000, true)
	f.Add("name", "bogus", strings.Repeat("ü", 257), 1, true)
	f.Fuzz(func(t *testing.T, sortBy, order, name string, limit int, limitSet bool) {
		k, err := psSortKey(sortBy)
		if err != nil {
			return // refused before any arguments are built
		}
		if limitSet && (limit < 1 || limit > host.MaxPageRows) {
			return // refused before any arguments are built
		}
		checkPsArgs(t, reg, k, order, name, limit, limitSet, true, true)
	})
}

// TestPsUncheckedArgsValidated: flag values ps does not vouch for go
// through the schema as before: `inquest ps` prints the INVALID_ARGUMENT
// naming the argument and what it accepts, exit 1, nothing on stdout, and
// reaches no host (the in-process host would answer a call that got past
// validation).
func TestPsUncheckedArgsValidated(t *testing.T) {
	for _, k := range []string{"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		t.Setenv(k, t.TempDir())
	}
	t.Setenv("INQUEST_IN_PROCESS", "1")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"ps", "--order", "up"}, []string{"INVALID_ARGUMENT", `flag: --order "up"`, `accepted: one of asc, desc`}},
		{[]string{"ps", "--name", strings.Repeat("ü", 257)}, []string{"INVALID_ARGUMENT", "flag: --name"}},
		{[]string{"ps", "--name", strings.Repeat("\xff", 259)}, []string{"INVALID_ARGUMENT", "flag: --name"}},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
		if code != 1 || out.Len() != 0 {
			t.Errorf("%.40q: exit %d, stdout %q", c.args, code, out.String())
		}
		for _, w := range c.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%.40q: stderr %q lacks %q", c.args, errb.String(), w)
			}
		}
	}
}
