package jobs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inquest-dev/inquest/internal/capture"
	"github.com/inquest-dev/inquest/internal/contract"
)

// clock is a manual clock for expiry tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTest(l Limits) (*Manager, *clock) {
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	return NewManager(l, c.now), c
}

// rows returns a collector producing n rows with paths /d/fN.ext.
func rows(n int, ext string) func(context.Context) (*capture.Capture, error) {
	return func(context.Context) (*capture.Capture, error) {
		c := &capture.Capture{Kind: capture.KindFileUsers, Coverage: map[string]any{"n": n}}
		for i := 0; i < n; i++ {
			p := fmt.Sprintf("/d/f%d%s", i%7, ext)
			c.Rows = append(c.Rows, capture.Row{Path: p, Owner: "Own", Comm: "own-comm", Fields: []capture.Field{{Key: "pid", Value: i}, {Key: "path", Value: p}}})
		}
		return c, nil
	}
}

// blocker returns a collector that blocks until release is closed,
// ignoring ctx (a native call that cannot be interrupted).
func blocker(release chan struct{}) func(context.Context) (*capture.Capture, error) {
	return func(context.Context) (*capture.Capture, error) {
		<-release
		return &capture.Capture{Kind: "x", Coverage: map[string]any{}}, nil
	}
}

func code(err error) contract.Code { return contract.CodeOf(err) }

func waitDone(t *testing.T, s *Session, id string) Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // ends a hang only
	defer cancel()
	j, err := s.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State == Running {
		t.Fatalf("job %s still running", id)
	}
	return j
}

