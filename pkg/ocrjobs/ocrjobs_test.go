package ocrjobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/ocrjobs"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

func newStore(t *testing.T, queue string) *ocrjobs.Store {
	t.Helper()
	pool := pgtest.NewPool(t, "ocr_test", ocrjobs.Migrations("ocr_test"))
	return ocrjobs.New(pool, queue)
}

func claim(t *testing.T, s *ocrjobs.Store, lease time.Duration) (ocrjobs.Job, bool) {
	t.Helper()
	j, ok, err := s.Claim(context.Background(), lease)
	if err != nil {
		t.Fatal(err)
	}
	return j, ok
}

func enqueue(t *testing.T, s *ocrjobs.Store, jobs ...ocrjobs.Job) {
	t.Helper()
	if err := s.Enqueue(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
}

// TestOneJobPerDocumentNewestRevisionWins: enqueueing a document again
// replaces its pending job when the revision is newer and changes nothing
// when it is older; the queue holds one job for it either way.
func TestOneJobPerDocumentNewestRevisionWins(t *testing.T) {
	s := newStore(t, "indexer")
	enqueue(t, s, ocrjobs.Job{DocID: 1, Rev: 2, Owner: "ann"}, ocrjobs.Job{DocID: 1, Rev: 3, Owner: "ann"})
	enqueue(t, s, ocrjobs.Job{DocID: 1, Rev: 1, Owner: "ann"})
	enqueue(t, s, ocrjobs.Job{DocID: 1, Rev: 5, Owner: "ann", Pages: 9})
	st, err := s.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Queued != 1 {
		t.Fatalf("%d jobs queued for one document, want 1", st.Queued)
	}
	j, ok := claim(t, s, time.Minute)
	if !ok || j.DocID != 1 || j.Rev != 5 || j.Pages != 9 {
		t.Fatalf("claimed %+v (%v), want document 1 at rev 5 with 9 pages", j, ok)
	}
	if _, ok := claim(t, s, time.Minute); ok {
		t.Fatal("a second job was handed out for the same document")
	}
}

// TestClaimSharesFairlyBetweenOwners: one owner's long backlog does not
// hold back another owner's job, with one worker (round robin by turn)
// and with several (fewest running first).
func TestClaimSharesFairlyBetweenOwners(t *testing.T) {
	tests := []struct {
		name    string
		workers int
	}{
		{name: "one worker", workers: 1},
		{name: "three workers", workers: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, "indexer")
			var flood []ocrjobs.Job
			for id := int64(1); id <= 50; id++ {
				flood = append(flood, ocrjobs.Job{DocID: id, Rev: 1, Owner: "flood"})
			}
			enqueue(t, s, flood...)
			// The flood has been served once before the other owner comes.
			first, _ := claim(t, s, time.Minute)
			if err := s.Done(context.Background(), first); err != nil {
				t.Fatal(err)
			}
			var running []ocrjobs.Job
			for range tc.workers - 1 {
				j, _ := claim(t, s, time.Minute)
				running = append(running, j)
			}
			enqueue(t, s, ocrjobs.Job{DocID: 100, Rev: 1, Owner: "quiet"}, ocrjobs.Job{DocID: 101, Rev: 1, Owner: "quiet"})
			j, ok := claim(t, s, time.Minute)
			if !ok || j.Owner != "quiet" {
				t.Fatalf("next job %+v, want the quiet owner's, ahead of %d queued flood jobs", j, 49-len(running))
			}
			// With the quiet owner now running one job, the next goes to
			// whoever runs fewer.
			next, _ := claim(t, s, time.Minute)
			wantOwner := "flood"
			if len(running) > 1 {
				wantOwner = "quiet"
			}
			if next.Owner != wantOwner {
				t.Errorf("the job after that is %s's, want %s's (flood runs %d, quiet 1)", next.Owner, wantOwner, len(running))
			}
		})
	}
}

// TestExpiredClaimIsTakenAgain: a worker that died leaves a claim that
// expires; the job is claimed again, and the dead worker's late Done does
// not remove the new claim's job.
func TestExpiredClaimIsTakenAgain(t *testing.T) {
	s := newStore(t, "indexer")
	ctx := context.Background()
	enqueue(t, s, ocrjobs.Job{DocID: 7, Rev: 1, Owner: "ann"})
	start := time.Now()
	dead, _ := claim(t, s, 2*time.Second)
	// Handed out again within the 2 s of the first claim is wrong; after
	// them (a loaded machine can take that long between two calls) it is
	// the re-claim this test waits for below.
	again, ok := claim(t, s, time.Minute)
	if ok && time.Since(start) < 2*time.Second {
		t.Fatal("a claimed job was handed out again before its claim expired")
	}
	for deadline := time.Now().Add(10 * time.Second); !ok && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		again, ok = claim(t, s, time.Minute)
	}
	if !ok || again.DocID != 7 || again.Attempts != 2 {
		t.Fatalf("after the claim expired: %+v (%v), want document 7 on its second attempt", again, ok)
	}
	if held, err := s.Extend(ctx, dead, time.Minute); err != nil || held {
		t.Errorf("the dead worker extended a claim it lost: %v %v", held, err)
	}
	if err := s.Done(ctx, dead); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Status(ctx); st.Running != 1 {
		t.Errorf("the stale Done removed the job another worker runs: %+v", st)
	}
	if err := s.Done(ctx, again); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Status(ctx); st.Running+st.Queued != 0 {
		t.Errorf("jobs left after Done: %+v", st)
	}
}

