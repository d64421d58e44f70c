package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// toolsListTarget is what tools/list should weigh with every toolset
// published (every agent reads the whole list before its first call). It
// is not met yet: the 53 tools weigh about 175 KB (output envelopes about
// 69 KB, input schemas about 72 KB, descriptions about 14 KB); the test
// logs the gap.
const toolsListTarget = 80 << 10

// toolsListCeiling is the regression guard the test enforces until the
// target is met: the size reached when the descriptions were cut, with
// a little room. Lower it as the catalog shrinks; never raise it without
// a reason recorded here.
const toolsListCeiling = 180 << 10

// TestToolsListSize measures tools/list of the real `inquest mcp` as a
// client receives it (the compact JSON of the tools array), per toolset
// and for all three, with each toolset's bytes split into descriptions,
// input schemas and output schemas, and holds the total under the
// ceiling (logging the distance to the target).
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
		t.Logf("tools/list is %d bytes, %d over the %d-byte target", all.total, all.total-toolsListTarget, toolsListTarget)
	}
	if all.total > toolsListCeiling {
		t.Errorf("tools/list is %d bytes, over the %d-byte ceiling (it grew):\n%s", all.total, toolsListCeiling, report.String())
	}
}
