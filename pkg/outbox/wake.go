package outbox

import (
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Waking the relay.
//
// A relay publishes what it finds, then sleeps until Committed wakes it or
// Options.PollInterval passes. The writer wakes the relays of its own
// process once its transaction has committed: every service that inserts
// outbox rows runs a relay on the same schema (RunRelay), so the rows of a
// replica are published by that replica's relay within a claim query of the
// commit, and the poll only matters for rows whose writer died before
// its relay ran.
//
// This replaced a trigger that sent a Postgres NOTIFY on every insert:
// a transaction that notifies holds a lock shared by the whole cluster from
// its commit until the commit is durable, so every such commit waited for
// the WAL flush of the one before it. Measured with pgbench on this
// machine, 8 clients committing one insert each: 760-840 commits/s
// without the notification and 104-105 with it; the document service's
// uploads were held to that second figure (services/search/bench/results/
// outbox-notify-2026-11-27.md).

// wakers holds the wake-up channels of the relays running in this process,
// by the schema of the outbox they relay.
var wakers = struct {
	sync.Mutex
	bySchema map[string][]chan<- struct{}
}{bySchema: map[string][]chan<- struct{}{}}

// register adds a relay's wake-up channel for schema; the returned func
// removes it.
func register(schema string, wake chan<- struct{}) (unregister func()) {
	wakers.Lock()
	defer wakers.Unlock()
	wakers.bySchema[schema] = append(wakers.bySchema[schema], wake)
	return func() {
		wakers.Lock()
		defer wakers.Unlock()
		chans := wakers.bySchema[schema]
		for i, c := range chans {
			if c == wake {
				chans = append(chans[:i:i], chans[i+1:]...)
				break
			}
		}
		if len(chans) == 0 {
			delete(wakers.bySchema, schema)
		} else {
			wakers.bySchema[schema] = chans
		}
	}
}

// Committed tells the relays of this process that relay the outbox of
// pool's schema (its search_path) that a transaction which inserted rows
// has committed, so they publish them now. Call it after the commit
// returned; calling it after a transaction that inserted nothing costs the
// relay one claim query. It never blocks: wake-ups coalesce while a relay
// is busy.
func Committed(pool *pgxpool.Pool) { CommittedIn(poolSchema(pool)) }

// CommittedIn is Committed for the outbox of schema.
func CommittedIn(schema string) {
	wakers.Lock()
	defer wakers.Unlock()
	for _, c := range wakers.bySchema[schema] {
		signal(c)
	}
}

// poolSchema is the schema whose outbox pool writes: its search_path, or
// public.
func poolSchema(pool *pgxpool.Pool) string {
	if s := pool.Config().ConnConfig.RuntimeParams["search_path"]; s != "" {
		return s
	}
	return "public"
}
