package ledger

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/contract"
)

func code(err error) contract.Code { return contract.CodeOf(err) }

func TestDedupMismatchBusy(t *testing.T) {
	l := New()
	op, dup, err := l.Begin("op1", "update_tracking", "h1")
	if err != nil || dup {
		t.Fatal(err, dup)
	}
	// While op1 holds the slot another id is BUSY.
	if _, _, err := l.Begin("op2", "update_tracking", "h2"); code(err) != contract.CodeBusy {
		t.Fatalf("second mutation: %v", err)
	}
	// The same id with the same arguments is the same operation.
	again, dup, err := l.Begin("op1", "update_tracking", "h1")
	if err != nil || !dup || again != op {
		t.Fatalf("dup: %v %v", dup, err)
	}
	// The same id with other arguments or another tool is rejected.
	if _, _, err := l.Begin("op1", "update_tracking", "hX"); code(err) != contract.CodeStateConflict {
		t.Fatalf("mismatch: %v", err)
	}
	if _, _, err := l.Begin("op1", "update_profile", "h1"); code(err) != contract.CodeStateConflict {
		t.Fatalf("tool mismatch: %v", err)
	}
	op.Finish(map[string]any{"revision": "r2"}, nil)
	st, err := l.Get("op1")
	if err != nil || st.State != Succeeded || st.Result["revision"] != "r2" {
		t.Fatalf("get: %+v %v", st, err)
	}
	if _, _, err := l.Begin("op2", "update_tracking", "h2"); err != nil {
		t.Fatalf("slot not released: %v", err)
	}
	if _, err := l.Get("nope"); code(err) != contract.CodeOperationUnknown {
		t.Fatalf("unknown: %v", err)
	}
}

func TestConfirmDenyTimeoutCancel(t *testing.T) {
	cases := []struct {
		name   string
		act    func(l *Ledger, op *Op)
		state  State
		code   contract.Code
		called bool
	}{
		{"confirm", func(l *Ledger, op *Op) {
			if _, err := l.Decide(op.Status().ID, true); err != nil {
				t.Error(err)
			}
		}, Succeeded, "", true},
		{"deny", func(l *Ledger, op *Op) { l.Decide(op.Status().ID, false) }, Failed, contract.CodeCancelled, false},
		{"timeout", func(l *Ledger, op *Op) { <-op.Done() }, Failed, contract.CodeTimeout, false},
		{"disconnect", func(l *Ledger, op *Op) { op.Cancel("the requesting connection closed") }, Failed, contract.CodeCancelled, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := New()
			l.ConfirmTimeout = 300 * time.Millisecond
			if c.name != "timeout" {
				l.ConfirmTimeout = time.Minute
			}
			op, _, _ := l.Begin("op", "update_profile", "h")
			var called atomic.Bool
			op.AwaitConfirmation(map[string]any{"action": "delete"}, func() (map[string]any, error) {
				called.Store(true)
				return map[string]any{"deleted": true}, nil
			})
			if st := op.Status(); st.State != PendingConfirmation || st.Action["action"] != "delete" {
				t.Fatalf("state %+v", st)
			}
			if len(l.PendingConfirmations()) != 1 {
				t.Fatal("not listed as pending confirmation")
			}
			if _, _, err := l.Begin("other", "update_tracking", "h"); code(err) != contract.CodeBusy {
				t.Fatalf("pending confirmation must hold the slot: %v", err)
			}
			c.act(l, op)
			<-op.Done()
			st := op.Status()
			if st.State != c.state || called.Load() != c.called {
				t.Fatalf("state %s called %v", st.State, called.Load())
			}
			if c.code != "" && (st.Err == nil || st.Err.Code != c.code) {
				t.Fatalf("err %+v", st.Err)
			}
			if _, err := l.Decide("op", true); code(err) != contract.CodeStateConflict {
				t.Fatalf("late decision: %v", err)
			}
		})
	}
}

func TestTimeoutFromSubmission(t *testing.T) {
	l := New()
	now := time.Now()
	l.now = func() time.Time { return now }
	// An hour-long timeout whose overlay appears 100 ms before it ends: a
	// timer measured from the display would wait an hour, one measured
	// from submission ends at once, so no machine load can blur the two.
	l.ConfirmTimeout = time.Hour
	op, _, _ := l.Begin("op", "update_profile", "h")
	now = now.Add(time.Hour - 100*time.Millisecond)
	start := time.Now()
	op.AwaitConfirmation(nil, func() (map[string]any, error) { return nil, nil })
	<-op.Done()
	if d := time.Since(start); d > 30*time.Minute {
		t.Fatalf("timeout measured from display, not submission: %v", d)
	}
}

func TestRetention(t *testing.T) {
	l := New()
	now := time.Now()
	l.now = func() time.Time { return now }
	for i := 0; i < MaxOutcomes+10; i++ {
		op, _, err := l.Begin(fmt.Sprint("op", i), "t", "h")
		if err != nil {
			t.Fatal(err)
		}
		op.Finish(nil, errors.New("boom"))
	}
	if _, err := l.Get("op0"); code(err) != contract.CodeOperationUnknown {
		t.Fatal("more than MaxOutcomes retained")
	}
	if st, err := l.Get("op10"); err != nil || st.Err.Code != contract.CodeInternalError {
		t.Fatalf("op10: %v %+v", err, st)
	}
	now = now.Add(Retention + time.Second)
	if _, err := l.Get(fmt.Sprint("op", MaxOutcomes+9)); code(err) != contract.CodeOperationUnknown {
		t.Fatal("retained beyond 24 h")
	}
}

func TestConcurrentBegin(t *testing.T) {
	l := New()
	var wg sync.WaitGroup
	var won, busy atomic.Int32
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, _, err := l.Begin(fmt.Sprint("c", i), "t", "h")
			switch code(err) {
			case "":
				won.Add(1)
			case contract.CodeBusy:
				busy.Add(1)
			}
		}(i)
	}
	wg.Wait()
	if won.Load() != 1 || busy.Load() != 15 {
		t.Fatalf("won %d busy %d", won.Load(), busy.Load())
	}
}

// Lookup answers a known id without registering anything or taking the
// mutation slot.
func TestLookup(t *testing.T) {
	l := New()
	op, _, err := l.Begin("op1", "update_tracking", "h1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, id, tool, hash string
		want                 *Op
		code                 contract.Code
	}{
		{"same arguments", "op1", "update_tracking", "h1", op, ""},
		{"other arguments", "op1", "update_tracking", "h2", nil, contract.CodeStateConflict},
		{"other tool", "op1", "update_profile", "h1", nil, contract.CodeStateConflict},
		{"unknown id", "op9", "update_tracking", "h1", nil, ""},
	} {
		got, err := l.Lookup(c.id, c.tool, c.hash)
		if got != c.want || code(err) != c.code {
			t.Errorf("%s: %v %v", c.name, got, err)
		}
	}
	if _, err := l.Get("op9"); code(err) != contract.CodeOperationUnknown {
		t.Fatalf("Lookup registered op9: %v", err)
	}
	op.Finish(nil, nil)
	if _, _, err := l.Begin("op2", "update_tracking", "h1"); err != nil {
		t.Fatalf("slot after Lookup: %v", err)
	}
}
