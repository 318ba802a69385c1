package documentsvc_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
	"github.com/docrepo/docrepo/services/document/internal/documentsvc"
)

// Distinct-values listings are bounded: one caller runs at most
// ValuesPerCaller at once (429 beyond, at once), all callers together at
// most a quarter of the connection pool (the rest is left to other calls),
// and a listing past ValuesTimeout is answered 504. The listings here are
// made slow by a lock on the documents table, as a huge table would.
func TestDistinctValueListingsAreBounded(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, documentsvc.Schema, documentsvc.Migrations()...)
	poolConns := int(pool.Config().MaxConns)
	svc := documentsvc.NewService(documentsvc.Deps{Pool: pool, ValuesTimeout: 2 * time.Second, ValuesPerCaller: 2})
	locker, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	lockTx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockTx.Exec(ctx, `LOCK TABLE documents IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	// Released after 30 s whatever happens, so that listings without
	// bounds end (and the test fails) rather than hang.
	unlock := time.AfterFunc(30*time.Second, func() { _ = lockTx.Rollback(ctx) })
	defer func() {
		if unlock.Stop() {
			_ = lockTx.Rollback(ctx)
		}
	}()

	list := func(userID int64) error {
		p := &auth.Principal{UserID: userID, GroupIDs: []int64{1}, Scopes: []string{auth.ScopeDocumentsRead}}
		_, err := svc.ListDistinctValues(auth.WithPrincipal(ctx, p),
			&documentv1.ListDistinctValuesRequest{Column: "description", Search: "zzz"})
		return err
	}
	type result struct {
		err error
		at  time.Duration
	}
	run := func(users []int64) []result {
		start := time.Now()
		out := make([]result, len(users))
		var wg sync.WaitGroup
		for i, u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := list(u)
				out[i] = result{err: err, at: time.Since(start)}
			}()
		}
		wg.Wait()
		return out
	}

	t.Run("one caller", func(t *testing.T) {
		res := run([]int64{7, 7, 7, 7, 7, 7, 7, 7})
		refused, timedOut := 0, 0
		for _, r := range res {
			switch {
			case apierr.IsKind(r.err, apierr.KindRateLimited) && r.at < time.Second:
				refused++
			case apierr.IsKind(r.err, apierr.KindTimeout):
				timedOut++
			default:
				t.Errorf("a listing answered %v after %v", r.err, r.at)
			}
		}
		if refused != 6 || timedOut != 2 {
			t.Fatalf("8 listings of one caller: %d refused at once, %d timed out; want 6 and 2", refused, timedOut)
		}
	})
	t.Run("many callers", func(t *testing.T) {
		users := []int64{11, 12, 13, 14, 15, 16, 17, 18}
		done := make(chan []result, 1)
		go func() { done <- run(users) }()
		time.Sleep(500 * time.Millisecond) // the listings are waiting for the lock or a turn
		if used, most := int(pool.Stat().AcquiredConns()), max(1, poolConns/4); used > most {
			t.Errorf("listings hold %d of %d connections, want at most %d", used, poolConns, most)
		}
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := pool.Exec(qctx, `SELECT 1`); err != nil {
			t.Errorf("another call while listings run: %v", err)
		}
		for _, r := range <-done {
			if !apierr.IsKind(r.err, apierr.KindTimeout) {
				t.Errorf("a listing answered %v after %v, want 504", r.err, r.at)
			}
		}
	})
}
