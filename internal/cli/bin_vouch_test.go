package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/inquest-dev/inquest/internal/tool"
)

// TestVouchInspectArgs: the inspect_binary arguments `inquest bin inspect`
// sends without schema validation (vouchInspectArgs true) pass the
// tool's schema, and those it refuses are exactly the ones the schema
// rejects (they go through Registry.Call, whose INVALID_ARGUMENT the user
// sees as before). Paths that are not UTF-8 never reach the call
// (utf8Paths refuses them first), so for them only the first half holds.
func TestVouchInspectArgs(t *testing.T) {
	rt := &Runtime{Registry: tool.NewRegistry()}
	defer rt.Close()
	if err := buildBin(context.Background(), rt, runtimeOptions{NoHost: true}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 4096) // 4096 characters, 8192 bytes
	base := func(kv ...any) map[string]any {
		m := map[string]any{"path": "/usr/bin/ls"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name  string
		args  map[string]any
		exact bool
	}{
		{"path only", base(), true},
		{"default facets", base("facets", []string{"sections", "members"}), true},
		{"no path", map[string]any{"facets": []string{"sections"}}, true},
		{"empty path", base("path", ""), true},
		{"path 4096 characters", base("path", "/"+long[2:]), true},
		{"path 4097 characters", base("path", "/"+long), true},
		{"path not UTF-8", base("path", "/tmp/\xff"), false},
		{"digests", base("digests", true), true},
		{"digests false", base("digests", false), true},
		{"every arch", base("arch", "x86_64"), true},
		{"arch arm64", base("arch", "arm64"), true},
		{"arch ppc64", base("arch", "ppc64"), true},
		{"arch empty", base("arch", ""), true},
		{"arch bogus", base("arch", "mips"), true},
		{"every facet", base("facets", []string{"sections", "segments", "imports", "exports", "libraries", "members", "go_deps", "dwarf_producers"}), true},
		{"nine facets", base("facets", []string{"sections", "segments", "imports", "exports", "libraries", "members", "go_deps", "dwarf_producers", "sections"}), true},
		{"facet twice", base("facets", []string{"sections", "sections"}), true},
		{"facet bogus", base("facets", []string{"symbols"}), true},
		{"facets empty", base("facets", []string{}), true},
		{"facet empty name", base("facets", []string{""}), true},
		{"limit 1", base("limit", 1), true},
		{"limit 1000", base("limit", 1000), true},
		{"limit 0", base("limit", 0), true},
		{"limit 1001", base("limit", 1001), true},
		{"limit -1", base("limit", -1), true},
		{"cursor", base("cursor", "abc"), true},
		{"cursor empty", base("cursor", ""), true},
		{"cursor 4096 characters", base("cursor", long), true},
		{"cursor 4097 characters", base("cursor", long+"x"), true},
		{"unknown argument", base("max", 3), true},
		{"everything", base("arch", "arm", "digests", true, "facets", []string{"imports"}, "limit", 7, "cursor", "c"), true},
	}
	for _, c := range cases {
		raw, err := json.Marshal(c.args)
		if err != nil {
			t.Fatal(err)
		}
		vouched := vouchInspectArgs(c.args)
		verr := rt.Registry.Validate("inspect_binary", raw)
		if vouched && verr != nil {
			t.Errorf("%s: vouched for arguments the schema rejects: %v", c.name, verr)
		}
		if c.exact && !vouched && verr == nil {
			t.Errorf("%s: refused arguments the schema accepts", c.name)
		}
	}
}
