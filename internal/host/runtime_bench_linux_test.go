package host

import (
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/managed/jvmtest"
	"github.com/inquest-dev/inquest/internal/sample"
)

// BenchmarkRuntimeTick measures one sampler tick with 10 authorized JVMs
// (the platform collector plus 10 performance-data reads) beside the
// platform collector alone over the same process table, in the same run:
// the difference is what runtime collection adds to the 1 s tick.
func BenchmarkRuntimeTick(b *testing.B) {
	jdk := jvmtest.Default(b)
	var ids []sample.Identity
	var pids []int
	for i := 0; i < 10; i++ {
		pids = append(pids, jvmtest.Start(b, jdk).PID)
	}
	inner, err := sample.NewCollector()
	if err != nil {
		b.Fatal(err)
	}
	snap, err := inner.Collect(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, pid := range pids {
		p := snap.Find(int32(pid))
		if p == nil {
			b.Fatalf("pid %d not in the snapshot", pid)
		}
		ids = append(ids, p.ID())
	}
	b.Run("platform", func(b *testing.B) {
		prev := snap
		for b.Loop() {
			if prev, err = inner.Collect(prev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("10_jvms", func(b *testing.B) {
		rc := newRuntimeCollector(inner)
		for _, id := range ids {
			rc.auth[id] = &runtimeAuth{id: id, enabled: true, since: time.Now()}
		}
		prev := snap
		for b.Loop() {
			if prev, err = rc.Collect(prev); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		for _, id := range ids {
			if p := prev.Lookup(id); p == nil || !p.Has(sample.PJVMHeapCommitted) {
				b.Fatalf("JVM %d not collected: %+v", id.PID, rc.auth[id])
			}
		}
	})
}
