package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// toolsListTarget is the most tools/list may weigh with every toolset
// published: every agent reads the whole list before its first call.
const toolsListTarget = 80 << 10

// TestToolsListSize measures tools/list of the real `inquest mcp` as a
// client receives it (the compact JSON of the tools array), per toolset
// and for all three, with each toolset's bytes split into descriptions,
// input schemas and output schemas, and holds the total to the target.
func TestToolsListSize(t *testing.T) {
	env := isolatedEnv(t)
	type size struct{ tools, total, desc, input, output int }
	measure := func(args ...string) size {
		cs := connect(t, env, "2025-11-25", args...)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.Tools)
		s := size{tools: len(res.Tools), total: len(b)}
		for _, tl := range res.Tools {
			in, _ := json.Marshal(tl.InputSchema)
			out, _ := json.Marshal(tl.OutputSchema)
			d, _ := json.Marshal(tl.Description)
			s.desc += len(d)
			s.input += len(in)
			s.output += len(out)
		}
		return s
	}
	var report strings.Builder
	sum := 0
	for _, set := range []string{"proc", "perf", "bin"} {
		s := measure("--toolsets", set)
		sum += s.total
		fmt.Fprintf(&report, "%-4s %2d tools %7d bytes (descriptions %d, input schemas %d, output schemas %d)\n", set, s.tools, s.total, s.desc, s.input, s.output)
	}
	all := measure()
	fmt.Fprintf(&report, "all  %2d tools %7d bytes (target %d)\n", all.tools, all.total, toolsListTarget)
	t.Logf("tools/list sizes:\n%s", report.String())
	if all.total < sum-2 || all.total > sum+2 {
		t.Errorf("all toolsets weigh %d bytes, the toolsets apart %d: the catalog is not the union of its toolsets", all.total, sum)
	}
	if all.total > toolsListTarget {
		t.Errorf("tools/list is %d bytes, over the %d-byte target:\n%s", all.total, toolsListTarget, report.String())
	}
}