// TestNewerRevisionDuringTheRunStays: a revision enqueued while the job
// runs is not lost when the run finishes; it can be claimed at once.
func TestNewerRevisionDuringTheRunStays(t *testing.T) {
	s := newStore(t, "indexer")
	ctx := context.Background()
	enqueue(t, s, ocrjobs.Job{DocID: 3, Rev: 1, Owner: "ann"})
	run, _ := claim(t, s, time.Minute)
	enqueue(t, s, ocrjobs.Job{DocID: 3, Rev: 2, Owner: "ann"})
	if err := s.Done(ctx, run); err != nil {
		t.Fatal(err)
	}
	j, ok := claim(t, s, time.Minute)
	if !ok || j.Rev != 2 {
		t.Fatalf("after the run: %+v (%v), want rev 2 claimable at once", j, ok)
	}
}

// TestRetryWaitsForItsDelay: a job given back with a delay is not handed
// out before it.
func TestRetryWaitsForItsDelay(t *testing.T) {
	s := newStore(t, "indexer")
	ctx := context.Background()
	enqueue(t, s, ocrjobs.Job{DocID: 4, Rev: 1})
	j, _ := claim(t, s, time.Minute)
	if err := s.Retry(ctx, j, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, ok := claim(t, s, time.Minute); ok {
		t.Fatalf("claimed %+v during its retry delay", got)
	}
	if st, _ := s.Status(ctx); st.Queued != 1 {
		t.Errorf("status %+v, want the job queued", st)
	}
}

// TestReleaseClaimsFreesTheQueuesJobsAtOnce: a process that alone works
// its queue, starting after a killed predecessor, takes back the jobs
// still claimed (long leases); a finished job stays finished, and the
// released job is claimed again at once.
func TestReleaseClaimsFreesTheQueuesJobsAtOnce(t *testing.T) {
	s := newStore(t, "search")
	enqueue(t, s, ocrjobs.Job{DocID: 1, Rev: 1, Owner: "ann"}, ocrjobs.Job{DocID: 2, Rev: 1, Owner: "ann"})
	first, _ := claim(t, s, time.Hour)
	second, _ := claim(t, s, time.Hour)
	if err := s.Done(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	if _, ok := claim(t, s, time.Hour); ok {
		t.Fatal("a claimed job was handed out again before its lease expired")
	}
	n, err := s.ReleaseClaims(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("released %d claims (%v), want the 1 left", n, err)
	}
	j, ok := claim(t, s, time.Hour)
	if !ok || j.DocID != first.DocID || j.Attempts != 2 {
		t.Fatalf("after the release claimed %+v (%v), want document %d on its second attempt", j, ok, first.DocID)
	}
	// The dead predecessor's claim is void: its Done removes nothing.
	if err := s.Done(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Status(context.Background()); err != nil || st.Running != 1 {
		t.Fatalf("status %+v (%v), want the released job running under its new claim", st, err)
	}
}

// TestClaimsOfADeadWorkerAreReleased: workers sharing a queue (indexer
// replicas) each hold a worker lock; a live one releases at once the
// claims of a worker whose lock is gone (killed mid-OCR), never those of
// a worker that holds its lock.
func TestClaimsOfADeadWorkerAreReleased(t *testing.T) {
	pool := pgtest.NewPool(t, "ocr_test", ocrjobs.Migrations("ocr_test"))
	live, other, dead := ocrjobs.New(pool, "indexer"), ocrjobs.New(pool, "indexer"), ocrjobs.New(pool, "indexer")
	enqueue(t, live, ocrjobs.Job{DocID: 1, Rev: 1, Owner: "ann"}, ocrjobs.Job{DocID: 2, Rev: 1, Owner: "bob"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hold := func(s *ocrjobs.Store, ctx context.Context) {
		go s.HoldWorker(ctx, 50*time.Millisecond, func(int64) {}, func(err error) { t.Error(err) })
		for deadline := time.Now().Add(10 * time.Second); !s.Alive(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the worker lock was not taken")
			}
		}
	}
	otherCtx, stopOther := context.WithCancel(ctx)
	hold(other, otherCtx)
	held, _ := claim(t, other, time.Hour)
	// dead never held its lock: as a process killed after its claim.
	orphan, _ := claim(t, dead, time.Hour)
	hold(live, ctx)
	waitClaim := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			j, ok := claim(t, live, time.Hour)
			if ok {
				if j.DocID != want {
					t.Fatalf("claimed document %d, want %d", j.DocID, want)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the job of document %d, claimed by a worker that is gone, was not released", want)
			}
		}
	}
	waitClaim(orphan.DocID)
	// The other worker, alive, kept its claim through the sweep that
	// released the orphan (both were claimed before live began); once it
	// stops it is released.
	if _, ok := claim(t, live, time.Hour); ok {
		t.Fatalf("the claim of a live worker (document %d) was released", held.DocID)
	}
	stopOther()
	waitClaim(held.DocID)
}

// TestQueuesOfTwoEnginesAreSeparate: two engines (consumer names) each
// get their own job for a document.
func TestQueuesOfTwoEnginesAreSeparate(t *testing.T) {
	pool := pgtest.NewPool(t, "ocr_test", ocrjobs.Migrations("ocr_test"))
	a, b := ocrjobs.New(pool, "a"), ocrjobs.New(pool, "b")
	enqueue(t, a, ocrjobs.Job{DocID: 1, Rev: 1})
	enqueue(t, b, ocrjobs.Job{DocID: 1, Rev: 1})
	if _, ok := claim(t, a, time.Minute); !ok {
		t.Fatal("engine a has no job")
	}
	if _, ok := claim(t, b, time.Minute); !ok {
		t.Fatal("engine b lost its job to engine a")
	}
}

// TestCacheKeysByFileAndSettings: a cached result is found for the same
// file read with the same settings only, and pruning keeps what was used.
func TestCacheKeysByFileAndSettings(t *testing.T) {
	s := newStore(t, "indexer")
	ctx := context.Background()
	want := ocrjobs.Text{Content: "scanned words", Source: "ocr", Pages: 2, Failed: 1, Failure: "page 2: time limit"}
	if err := s.Put(ctx, "abc", "eng dpi=300", want); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		hash     string
		settings string
		found    bool
	}{
		{name: "same file and settings", hash: "abc", settings: "eng dpi=300", found: true},
		{name: "other languages", hash: "abc", settings: "deu dpi=300"},
		{name: "other file", hash: "abd", settings: "eng dpi=300"},
	}
	for _, tc := range tests {
		got, ok, err := s.Cached(ctx, tc.hash, tc.settings)
		if err != nil {
			t.Fatal(err)
		}
		if ok != tc.found || tc.found && got != want {
			t.Errorf("%s: %+v %v, want found=%v %+v", tc.name, got, ok, tc.found, want)
		}
	}
	if n, err := s.Prune(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("pruned %d (%v) entries used just now", n, err)
	}
	if n, err := s.Prune(ctx, 0); err != nil || n != 1 {
		t.Errorf("pruned %d (%v) entries with no age limit, want 1", n, err)
	}
}

// TestEraseRemovesEveryReadingOfTheFiles: Erase drops a file's cached
// text under every settings, and leaves other files' text alone.
func TestEraseRemovesEveryReadingOfTheFiles(t *testing.T) {
	s := newStore(t, "indexer")
	ctx := context.Background()
	for _, k := range []struct{ hash, settings string }{
		{"gone1", "eng"}, {"gone1", "deu"}, {"gone2", "eng"}, {"kept", "eng"},
	} {
		if err := s.Put(ctx, k.hash, k.settings, ocrjobs.Text{Content: "text of " + k.hash, Source: "ocr", Pages: 1}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		hashes []string
		erased int64
	}{
		{name: "none", hashes: nil, erased: 0},
		{name: "two files, three readings, one unknown", hashes: []string{"gone1", "gone2", "never"}, erased: 3},
		{name: "again", hashes: []string{"gone1"}, erased: 0},
	}
	for _, tc := range tests {
		if n, err := s.Erase(ctx, tc.hashes); err != nil || n != tc.erased {
			t.Errorf("%s: erased %d (%v), want %d", tc.name, n, err, tc.erased)
		}
	}
	for _, k := range []struct {
		hash, settings string
		found          bool
	}{{"gone1", "eng", false}, {"gone1", "deu", false}, {"gone2", "eng", false}, {"kept", "eng", true}} {
		if _, ok, err := s.Cached(ctx, k.hash, k.settings); err != nil || ok != k.found {
			t.Errorf("%s/%s: cached %v (%v), want %v", k.hash, k.settings, ok, err, k.found)
		}
	}
}
