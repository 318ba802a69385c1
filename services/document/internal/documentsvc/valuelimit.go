package documentsvc

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
)

// A distinct-values listing reads every visible document (a contains
// search cannot use an index), so on a large repository one costs seconds
// of a database connection. Its cost is bounded three ways:
//
//   - a statement timeout (Deps.ValuesTimeout): past it the listing is
//     answered 504 and the connection is free again;
//   - at most Deps.ValuesPerCaller listings of one caller at once; more are
//     answered 429 at once, holding nothing;
//   - at most a quarter of the connection pool for listings of all
//     callers together; others wait for a turn (holding no connection,
//     within their deadline), so listings can never take the connections
//     uploads, reads and writes need.

// Defaults of the listing bounds.
const (
	DefaultValuesTimeout   = 10 * time.Second
	DefaultValuesPerCaller = 2
)

// valueLimiter holds the turns of distinct-values listings.
type valueLimiter struct {
	timeout   time.Duration
	perCaller int
	turns     chan struct{} // one per listing running

	mu      sync.Mutex
	running map[string]int // caller → listings running
}

func newValueLimiter(timeout time.Duration, perCaller, poolConns int) *valueLimiter {
	if timeout <= 0 {
		timeout = DefaultValuesTimeout
	}
	if perCaller <= 0 {
		perCaller = DefaultValuesPerCaller
	}
	return &valueLimiter{timeout: timeout, perCaller: perCaller,
		turns: make(chan struct{}, max(1, poolConns/4)), running: map[string]int{}}
}

// callerKey names a caller for the per-caller bound: the user, or the
// service credential.
func callerKey(p *auth.Principal) string {
	if p.Service != "" {
		return "service:" + p.Service
	}
	return strconv.FormatInt(p.UserID, 10)
}

// acquire takes a turn for p, waiting for one within ctx; release gives it
// back.
func (l *valueLimiter) acquire(ctx context.Context, p *auth.Principal) (release func(), err error) {
	key := callerKey(p)
	l.mu.Lock()
	if l.running[key] >= l.perCaller {
		l.mu.Unlock()
		return nil, apierr.RateLimited("Too many value listings in progress for this caller; retry shortly")
	}
	l.running[key]++
	l.mu.Unlock()
	done := func() {
		l.mu.Lock()
		if l.running[key]--; l.running[key] == 0 {
			delete(l.running, key)
		}
		l.mu.Unlock()
	}
	select {
	case l.turns <- struct{}{}:
		return func() { <-l.turns; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

// query runs a listing's query within the statement timeout and collects
// its text values.
func (l *valueLimiter) query(ctx context.Context, s *Service, sql string, args ...any) ([]string, error) {
	var values []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true)", strconv.FormatInt(l.timeout.Milliseconds(), 10)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		values, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "57014" && ctx.Err() == nil { // query_canceled: the statement timeout
		return nil, apierr.Timeout("Gateway Timeout")
	}
	if err != nil {
		return nil, internal(err)
	}
	return values, nil
}
