package outbox

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrepo/docrepo/pkg/events"
	"github.com/docrepo/docrepo/pkg/testenv/natstest"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// env is one test's database, NATS server and DOCREPO stream.
type env struct {
	pool   *pgxpool.Pool
	nats   *natstest.Server
	js     jetstream.JetStream
	stream jetstream.Stream
}

func newEnv(t testing.TB) *env {
	t.Helper()
	pool := pgtest.NewPool(t, "outbox_test", Migrations("outbox_test"))
	srv := natstest.Start(t)
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := EnsureStream(ctx, js)
	if err != nil {
		t.Fatalf("EnsureStream: %v", err)
	}
	return &env{pool: pool, nats: srv, js: js, stream: st}
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// startRelay runs r until the test ends (or stop is called) and checks that
// Run returns nil.
func startRelay(t testing.TB, r *Relay) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v, want nil", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("Run did not return within 10s of cancellation")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// insert commits evs in one transaction through Insert and wakes the
// relays, as a service's write does.
func insert(t testing.TB, ctx context.Context, pool *pgxpool.Pool, evs ...Event) {
	t.Helper()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, e := range evs {
			if err := Insert(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	Committed(pool)
}

// insertN commits n document events in one statement (fast, for volume)
// and wakes the relays.
func insertN(t testing.TB, pool *pgxpool.Pool, n int) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `INSERT INTO outbox (aggregate, aggregate_id, kind, rev, request_id)
		SELECT 'document', g, 'updated', 1, 'bulk-' || g FROM generate_series(1, $1) g`, n)
	if err != nil {
		t.Fatalf("insert %d rows: %v", n, err)
	}
	Committed(pool)
}

func countRows(t testing.TB, pool *pgxpool.Pool, where string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE `+where).Scan(&n); err != nil {
		t.Fatalf("count outbox rows where %s: %v", where, err)
	}
	return n
}

// waitFor polls cond every few milliseconds until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitPublished(t testing.TB, pool *pgxpool.Pool, want int) {
	t.Helper()
	waitFor(t, 30*time.Second, strconv.Itoa(want)+" rows marked published", func() bool {
		return countRows(t, pool, "published_at IS NOT NULL") >= want
	})
}

// streamMsgs returns every message in the DOCREPO stream, in stream order.
func streamMsgs(t testing.TB, st jetstream.Stream) []*jetstream.RawStreamMsg {
	t.Helper()
	// Each call has its own deadline: reading 20,000 messages one by one
	// on a loaded machine can take longer than any single total bound.
	call := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 10*time.Second)
	}
	ctx, cancel := call()
	info, err := st.Info(ctx)
	cancel()
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	var msgs []*jetstream.RawStreamMsg
	if info.State.Msgs == 0 {
		return nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		ctx, cancel := call()
		m, err := st.GetMsg(ctx, seq)
		cancel()
		if err != nil {
			t.Fatalf("get message %d: %v", seq, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// checkExactlyOnce asserts that the stream holds exactly one message per
// outbox row, with Nats-Msg-Id = row id, and that every row is marked.
func checkExactlyOnce(t testing.TB, e *env) {
	t.Helper()
	var ids []int64
	rows, err := e.pool.Query(context.Background(), `SELECT id FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatalf("select ids: %v", err)
	}
	ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatalf("select ids: %v", err)
	}
	if n := countRows(t, e.pool, "published_at IS NULL"); n != 0 {
		t.Errorf("%d of %d rows are not marked published", n, len(ids))
	}
	msgs := streamMsgs(t, e.stream)
	if len(msgs) != len(ids) {
		t.Errorf("stream holds %d messages for %d rows", len(msgs), len(ids))
	}
	seen := map[string]int{}
	for _, m := range msgs {
		seen[m.Header.Get(jetstream.MsgIDHeader)]++
	}
	if len(seen) != len(ids) {
		t.Errorf("stream holds %d distinct message ids for %d rows", len(seen), len(ids))
	}
	for _, id := range ids {
		if n := seen[MsgID("outbox_test", id)]; n != 1 {
			t.Errorf("row %d is in the stream %d times, want once", id, n)
		}
	}
}

// consume delivers the stream's messages, from the start, to a channel.
func consume(t testing.TB, st jetstream.Stream) <-chan jetstream.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.SubjectAll}})
	if err != nil {
		t.Fatalf("ordered consumer: %v", err)
	}
	ch := make(chan jetstream.Msg, 1024)
	cc, err := c.Consume(func(m jetstream.Msg) { ch <- m })
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	t.Cleanup(cc.Stop)
	return ch
}
