package setup

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

var fuzzEntry = entryObject{{"command", "/usr/bin/inquest"}, {"args", []string{"mcp"}}}

// FuzzJSONEdit: on any input the JSON editor either refuses with an error
// or produces a document that parses, holds the entry, and from which
// removal gives back a document meaning what the input meant (and, when the
// input had no entry, its exact bytes unless it had an empty container or
// an empty root object, whose layouts setup cannot tell apart); a second upsert changes nothing. It never panics.
func FuzzJSONEdit(f *testing.F) {
	for _, s := range fixtures {
		f.Add(s)
	}
	for _, s := range []string{"", "{}", "{\"mcpServers\": {}}", "{\"mcpServers\": {\"inquest\": {\"env\": {}}}}", "// c\n{\"a\": [1, {\"b\": null}],}", "{\"mcpServers\": 1}", "[]", "{\"a\":1,\"a\":2}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		up, err := upsertJSON("f.json", []byte(doc), "mcpServers", ServerName, fuzzEntry)
		if err != nil {
			return
		}
		again, err := upsertJSON("f.json", up.out, "mcpServers", ServerName, fuzzEntry)
		if err != nil || again.changed {
			t.Fatalf("second upsert: changed %v err %v\n%q", again.changed, err, up.out)
		}
		e, err := readJSONEntry("f.json", up.out, "mcpServers", ServerName)
		if err != nil || e["command"] != "/usr/bin/inquest" {
			t.Fatalf("entry after upsert: %v %v", e, err)
		}
		rm, err := removeJSON("f.json", up.out, "mcpServers", ServerName)
		if err != nil {
			t.Fatalf("remove: %v\n%q", err, up.out)
		}
		if e, _ := readJSONEntry("f.json", rm.out, "mcpServers", ServerName); e != nil {
			t.Fatalf("entry after remove: %v", e)
		}
		before := decodeJSONC([]byte(doc))
		if c, ok := before["mcpServers"].(map[string]any); ok {
			if _, had := c[ServerName]; had {
				return // the input had an entry: removal drops it, not compared
			}
			if len(c) == 0 {
				delete(before, "mcpServers") // an empty container goes with the entry
			} else if string(rm.out) != doc {
				t.Fatalf("setup + remove did not give back the bytes:\n%q\n%q", doc, rm.out)
			}
		} else if _, present := before["mcpServers"]; !present && len(before) > 0 && string(rm.out) != doc {
			t.Fatalf("setup + remove did not give back the bytes:\n%q\n%q", doc, rm.out)
		}
		if after := decodeJSONC(rm.out); !reflect.DeepEqual(before, after) {
			t.Fatalf("setup + remove changed the meaning:\n%q\n%q", doc, rm.out)
		}
	})
}

// FuzzTOMLEdit: the same properties for Codex's config.toml (exact bytes
// when the input ends with a newline).
func FuzzTOMLEdit(f *testing.F) {
	f.Add(fixtures["codex"])
	for _, s := range []string{"", "a = 1", "[mcp_servers]\n", "[mcp_servers.inquest]\nenv = {}\n", "x = \"\"\"\n[mcp_servers.inquest]\n\"\"\"\n", "[[mcp_servers.inquest]]\n", "a.b = 1\n"} {
		f.Add(s)
	}
	table := []string{"mcp_servers", ServerName}
	f.Fuzz(func(t *testing.T, doc string) {
		up, err := upsertTOML("c.toml", []byte(doc), table, fuzzEntry)
		if err != nil {
			return
		}
		again, err := upsertTOML("c.toml", up.out, table, fuzzEntry)
		if err != nil || again.changed {
			t.Fatalf("second upsert: changed %v err %v\n%q", again.changed, err, up.out)
		}
		rm, err := removeTOML("c.toml", up.out, table)
		if err != nil {
			t.Fatalf("remove: %v\n%q", err, up.out)
		}
		var before, after map[string]any
		if toml.Unmarshal([]byte(doc), &before) != nil || toml.Unmarshal(rm.out, &after) != nil {
			t.Fatalf("does not parse after remove:\n%q", rm.out)
		}
		if before == nil {
			before = map[string]any{}
		}
		if after == nil {
			after = map[string]any{}
		}
		if m := lookup(before, table); m != nil {
			return // the input had an entry: removal drops it, not compared
		}
		if len(doc) > 0 && doc[len(doc)-1] == '\n' && len(bytes.TrimSpace([]byte(doc))) > 0 && string(rm.out) != doc {
			t.Fatalf("setup + remove did not give back the bytes:\n%q\n%q", doc, rm.out)
		}
		dropEmptyTables(before)
		dropEmptyTables(after)
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("setup + remove changed the meaning:\n%q\n%q", doc, rm.out)
		}
	})
}
