package history

import (
	"testing"
	"time"
)

// An exec changes the name within one lifetime: the store keeps every
// name with the time of its first sample, Name is the latest, a lifetime
// that execs into a tracked name becomes tracked, and a tracked name
// matches any name the lifetime had.
func TestStoreExecNames(t *testing.T) {
	st := NewStore()
	base := time.Unix(1_700_000_000, 0)
	st.now = func() time.Time { return base.Add(10 * time.Second) }
	st.SetTracking([]string{"python3.11"})
	st.Apply(snapOf(1, base, fakeProc{pid: 10, ticks: 5, name: "bash"}))
	st.Apply(snapOf(2, base.Add(time.Second), fakeProc{pid: 10, ticks: 5, name: "bash"}))
	_, lt, _ := st.Process(snapOf(0, base, fakeProc{pid: 10, ticks: 5}).Procs[0].ID())
	if lt.Tracked || len(lt.Names) != 1 {
		t.Fatalf("before exec: %+v", lt)
	}
	st.Apply(snapOf(3, base.Add(2*time.Second), fakeProc{pid: 10, ticks: 5, name: "python3.11"}))
	_, lt, _ = st.Process(lt.ID)
	if lt.Name != "python3.11" || len(lt.Names) != 2 || lt.Names[0].Name != "bash" || !lt.Names[1].At.Equal(base.Add(2*time.Second)) {
		t.Fatalf("after exec: %+v", lt)
	}
	if !lt.Tracked || lt.Capacity != TrackedCapacity {
		t.Fatalf("exec into a tracked name is not tracked: %+v", lt)
	}
	if !lt.MatchesAny("BASH") || !lt.MatchesAny("python3.11") || lt.MatchesAny("python3") {
		t.Fatal("MatchesAny")
	}
	// a process that execs in a loop keeps a bounded history of names
	for i := 0; i < 3*MaxNameSpans; i++ {
		n := "n" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		st.Apply(snapOf(uint64(4+i), base.Add(time.Duration(3+i)*time.Second), fakeProc{pid: 10, ticks: 5, name: n}))
	}
	_, lt, _ = st.Process(lt.ID)
	if len(lt.Names) != MaxNameSpans || lt.Names[0].Name != "bash" || lt.Names[len(lt.Names)-1].Name != lt.Name {
		t.Fatalf("bounded names: %d, first %q, last %q (latest %q)", len(lt.Names), lt.Names[0].Name, lt.Names[len(lt.Names)-1].Name, lt.Name)
	}
}