func waitNative(t *testing.T, s *Session, id string) Job {
	t.Helper()
	// The native call returns on its own goroutine: poll its record; the
	// 2-minute bound only ends a hang (5 s could pass on a loaded machine).
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		j, err := s.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		if !j.NativeRunning {
			return j
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("native work did not finish")
	return Job{}
}

func TestThirdActiveJobIsBusy(t *testing.T) {
	m, _ := newTest(DefaultLimits())
	s := m.NewSession()
	defer s.Close()
	rel := make(chan struct{})
	a, err := s.Start(Spec{Kind: "x", Run: blocker(rel)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(Spec{Kind: "x", Run: blocker(rel)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(Spec{Kind: "x", Run: blocker(rel)}); code(err) != contract.CodeBusy {
		t.Fatalf("third active job: %v", err)
	}
	close(rel)
	waitDone(t, s, a.ID)
	waitNative(t, s, a.ID)
}

func TestGlobalWorkerSlotsAndScanSlot(t *testing.T) {
	l := DefaultLimits()
	l.Workers = 3
	m, _ := newTest(l)
	s1, s2 := m.NewSession(), m.NewSession()
	defer s1.Close()
	defer s2.Close()
	rel := make(chan struct{})
	j1, _ := s1.Start(Spec{Kind: capture.KindFileUsers, Exclusive: true, Run: blocker(rel)})
	// one file-users scan host-wide, across sessions
	if _, err := s2.Start(Spec{Kind: capture.KindFileUsers, Exclusive: true, Run: blocker(rel)}); code(err) != contract.CodeBusy {
		t.Fatalf("second scan: %v", err)
	}
	s1.Start(Spec{Kind: "x", Run: blocker(rel)})
	s2.Start(Spec{Kind: "x", Run: blocker(rel)})
	if m.Busy() != 3 {
		t.Fatalf("busy %d", m.Busy())
	}
	if _, err := s2.Start(Spec{Kind: "x", Run: blocker(rel)}); code(err) != contract.CodeBusy {
		t.Fatalf("no worker slot: %v", err)
	}
	// cancelling does not free the slot while the native call still runs
	c, _ := s1.Cancel(j1.ID)
	if c.State != Failed || c.Err.Code != contract.CodeCancelled || !c.NativeRunning || !c.CancelRequested {
		t.Fatalf("cancelled job %+v", c)
	}
	if m.Busy() != 3 {
		t.Fatalf("slot freed before native work returned: %d", m.Busy())
	}
	close(rel)
	j := waitNative(t, s1, j1.ID)
	if j.State != Failed || j.Err.Code != contract.CodeCancelled {
		t.Fatalf("late result changed a cancelled job: %+v", j)
	}
	// The other jobs' blockers return on their own goroutines: wait for
	// the slots to be free (1 s was a guess a loaded machine can miss).
	for deadline := time.Now().Add(2 * time.Minute); m.Busy() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if m.Busy() != 0 {
		t.Fatalf("slots not freed: %d", m.Busy())
	}
	if _, err := s2.Start(Spec{Kind: capture.KindFileUsers, Exclusive: true, Run: rows(1, "")}); err != nil {
		t.Fatalf("scan after the first ended: %v", err)
	}
}

func TestNinthRetainedCaptureIsResourceLimit(t *testing.T) {
	m, _ := newTest(DefaultLimits())
	s := m.NewSession()
	defer s.Close()
	var caps []string
	for i := 0; i < 8; i++ {
		j, err := s.Start(Spec{Kind: "x", Run: rows(3, ".log")})
		if err != nil {
			t.Fatal(err)
		}
		j = waitDone(t, s, j.ID)
		if j.State != Succeeded {
			t.Fatalf("job %d: %+v", i, j.Err)
		}
		caps = append(caps, j.CaptureID)
	}
	_, err := s.Start(Spec{Kind: "x", Run: rows(3, ".log")})
	if code(err) != contract.CodeResourceLimit {
		t.Fatalf("ninth capture: %v", err)
	}
	if ids := err.(*contract.Error).Details["retained_capture_ids"].([]string); len(ids) != 8 {
		t.Fatalf("retained ids %v", ids)
	}
	// Recheck at completion: two jobs started with 7 retained both finish;
	// the second to finish finds the limit reached.
	if !s.Release(caps[0]) {
		t.Fatal("release")
	}
	if s.Release(caps[0]) {
		t.Fatal("release is not idempotent")
	}
	rel := make(chan struct{})
	a, _ := s.Start(Spec{Kind: "x", Run: func(ctx context.Context) (*capture.Capture, error) { <-rel; return rows(1, "")(ctx) }})
	b, _ := s.Start(Spec{Kind: "x", Run: func(ctx context.Context) (*capture.Capture, error) { <-rel; return rows(1, "")(ctx) }})
	close(rel)
	ja, jb := waitDone(t, s, a.ID), waitDone(t, s, b.ID)
	ok, limited := 0, 0
	for _, j := range []Job{ja, jb} {
		switch {
		case j.State == Succeeded:
			ok++
		case j.Err.Code == contract.CodeResourceLimit:
			limited++
		}
	}
	if ok != 1 || limited != 1 {
		t.Fatalf("completion recheck: %+v / %+v", ja, jb)
	}
}

func TestOverBudgetIsResultTooLarge(t *testing.T) {
	l := DefaultLimits()
	l.RetainedBytes = 4 << 10
	m, _ := newTest(l)
	s := m.NewSession()
	defer s.Close()
	j, _ := s.Start(Spec{Kind: "x", Run: rows(1000, ".log")})
	j = waitDone(t, s, j.ID)
	if j.State != Failed || j.Err.Code != contract.CodeResultTooLarge {
		t.Fatalf("over-budget job: %+v", j)
	}
	if _, _, b, _ := s.Usage(); b != 0 {
		t.Fatalf("a failed capture was charged: %d bytes", b)
	}
	// A capture that fits, then a derived view that does not: rejected, and
	// the source is preserved.
	j, _ = s.Start(Spec{Kind: "x", Run: rows(100, ".log")})
	j = waitDone(t, s, j.ID)
	if j.State != Succeeded {
		t.Fatalf("small job: %+v", j.Err)
	}
	src, _ := s.Capture(j.CaptureID)
	if src.Bytes*2 <= l.RetainedBytes {
		t.Fatalf("test setup: source %d bytes must be over half of %d", src.Bytes, l.RetainedBytes)
	}
	if _, err := s.View(j.CaptureID, Query{Path: "/d"}); code(err) != contract.CodeResultTooLarge {
		t.Fatalf("over-budget derived capture: %v", err)
	}
	if _, err := s.Capture(j.CaptureID); err != nil {
		t.Fatalf("source lost after rejected derive: %v", err)
	}
}

func TestExpiryAndJobDeadline(t *testing.T) {
	// The rows job runs under the default deadline: a 50 ms one (real
	// time) could fail it with TIMEOUT on a loaded machine.
	m, clk := newTest(DefaultLimits())
	s := m.NewSession()
	defer s.Close()
	j, _ := s.Start(Spec{Kind: "x", Run: rows(5, "")})
	j = waitDone(t, s, j.ID)
	v, err := s.View(j.CaptureID, Query{Extension: ".x"})
	if err != nil {
		t.Fatal(err)
	}
	clk.add(5*time.Minute - time.Second)
	if _, err := s.Capture(j.CaptureID); err != nil {
		t.Fatalf("capture gone before 5 minutes: %v", err)
	}
	clk.add(time.Second)
	if _, err := s.Capture(j.CaptureID); code(err) != contract.CodeReferenceInvalid {
		t.Fatalf("expired capture: %v", err)
	}
	if _, err := s.Capture(v.ID); code(err) != contract.CodeReferenceInvalid {
		t.Fatalf("derived capture outlived its source: %v", err)
	}
	if _, err := s.Job(j.ID); code(err) != contract.CodeReferenceInvalid {
		t.Fatalf("job record outlived 5 minutes: %v", err)
	}
	if r, d, b, _ := s.Usage(); r+d != 0 || b != 0 {
		t.Fatalf("usage after expiry: %d %d %d", r, d, b)
	}
	// the deadline fails a job that ignores ctx with TIMEOUT
	l := DefaultLimits()
	l.Deadline = 50 * time.Millisecond
	dm, _ := newTest(l)
	ds := dm.NewSession()
	defer ds.Close()
	rel := make(chan struct{})
	defer close(rel)
	j, _ = ds.Start(Spec{Kind: "x", Run: blocker(rel)})
	j = waitDone(t, ds, j.ID)
	if j.State != Failed || j.Err.Code != contract.CodeTimeout || !j.NativeRunning {
		t.Fatalf("deadline: %+v", j)
	}
}

// TestDefaultWorkerSlots: with DefaultLimits, four sessions with two
// active jobs each fill the 8 global slots; a fifth session gets BUSY.
func TestDefaultWorkerSlots(t *testing.T) {
	m, _ := newTest(DefaultLimits())
	rel := make(chan struct{})
	var ss []*Session
	for i := 0; i < 4; i++ {
		s := m.NewSession()
		ss = append(ss, s)
		for k := 0; k < 2; k++ {
			if _, err := s.Start(Spec{Kind: "x", Run: blocker(rel)}); err != nil {
				t.Fatalf("session %d job %d: %v", i, k, err)
			}
		}
	}
	s5 := m.NewSession()
	if _, err := s5.Start(Spec{Kind: "x", Run: blocker(rel)}); code(err) != contract.CodeBusy {
		t.Fatalf("ninth global job: %v", err)
	}
	close(rel)
	for _, s := range ss {
		s.Close()
	}
}

func TestJobRecordLimit(t *testing.T) {
	l := DefaultLimits()
	m, _ := newTest(l)
	s := m.NewSession()
	defer s.Close()
	fail := func(context.Context) (*capture.Capture, error) {
		return nil, contract.Errorf(contract.CodeAccessDenied, "no")
	}
	for i := 0; i < 64; i++ {
		j, err := s.Start(Spec{Kind: "x", Run: fail})
		if err != nil {
			t.Fatal(err)
		}
		if j = waitDone(t, s, j.ID); j.Err.Code != contract.CodeAccessDenied {
			t.Fatalf("collector error not kept: %+v", j.Err)
		}
	}
	if _, err := s.Start(Spec{Kind: "x", Run: fail}); code(err) != contract.CodeResourceLimit {
		t.Fatalf("65th record: %v", err)
	}
}

// Releasing a capture frees its job record: 64 completed jobs whose
// captures were released leave room for the 65th, and more. With records
// full of failed jobs and retained captures, the RESOURCE_LIMIT names the
// release_capture of the oldest retained capture as next_action, and that
// release makes room; with only failed records it says when the first
// expires and has no next_action.
func TestReleasedCaptureFreesJobRecord(t *testing.T) {
	m, clk := newTest(DefaultLimits())
	s := m.NewSession()
	defer s.Close()
	start := func(run func(context.Context) (*capture.Capture, error)) (Job, error) {
		j, err := s.Start(Spec{Kind: "x", Run: run})
		if err != nil {
			return j, err
		}
		return waitDone(t, s, j.ID), nil
	}
	var first string
	for i := 0; i < 64+10; i++ {
		j, err := start(rows(2, ".log"))
		if err != nil {
			t.Fatalf("job %d after releasing every capture: %v", i+1, err)
		}
		if first == "" {
			first = j.ID
		}
		if !s.Release(j.CaptureID) {
			t.Fatalf("release %s", j.CaptureID)
		}
	}
	if _, err := s.Job(first); code(err) != contract.CodeReferenceInvalid {
		t.Fatalf("the oldest released job's record is reused: %v", err)
	}

	s2 := m.NewSession()
	defer s2.Close()
	fail := func(context.Context) (*capture.Capture, error) {
		return nil, contract.Errorf(contract.CodeAccessDenied, "no")
	}
	var retained []string
	for i := 0; i < 64; i++ {
		run := fail
		if i >= 56 {
			run = rows(1, "")
		}
		j, err := s2.Start(Spec{Kind: "x", Run: run})
		if err != nil {
			t.Fatal(err)
		}
		if j = waitDone(t, s2, j.ID); i >= 56 {
			retained = append(retained, j.CaptureID)
		}
	}
	_, err := s2.Start(Spec{Kind: "x", Run: fail})
	e := contract.AsError(err)
	if code(err) != contract.CodeResourceLimit || e.NextAction == nil || e.NextAction.Tool != "release_capture" || e.NextAction.Arguments["capture_id"] != retained[0] {
		t.Fatalf("65th record with retained captures: %v next %+v", err, e)
	}
	if !s2.Release(retained[0]) {
		t.Fatal("release")
	}
	if _, err := s2.Start(Spec{Kind: "x", Run: fail}); err != nil {
		t.Fatalf("after releasing the named capture: %v", err)
	}

	s3 := m.NewSession()
	defer s3.Close()
	for i := 0; i < 64; i++ {
		j, err := s3.Start(Spec{Kind: "x", Run: fail})
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, s3, j.ID)
	}
	_, err = s3.Start(Spec{Kind: "x", Run: fail})
	e = contract.AsError(err)
	if code(err) != contract.CodeResourceLimit || e.NextAction != nil || !e.Retryable || e.Details["next_expiry_at"] == nil {
		t.Fatalf("65th record of failed jobs: %+v", e)
	}
	clk.add(DefaultLimits().JobLifetime)
	if _, err := s3.Start(Spec{Kind: "x", Run: fail}); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
}

func TestViewsAndPaging(t *testing.T) {
	m, _ := newTest(DefaultLimits())
	s := m.NewSession()
	defer s.Close()
	j, _ := s.Start(Spec{Kind: "x", Run: rows(70, ".LOG")})
	j = waitDone(t, s, j.ID)
	src, _ := s.Capture(j.CaptureID)
	_, _, before, _ := s.Usage()
	same, err := s.View(j.CaptureID, Query{})
	if err != nil || same != src {
		t.Fatalf("unmodified read allocated: %v", err)
	}
	if _, _, after, _ := s.Usage(); after != before {
		t.Fatal("unmodified read charged bytes")
	}
	if _, err := s.View(j.CaptureID, Query{DistinctPaths: true}); code(err) != contract.CodeInvalidArgument {
		t.Fatalf("distinct_paths without projection: %v", err)
	}
	d, err := s.View(j.CaptureID, Query{Extension: ".log", OwnerName: "own", DistinctPaths: true, Projection: []string{"path"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Rows) != 7 || string(d.Enc[0]) != `{"path":"/d/f0.LOG"}` || d.Parent != src.ID || d.Expires != src.Expires {
		t.Fatalf("derived: %d rows, first %s", len(d.Rows), d.Enc[0])
	}
	again, _ := s.View(j.CaptureID, Query{Extension: ".log", OwnerName: "own", DistinctPaths: true, Projection: []string{"path"}})
	if again != d {
		t.Fatal("the same query built a second derived capture")
	}
	if v, _ := s.View(j.CaptureID, Query{Path: "F3 /D"}); len(v.Rows) != 10 {
		t.Fatalf("all-term path filter: %d rows", len(v.Rows))
	}
	if v, _ := s.View(j.CaptureID, Query{OwnerName: "other"}); len(v.Rows) != 0 {
		t.Fatal("owner filter")
	}
	if v, _ := s.View(j.CaptureID, Query{OwnerName: "OWN-COMM"}); len(v.Rows) != 70 {
		t.Fatal("owner filter does not match the command name")
	}
	var got []string
	off := 0
	for off >= 0 {
		p, next, err := Page(src, off, 30, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p {
			got = append(got, string(r))
		}
		off = next
	}
	if len(got) != 70 || !strings.Contains(got[69], `"pid":69`) {
		t.Fatalf("paging: %d rows", len(got))
	}
	if p, next, _ := Page(src, 0, 5000, 100); len(p) == 0 || next < 0 {
		t.Fatalf("byte budget did not shorten the page: %d %d", len(p), next)
	}
	if _, _, err := Page(src, 0, 10, 5); code(err) != contract.CodeResultTooLarge {
		t.Fatalf("row over page budget: %v", err)
	}
	if _, _, err := Page(src, 71, 10, 1<<20); code(err) != contract.CodeCursorInvalid {
		t.Fatalf("offset past end: %v", err)
	}
	s.Release(src.ID)
	if _, err := s.Capture(d.ID); code(err) != contract.CodeReferenceInvalid {
		t.Fatal("derived capture survived release of its source")
	}
	if j, _ := s.Job(j.ID); !j.Consumed {
		t.Fatal("job does not report its released result consumed")
	}
}

func TestSessionCloseCancels(t *testing.T) {
	m, _ := newTest(DefaultLimits())
	s := m.NewSession()
	seen := make(chan struct{})
	j, _ := s.Start(Spec{Kind: "x", Run: func(ctx context.Context) (*capture.Capture, error) {
		<-ctx.Done()
		close(seen)
		return nil, ctx.Err()
	}})
	s.Close()
	select {
	case <-seen:
	case <-time.After(2 * time.Minute): // ends a hang only
		t.Fatal("close did not cancel the job's context")
	}
	_ = j
	if _, err := s.Start(Spec{Kind: "x", Run: rows(1, "")}); code(err) != contract.CodeBackendUnavailable {
		t.Fatalf("start on closed session: %v", err)
	}
}

// TestCancelLive: CancelLive ends the running live jobs with the given
// failure, drops a late native result, and leaves saved-log (non-live)
// jobs and finished jobs alone.
func TestCancelLive(t *testing.T) {
	m, _ := newTest(DefaultLimits())
	s := m.NewSession()
	defer s.Close()
	done, err := s.Start(Spec{Kind: capture.KindThreads, Live: true, Run: rows(1, ".so")})
	if err != nil {
		t.Fatal(err)
	}
	if j := waitDone(t, s, done.ID); j.State != Succeeded {
		t.Fatalf("finished live job: %+v", j)
	}
	release := make(chan struct{})
	live, err := s.Start(Spec{Kind: capture.KindOpenFiles, Live: true, Run: blocker(release)})
	if err != nil {
		t.Fatal(err)
	}
	saved, err := s.Start(Spec{Kind: "logs", Run: blocker(release)})
	if err != nil {
		t.Fatal(err)
	}
	why := contract.Errorf(contract.CodeCancelled, "log view").WithDetail("cause", string(contract.CodeActivityConflict))
	got := s.CancelLive(why)
	if len(got) != 1 || got[0].ID != live.ID || got[0].State != Failed || !got[0].CancelRequested {
		t.Fatalf("CancelLive returned %+v, want only %s failed", got, live.ID)
	}
	if j, _ := s.Job(live.ID); j.State != Failed || j.Err != why || !j.NativeRunning {
		t.Fatalf("cancelled live job: %+v", j)
	}
	if j, _ := s.Job(saved.ID); j.State != Running || j.CancelRequested {
		t.Fatalf("saved-log job was touched: %+v", j)
	}
	if j, _ := s.Job(done.ID); j.State != Succeeded || j.CancelRequested {
		t.Fatalf("finished job was touched: %+v", j)
	}
	if again := s.CancelLive(why); len(again) != 0 {
		t.Fatalf("second CancelLive ended %+v", again)
	}
	close(release)
	if j := waitNative(t, s, live.ID); j.State != Failed || j.CaptureID != "" || j.Err != why {
		t.Fatalf("late native result escaped the cancellation: %+v", j)
	}
	if j := waitDone(t, s, saved.ID); j.State != Succeeded {
		t.Fatalf("saved-log job: %+v", j)
	}
	// nil is the plain cancel_job failure
	release2 := make(chan struct{})
	defer close(release2)
	if _, err := s.Start(Spec{Kind: capture.KindModules, Live: true, Run: blocker(release2)}); err != nil {
		t.Fatal(err)
	}
	if got := s.CancelLive(nil); len(got) != 1 || got[0].Err == nil || got[0].Err.Code != contract.CodeCancelled {
		t.Fatalf("CancelLive(nil) = %+v", got)
	}
}

// A collector stopped at the row budget (capture.OverBudgetError) fails
// its job RESULT_TOO_LARGE with the lower bound it counted, flagged as one,
// and how far it read; nothing is retained.
func TestStoppedCollectionIsResultTooLarge(t *testing.T) {
	m, _ := newTest(DefaultLimits())
	s := m.NewSession()
	defer s.Close()
	stopped := func(context.Context) (*capture.Capture, error) {
		return nil, &capture.OverBudgetError{Kind: capture.KindOpenFiles, Counted: 64<<20 + 10, Limit: 64 << 20, Rows: 17000, Read: 17001, Total: 19990}
	}
	j, err := s.Start(Spec{Kind: capture.KindOpenFiles, Run: stopped})
	if err != nil {
		t.Fatal(err)
	}
	j = waitDone(t, s, j.ID)
	if j.State != Failed || j.Err.Code != contract.CodeResultTooLarge || j.Err.Details["needed_bytes"] != int64(64<<20+10) ||
		j.Err.Details["needed_bytes_is_lower_bound"] != true || !strings.Contains(j.Err.Message, "needs more than") {
		t.Fatalf("stopped collection: %+v", j.Err)
	}
	if st := j.Err.Details["collection_stopped"].(map[string]any); st["items_read"] != 17001 || st["items_listed"] != 19990 {
		t.Fatalf("collection_stopped %v", st)
	}
	if r, _, b, _ := s.Usage(); r != 0 || b != 0 {
		t.Fatalf("retained %d captures, %d bytes", r, b)
	}
}
