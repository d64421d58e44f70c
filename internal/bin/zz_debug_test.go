package bin

import (
	"context"
	"encoding/json"
	"os"
	"testing"
)

func TestZZDebug(t *testing.T) {
	p := os.Getenv("ZZ")
	if p == "" {
		t.Skip()
	}
	f, err := ReadFile(p, "/path", MaxInputBytes)
	if err != nil {
		t.Fatal(err)
	}
	in, err := Inspect(context.Background(), f.Data)
	if err != nil {
		t.Fatal(err)
	}
	in.Sections = in.Sections[:min(3, len(in.Sections))]
	in.Imports = in.Imports[:min(3, len(in.Imports))]
	in.Exports = in.Exports[:min(3, len(in.Exports))]
	if in.GoBuildInfo != nil {
		in.GoBuildInfo.Deps = nil
	}
	b, _ := json.MarshalIndent(in, "", " ")
	os.Stdout.Write(b)
}
