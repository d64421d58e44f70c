package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestControlToolsReturnResults makes the control tools that other tests
// here reach only through the TUI return real results over stdio, so the
// result check (checkResults) validates them against their published
// output schemas too: add_graphs on the revision get_graphs gave,
// release_capture of a retained capture, and set_runtime_collection on a
// JVM this test starts (it stays pending_confirmation: nothing here
// confirms it). Each call must succeed.
func TestControlToolsReturnResults(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("captures and the JVM runtime reader here are Linux's")
	}
	env := isolatedEnv(t)
	cs := connect(t, env, "2025-11-25", "--toolsets", "proc")
	ok := func(name string, args map[string]any) map[string]any {
		t.Helper()
		m, isErr := call(t, cs, name, args)
		if isErr {
			t.Fatalf("%s: %v", name, m["error"])
		}
		d, _ := m["data"].(map[string]any)
		return d
	}
	g := ok("get_graphs", map[string]any{})
	ok("add_graphs", map[string]any{"metrics": []any{map[string]any{"metric_id": "load1"}}, "operation_id": "outschema-1", "expected_revision": g["revision"]})

	c := ok("start_capture", map[string]any{"kind": "open_files", "pid": os.Getpid(), "retain_capture": true})
	id, _ := c["capture_id"].(string)
	if id == "" {
		t.Fatalf("start_capture retained no capture: %v", c)
	}
	ok("release_capture", map[string]any{"capture_id": id})

	if _, err := exec.LookPath("java"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("java is required under CI (Debian: default-jdk-headless)")
		}
		t.Skip("no java here: set_runtime_collection needs a JVM")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "Sleep.java")
	os.WriteFile(src, []byte("public class Sleep { public static void main(String[] a) throws Exception { Thread.sleep(600000); } }\n"), 0o644)
	jvm := exec.Command("java", src)
	jvm.Dir = dir
	if err := jvm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jvm.Process.Kill(); jvm.Wait() })
	// Wait (bounded only to catch a hang) until the JVM publishes its
	// performance data and inquest reads it.
	var rt map[string]any
	deadline := time.Now().Add(3 * time.Minute)
	for {
		m, isErr := call(t, cs, "get_runtime_collection", map[string]any{"pid": jvm.Process.Pid})
		rt, _ = m["data"].(map[string]any)
		if !isErr && rt["supported"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the JVM's runtime never became readable: %v", m)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ok("set_runtime_collection", map[string]any{"pid": jvm.Process.Pid, "enabled": true, "operation_id": "outschema-rt", "expected_revision": rt["revision"], "wait_ms": 0})
}
