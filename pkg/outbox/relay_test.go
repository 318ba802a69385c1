package outbox

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/events"
	eventv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/event/v1"
	"github.com/docrepo/docrepo/pkg/logging"
)

// Committed rows reach the stream in id order with the payload built from
// their columns and the docrepo headers; a rolled-back transaction's rows
// never exist, so nothing of it is published.
func TestRelayPublishesCommittedRowsInOrder(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	startRelay(t, NewRelay(e.pool, e.js, testLogger(t), Options{BatchSize: 2}))

	caller := logging.WithRequestID(auth.WithPrincipal(ctx, &auth.Principal{UserID: 77}), "req-ctx")
	steps := []struct {
		name     string
		ctx      context.Context
		events   []Event
		sql      string // instead of events: a row as the document_folders trigger writes it
		rollback bool
	}{
		{name: "actor and request id from the caller", ctx: caller,
			events: []Event{{Aggregate: AggregateDocument, AggregateID: 1, Kind: events.KindCreated, Rev: 1}}},
		{name: "two events in one transaction", ctx: ctx, events: []Event{
			{Aggregate: AggregateDocument, AggregateID: 1, Kind: events.KindUpdated, Rev: 2, ActorUserID: 5, RequestID: "req-b"},
			{Aggregate: AggregateFolder, AggregateID: 3, Kind: events.KindCreated, ActorUserID: 5, RequestID: "req-b"},
		}},
		{name: "rolled back", ctx: ctx, rollback: true,
			events: []Event{{Aggregate: AggregateDocument, AggregateID: 999, Kind: events.KindUpdated, Rev: 9}}},
		{name: "folder deleted with its subtree", ctx: ctx,
			events: []Event{{Aggregate: AggregateFolder, AggregateID: 3, Kind: events.KindDeleted, FolderIDs: []int64{3, 4, 5}, RequestID: "req-c"}}},
		{name: "trigger row without actor or request id", ctx: ctx,
			sql: `INSERT INTO outbox (aggregate, aggregate_id, kind, rev) VALUES ('document', 1, 'folders_changed', 3)`},
		{name: "rolled back after the others", ctx: ctx, rollback: true,
			events: []Event{{Aggregate: AggregateFolder, AggregateID: 999, Kind: events.KindMoved}}},
		{name: "last", ctx: ctx,
			events: []Event{{Aggregate: AggregateDocument, AggregateID: 2, Kind: events.KindLocked, Rev: 4, RequestID: "req-d"}}},
	}
	committed := 0
	for _, s := range steps {
		tx, err := e.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.sql != "" {
			_, err = tx.Exec(ctx, s.sql)
		}
		for _, ev := range s.events {
			if err == nil {
				err = Insert(s.ctx, tx, ev)
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.rollback {
			err = tx.Rollback(ctx)
		} else {
			err = tx.Commit(ctx)
			committed += max(len(s.events), 1)
		}
		if err != nil {
			t.Fatalf("%s: end transaction: %v", s.name, err)
		}
	}
	waitPublished(t, e.pool, committed)

	// What the stream must hold, built independently from the table.
	rows, err := e.pool.Query(ctx, `SELECT id, aggregate, aggregate_id, kind, rev, actor_user_id, request_id, folder_ids, created_at FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		subject, requestID, aggregateID, kind string
		ev                                    proto.Message
	}
	var wants []want
	var (
		id, aggID, rev, actor int64
		agg, kind, reqID      string
		folderIDs             []int64
		created               time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &agg, &aggID, &kind, &rev, &actor, &reqID, &folderIDs, &created}, func() error {
		w := want{subject: "docrepo." + agg + "." + kind, requestID: reqID, aggregateID: strconv.FormatInt(aggID, 10), kind: kind}
		if agg == AggregateDocument {
			w.ev = &eventv1.DocumentEvent{EventId: id, DocId: aggID, Rev: rev, Kind: kind, OccurredAt: timestamppb.New(created), ActorUserId: actor, RequestId: reqID}
		} else {
			w.ev = &eventv1.FolderEvent{EventId: id, FolderId: aggID, Kind: kind, OccurredAt: timestamppb.New(created), ActorUserId: actor, FolderIds: folderIDs, RequestId: reqID}
		}
		wants = append(wants, w)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(wants) != committed {
		t.Fatalf("outbox holds %d rows, want %d (rolled-back rows must not exist)", len(wants), committed)
	}
	first := wants[0].ev.(*eventv1.DocumentEvent)
	if first.GetActorUserId() != 77 || first.GetRequestId() != "req-ctx" {
		t.Errorf("first row: actor %d, request id %q; want 77 and req-ctx from the caller's context", first.GetActorUserId(), first.GetRequestId())
	}

	msgs := streamMsgs(t, e.stream)
	if len(msgs) != len(wants) {
		t.Fatalf("stream holds %d messages, want %d", len(msgs), len(wants))
	}
	for i, m := range msgs {
		w := wants[i]
		got, err := events.Decode(rawMsg{m})
		if err != nil {
			t.Errorf("message %d: %v", i, err)
			continue
		}
		if m.Subject != w.subject {
			t.Errorf("message %d: subject %q, want %q", i, m.Subject, w.subject)
		}
		if !proto.Equal(got, w.ev) {
			t.Errorf("message %d: payload %v, want %v", i, got, w.ev)
		}
		headers := map[string]string{
			jetstream.MsgIDHeader:    MsgID("outbox_test", eventID(w.ev)),
			events.HeaderEventKind:   w.kind,
			events.HeaderAggregateID: w.aggregateID,
			events.HeaderRequestID:   w.requestID,
		}
		for k, v := range headers {
			if g := m.Header.Get(k); g != v {
				t.Errorf("message %d: header %s = %q, want %q", i, k, g, v)
			}
		}
		if _, ok := m.Header[events.HeaderRequestID]; ok && w.requestID == "" {
			t.Errorf("message %d: empty %s header present", i, events.HeaderRequestID)
		}
	}
}

type rawMsg struct{ m *jetstream.RawStreamMsg }

func (r rawMsg) Subject() string { return r.m.Subject }
func (r rawMsg) Data() []byte    { return r.m.Data }

func eventID(ev proto.Message) int64 {
	switch e := ev.(type) {
	case *eventv1.DocumentEvent:
		return e.GetEventId()
	case *eventv1.FolderEvent:
		return e.GetEventId()
	}
	return 0
}

// Two relays on one outbox, with rows arriving while they run: every row is
// published by exactly one of them. The stream alone would hide double
// publishing (JetStream drops duplicates), so the relays' own counts must
// show no duplicate ack.
func TestRelayConcurrentRelaysPublishEachRowOnce(t *testing.T) {
	e := newEnv(t)
	const preloaded, writers, perWriter = 1500, 4, 250
	insertN(t, e.pool, preloaded)

	opts := Options{BatchSize: 25, MaxInFlight: 8}
	relays := []*Relay{
		NewRelay(e.pool, e.js, testLogger(t), withName(opts, "a")),
		NewRelay(e.pool, e.js, testLogger(t), withName(opts, "b")),
	}
	for _, r := range relays {
		startRelay(t, r)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				insert(t, context.Background(), e.pool, Event{Aggregate: AggregateDocument, AggregateID: int64(w*perWriter + i), Kind: events.KindUpdated, Rev: 1})
			}
		})
	}
	wg.Wait()
	total := preloaded + writers*perWriter
	waitPublished(t, e.pool, total)
	// A relay counts a batch just after its transaction commits: the last
	// rows can be marked in the database a moment before they are
	// counted. Wait for the counts (more than total still fails below).
	waitFor(t, 30*time.Second, "the relays to count every row", func() bool {
		var n int64
		for _, r := range relays {
			n += r.Stats().Published
		}
		return n >= int64(total)
	})

	var published int64
	for i, r := range relays {
		s := r.Stats()
		t.Logf("relay %d: %+v", i, s)
		if s.Duplicates != 0 {
			t.Errorf("relay %d got %d duplicate acks: a row was published twice", i, s.Duplicates)
		}
		if s.Published == 0 {
			t.Errorf("relay %d published nothing; the test did not exercise two relays", i)
		}
		published += s.Published
	}
	if published != int64(total) {
		t.Errorf("relays published %d rows in all, want %d", published, total)
	}
	checkExactlyOnce(t, e)
}

func withName(o Options, name string) Options { o.Name = name; return o }

// THE CRASH TEST. A relay that dies after JetStream acknowledged a batch but
// before the rows were marked leaves them unpublished; the batch is
// published again (by a new relay, or by the same one after its database
// connection came back), JetStream drops the copies by Nats-Msg-Id, and in
// the end every event is in the stream exactly once and every row marked.
// A graceful stop at the same point marks the batch and publishes nothing
// twice.
func TestRelayCrashBetweenPublishAndMark(t *testing.T) {
	killSession := func(t *testing.T, e *env, tx pgx.Tx) {
		pid := tx.Conn().PgConn().PID()
		var ok bool
		if err := e.pool.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
			t.Errorf("terminate backend %d: %v %v", pid, ok, err)
		}
		// Let the server close the socket before the relay's UPDATE.
		time.Sleep(50 * time.Millisecond)
	}
	tests := []struct {
		name string
		// crash runs after the second batch's acks, before it is marked.
		crash func(t *testing.T, e *env, stopRelay context.CancelFunc, tx pgx.Tx)
		// restart: the relay is gone and a new one takes over; otherwise
		// the same relay carries on.
		restart bool
		// lost: the second batch's marking is lost and it must be
		// published again.
		lost bool
	}{
		{
			name: "relay process killed",
			// What kill -9 does: the session goes, and so does the relay.
			crash: func(t *testing.T, e *env, stopRelay context.CancelFunc, tx pgx.Tx) {
				killSession(t, e, tx)
				stopRelay()
			},
			restart: true,
			lost:    true,
		},
		{
			name: "database connection killed",
			crash: func(t *testing.T, e *env, stopRelay context.CancelFunc, tx pgx.Tx) {
				killSession(t, e, tx)
			},
			lost: true,
		},
		{
			name:    "graceful stop",
			crash:   func(t *testing.T, e *env, stopRelay context.CancelFunc, tx pgx.Tx) { stopRelay() },
			restart: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			const rows, batch = 25, 10
			insertN(t, e.pool, rows)

			ctx, stopRelay := context.WithCancel(context.Background())
			defer stopRelay()
			r := NewRelay(e.pool, e.js, testLogger(t), Options{BatchSize: batch, PollInterval: 50 * time.Millisecond})
			var calls atomic.Int32
			crashed := make(chan []int64, 1)
			r.afterPublish = func(_ context.Context, tx pgx.Tx, acked []int64) {
				if calls.Add(1) == 2 {
					tt.crash(t, e, stopRelay, tx)
					crashed <- acked
				}
			}
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()

			var second []int64
			select {
			case second = <-crashed:
			case <-time.After(30 * time.Second):
				t.Fatal("the relay never reached its second batch")
			}
			if len(second) != batch {
				t.Fatalf("second batch had %d acked rows, want %d", len(second), batch)
			}
			survivor := r
			if tt.restart {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("first relay's Run returned %v, want nil", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("first relay's Run did not return")
				}
				// The state the stop must leave: both batches are in the
				// stream; the second is unmarked after a crash, marked
				// after a graceful stop.
				wantUnmarked, wantMarkedOfSecond := rows-batch, 0
				if !tt.lost {
					wantUnmarked, wantMarkedOfSecond = rows-2*batch, batch
				}
				if n := countRows(t, e.pool, "published_at IS NULL"); n != wantUnmarked {
					t.Fatalf("after the stop %d rows are unpublished, want %d", n, wantUnmarked)
				}
				var marked int
				if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE id = ANY($1) AND published_at IS NOT NULL`, second).Scan(&marked); err != nil || marked != wantMarkedOfSecond {
					t.Fatalf("after the stop %d rows of the second batch are marked (err %v), want %d", marked, err, wantMarkedOfSecond)
				}
				if msgs := streamMsgs(t, e.stream); len(msgs) != 2*batch {
					t.Fatalf("after the stop the stream holds %d messages, want %d (both batches were acked)", len(msgs), 2*batch)
				}
				survivor = NewRelay(e.pool, e.js, testLogger(t), Options{BatchSize: batch})
				startRelay(t, survivor)
			} else {
				t.Cleanup(func() {
					stopRelay()
					if err := <-done; err != nil {
						t.Errorf("Run returned %v, want nil", err)
					}
				})
			}

			waitPublished(t, e.pool, rows)
			checkExactlyOnce(t, e)
			// After a crash the second batch really was published again
			// and JetStream recognised every copy; after a graceful stop
			// nothing was published twice.
			wantDup := int64(0)
			if tt.lost {
				wantDup = batch
			}
			if s := survivor.Stats(); s.Duplicates != wantDup {
				t.Errorf("relay after the stop: %d duplicate acks, want %d; stats %+v", s.Duplicates, wantDup, s)
			}
		})
	}
}

// A relay stopped and started again and again while it drains a backlog
// never publishes a row twice: stopping finishes the batch in hand.
func TestRelayGracefulStopsPublishNothingTwice(t *testing.T) {
	e := newEnv(t)
	const rows = 20000
	insertN(t, e.pool, rows)
	var stats []Stats
	var before int64 // rows published by the earlier rounds
	for countRows(t, e.pool, "published_at IS NULL") > 0 {
		r := NewRelay(e.pool, e.js, slog.New(slog.DiscardHandler), Options{BatchSize: 500, MaxInFlight: 200, Retention: -1})
		stop := startRelay(t, r)
		waitFor(t, 30*time.Second, "a batch", func() bool { return r.Stats().Published > 0 })
		if len(stats)%2 == 0 {
			// Stop while the next batch is being published: the stream
			// holds more messages than the rows marked so far. (On a
			// loaded machine a stop after a fixed sleep tends to land
			// in the claim, between batches.)
			waitFor(t, 30*time.Second, "a batch in flight", func() bool {
				info, err := e.stream.Info(context.Background())
				return err != nil || r.Stats().Published == int64(rows)-before ||
					int64(info.State.Msgs) > before+r.Stats().Published
			})
		} else {
			// Stop at some point after the first batch.
			time.Sleep(time.Duration(len(stats)%10) * time.Millisecond)
		}
		stop()
		stats = append(stats, r.Stats())
		before += r.Stats().Published
	}
	var published, dups, partial int64
	for _, s := range stats {
		published += s.Published
		dups += s.Duplicates
		if s.Published%500 != 0 {
			partial++ // stopped while publishing a batch
		}
	}
	t.Logf("%d rounds (%d stopped mid-batch), %d rows published, %d duplicates", len(stats), partial, published, dups)
	if dups != 0 || published != rows {
		t.Errorf("published %d rows with %d duplicate acks, want %d and 0", published, dups, rows)
	}
	if partial == 0 {
		t.Errorf("no round was stopped mid-batch; the test did not exercise the drain")
	}
	checkExactlyOnce(t, e)
}

// With a one-hour poll interval only Committed can wake the relay: each
// insert whose writer calls it must reach the stream at once, also after
// every database connection was killed; one whose writer does not (another
// schema's wake-up, or none) must wait for the poll.
func TestRelayWakesOnCommit(t *testing.T) {
	killAll := `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`
	tests := []struct {
		name      string
		kill      string // SQL terminating connections after the relay started
		wake      func(pool *pgxpool.Pool)
		published bool // within 5 s (else: not within 300 ms)
	}{
		{name: "steady", wake: Committed, published: true},
		{name: "every database connection killed", kill: killAll, wake: Committed, published: true},
		{name: "another schema's commit", wake: func(*pgxpool.Pool) { CommittedIn("elsewhere") }},
		{name: "no wake-up", wake: func(*pgxpool.Pool) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			msgs := consume(t, e.stream)
			r := NewRelay(e.pool, e.js, testLogger(t), Options{PollInterval: time.Hour, BackoffMax: 200 * time.Millisecond})
			startRelay(t, r)
			// The first event, woken, shows the relay past its start-up
			// pass and asleep.
			insertRetry(t, e.pool, Event{Aggregate: AggregateDocument, AggregateID: 99, Kind: events.KindUpdated, Rev: 1})
			Committed(e.pool)
			select {
			case <-msgs:
			case <-time.After(5 * time.Second):
				t.Fatal("the first event did not reach the stream within 5s")
			}
			// A wake-up still pending (the start-up pass may have published
			// the first event already) is spent within a claim query.
			time.Sleep(200 * time.Millisecond)
			if tt.kill != "" {
				var n int
				if err := e.pool.QueryRow(context.Background(), tt.kill).Scan(&n); err != nil {
					t.Fatalf("terminating connections: %v", err)
				}
				t.Logf("terminated %d connections", n)
			}
			// Sequential inserts: no other wake-up than the writer's is
			// pending.
			for i := range 3 {
				start := time.Now()
				insertRetry(t, e.pool, Event{Aggregate: AggregateDocument, AggregateID: int64(100 + i), Kind: events.KindUpdated, Rev: 1})
				tt.wake(e.pool)
				if !tt.published {
					select {
					case m := <-msgs:
						t.Fatalf("insert %d reached the stream (aggregate %s) without a wake-up of its schema's relay", i, m.Headers().Get(events.HeaderAggregateID))
					case <-time.After(300 * time.Millisecond):
					}
					continue
				}
				select {
				case m := <-msgs:
					t.Logf("insert %d reached the stream after %v", i, time.Since(start))
					if got := m.Headers().Get(events.HeaderAggregateID); got != strconv.Itoa(100+i) {
						t.Fatalf("insert %d: got event for aggregate %s", i, got)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("insert %d did not reach the stream within 5s (poll interval 1h: the wake-up failed)", i)
				}
			}
		})
	}
}

// insertRetry is insert tolerating a pooled connection that a test killed.
func insertRetry(t testing.TB, pool *pgxpool.Pool, ev Event) {
	t.Helper()
	var err error
	for range 5 {
		err = pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error { return Insert(context.Background(), tx, ev) })
		if err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("insert: %v", err)
}

// While NATS is down publishes fail and are retried with back-off; nothing
// is marked, nothing is lost, and everything arrives once it is back.
func TestRelayRetriesWhileNATSIsDown(t *testing.T) {
	e := newEnv(t)
	r := NewRelay(e.pool, e.js, testLogger(t), Options{PollInterval: 20 * time.Millisecond, AckTimeout: 200 * time.Millisecond, BackoffMax: 100 * time.Millisecond})
	startRelay(t, r)
	insertN(t, e.pool, 5)
	waitPublished(t, e.pool, 5)

	e.nats.Shutdown()
	insertN(t, e.pool, 20)
	waitFor(t, 10*time.Second, "publish errors while NATS is down", func() bool { return r.Stats().PublishErrors >= 3 })
	if n := countRows(t, e.pool, "published_at IS NULL"); n != 20 {
		t.Fatalf("while NATS is down %d rows are unpublished, want 20", n)
	}
	e.nats.Restart(t)
	waitPublished(t, e.pool, 25)
	checkExactlyOnce(t, e)
	t.Logf("stats: %+v", r.Stats())
}

// TestRelayRecreatesTheStreamAfterNATSLostItsStore: the NATS server
// comes back with an empty store (no stream); RunRelay creates the stream
// again and publishes the rows written meanwhile into it.
func TestRelayRecreatesTheStreamAfterNATSLostItsStore(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunRelay(ctx, e.pool, e.js, testLogger(t), Options{PollInterval: 20 * time.Millisecond, AckTimeout: 500 * time.Millisecond, BackoffMax: 100 * time.Millisecond})
	}()
	t.Cleanup(func() { cancel(); <-done })
	insertN(t, e.pool, 3)
	waitPublished(t, e.pool, 3)

	e.nats.RestartEmpty(t)
	insertN(t, e.pool, 4)
	waitPublished(t, e.pool, 7)
	st, err := e.js.Stream(context.Background(), events.StreamName)
	if err != nil {
		t.Fatalf("the stream is not back: %v", err)
	}
	info, err := st.Info(context.Background())
	if err != nil || info.State.Msgs != 4 {
		t.Fatalf("the recreated stream holds %v messages (%v), want the 4 rows written after the loss", info.State.Msgs, err)
	}
}

// Run returns nil promptly when its context is cancelled, in every state,
// and leaves no goroutine behind; a relay cannot run twice at once.
func TestRelayRunStopsCleanly(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, e *env)
	}{
		{name: "idle"},
		{name: "backing off while NATS is down", setup: func(t *testing.T, e *env) {
			e.nats.Shutdown()
			insertN(t, e.pool, 10)
		}},
		{name: "busy with a backlog", setup: func(t *testing.T, e *env) { insertN(t, e.pool, 20000) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			// Warm up what the JetStream context and the pool start once, so
			// that only the relay's own goroutines are checked.
			if _, err := e.js.PublishAsync("docrepo.document.warmup", nil); err != nil {
				t.Fatal(err)
			}
			if err := e.pool.Ping(context.Background()); err != nil {
				t.Fatal(err)
			}
			if tt.setup != nil {
				tt.setup(t, e)
			}
			before := goleak.IgnoreCurrent()

			r := NewRelay(e.pool, e.js, testLogger(t), Options{BackoffMax: 50 * time.Millisecond, AckTimeout: 100 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			waitFor(t, 10*time.Second, "the relay to start", r.running.Load)
			time.Sleep(100 * time.Millisecond)
			if err := r.Run(context.Background()); err == nil {
				t.Error("a second concurrent Run returned nil, want an error")
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v, want nil", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return within 5s of cancellation")
			}
			goleak.VerifyNone(t, before)
		})
	}
}

// Rows published longer ago than the retention are deleted; recent and
// unpublished rows, however old, are kept.
func TestRelayCleanupDeletesOnlyRowsPublishedBeforeRetention(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rows := []struct {
		name        string
		createdAgo  string // SQL interval
		publishedAt string // SQL expression, or NULL
		wantKept    bool
	}{
		{name: "published long ago", createdAgo: "3 days", publishedAt: "now() - interval '3 days'", wantKept: false},
		{name: "published just over the retention", createdAgo: "25 hours", publishedAt: "now() - interval '25 hours'", wantKept: false},
		{name: "published within the retention", createdAgo: "25 hours", publishedAt: "now() - interval '23 hours'", wantKept: true},
		{name: "published now", createdAgo: "1 second", publishedAt: "now()", wantKept: true},
		{name: "old but never published", createdAgo: "30 days", publishedAt: "NULL", wantKept: true},
	}
	ids := make([]int64, len(rows))
	for i, rw := range rows {
		err := e.pool.QueryRow(ctx, `INSERT INTO outbox (aggregate, aggregate_id, kind, created_at, published_at)
			VALUES ('document', $1, 'updated', now() - $2::interval, `+rw.publishedAt+`) RETURNING id`, i, rw.createdAgo).Scan(&ids[i])
		if err != nil {
			t.Fatalf("%s: %v", rw.name, err)
		}
	}
	r := NewRelay(e.pool, e.js, testLogger(t), Options{Retention: 24 * time.Hour})
	if n := r.cleanup(ctx); n != 2 {
		t.Errorf("cleanup deleted %d rows, want 2", n)
	}
	for i, rw := range rows {
		var kept bool
		if err := e.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox WHERE id = $1)`, ids[i]).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		if kept != rw.wantKept {
			t.Errorf("%s: kept = %v, want %v", rw.name, kept, rw.wantKept)
		}
	}
}

// A row that cannot become a message (written by SQL with a kind that is not
// a subject token) is reported and left unpublished; the rows after it
// still flow.
func TestRelayLeavesUnpublishableRows(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var bad int64
	if err := e.pool.QueryRow(ctx, `INSERT INTO outbox (aggregate, aggregate_id, kind) VALUES ('document', 1, 'bad.kind') RETURNING id`).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	insert(t, ctx, e.pool, Event{Aggregate: AggregateDocument, AggregateID: 2, Kind: events.KindUpdated, Rev: 1})
	r := NewRelay(e.pool, e.js, testLogger(t), Options{PollInterval: 10 * time.Millisecond})
	startRelay(t, r)
	waitPublished(t, e.pool, 1)
	// The count follows the commit that marks the row (see
	// TestRelayConcurrentRelaysPublishEachRowOnce).
	waitFor(t, 30*time.Second, "the relay to count the row", func() bool { return r.Stats().Published >= 1 })
	time.Sleep(100 * time.Millisecond) // several more polls
	if n := countRows(t, e.pool, "published_at IS NULL AND id = "+strconv.FormatInt(bad, 10)); n != 1 {
		t.Errorf("the unpublishable row was marked published")
	}
	if s := r.Stats(); s.PublishErrors != 1 || s.Published != 1 {
		t.Errorf("stats %+v, want 1 published and the bad row reported once", s)
	}
	if msgs := streamMsgs(t, e.stream); len(msgs) != 1 {
		t.Errorf("stream holds %d messages, want 1", len(msgs))
	}
}

func TestInsertRejectsUnpublishableEvents(t *testing.T) {
	pool := newEnv(t).pool
	tests := []struct {
		name string
		ev   Event
	}{
		{name: "unknown aggregate", ev: Event{Aggregate: "user", AggregateID: 1, Kind: "created"}},
		{name: "empty kind", ev: Event{Aggregate: AggregateDocument, AggregateID: 1}},
		{name: "kind with a dot", ev: Event{Aggregate: AggregateFolder, AggregateID: 1, Kind: "moved.twice"}},
		{name: "kind with a wildcard", ev: Event{Aggregate: AggregateDocument, AggregateID: 1, Kind: ">"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error { return Insert(context.Background(), tx, tt.ev) })
			if err == nil {
				t.Errorf("Insert(%+v) succeeded, want an error", tt.ev)
			}
		})
	}
	if n := countRows(t, pool, "true"); n != 0 {
		t.Errorf("%d rows inserted, want 0", n)
	}
}

func TestEnsureStreamCreatesUpdatesAndRejectsShortWindows(t *testing.T) {
	e := newEnv(t) // has called EnsureStream with the defaults
	ctx := context.Background()
	info, err := e.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := info.Config
	if c.Name != events.StreamName || len(c.Subjects) != 1 || c.Subjects[0] != events.SubjectAll ||
		c.Storage != jetstream.FileStorage || c.Retention != jetstream.LimitsPolicy ||
		c.Duplicates != DefaultDuplicateWindow || c.MaxAge != DefaultMaxAge {
		t.Errorf("stream config %+v", c)
	}

	// Calling it again updates the stream in place.
	st, err := EnsureStream(ctx, e.js, WithDuplicateWindow(20*time.Minute), WithMaxAge(48*time.Hour))
	if err != nil {
		t.Fatalf("EnsureStream again: %v", err)
	}
	if c := st.CachedInfo().Config; c.Duplicates != 20*time.Minute || c.MaxAge != 48*time.Hour {
		t.Errorf("after update: duplicates %v, max age %v", c.Duplicates, c.MaxAge)
	}

	bad := []struct {
		name string
		opts []StreamOption
	}{
		{name: "duplicate window under 10 minutes", opts: []StreamOption{WithDuplicateWindow(2 * time.Minute)}},
		{name: "max age under the duplicate window", opts: []StreamOption{WithMaxAge(5 * time.Minute)}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := EnsureStream(ctx, e.js, tt.opts...); err == nil {
				t.Error("EnsureStream succeeded, want an error")
			}
		})
	}
}

func TestBackoffIsCappedExponential(t *testing.T) {
	b := backoff{min: 100 * time.Millisecond, max: time.Second}
	caps := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, c := range caps {
		c *= time.Millisecond
		d := b.next()
		if d < c/2 || d > c {
			t.Errorf("delay %d = %v, want within [%v, %v]", i, d, c/2, c)
		}
	}
	b.reset()
	if d := b.next(); d > 100*time.Millisecond {
		t.Errorf("after reset: %v, want at most 100ms", d)
	}
}

// BenchmarkRelayThroughput measures rows/s from a preloaded outbox to acked
// and marked JetStream messages (local Postgres, in-process NATS).
func BenchmarkRelayThroughput(b *testing.B) {
	configs := []struct {
		name string
		opts Options
	}{
		{name: "defaults", opts: Options{}},
		{name: "batch=100,inflight=1", opts: Options{BatchSize: 100, MaxInFlight: 1}},
		{name: "batch=1000,inflight=1000", opts: Options{BatchSize: 1000, MaxInFlight: 1000}},
	}
	for _, c := range configs {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b)
			insertN(b, e.pool, b.N)
			r := NewRelay(e.pool, e.js, slog.New(slog.DiscardHandler), c.opts)
			b.ResetTimer()
			start := time.Now()
			stop := startRelay(b, r)
			deadline := start.Add(5 * time.Minute)
			for r.Stats().Published < int64(b.N) {
				if time.Now().After(deadline) {
					b.Fatalf("published %d of %d rows in 5 minutes", r.Stats().Published, b.N)
				}
				time.Sleep(200 * time.Microsecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			stop()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rows/s")
		})
	}
}

// The relay marks rows by their primary key however large the table has
// grown since its connection first ran the statement: Postgres keeps a
// generic plan for a prepared statement after five runs, and one made on
// a small table is a sequential scan, which read every retained row for
// every batch once the table was large (the ingest benchmark).
func TestRelayMarksByIndexAfterTheTableGrew(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// One connection, so every batch runs on the connection whose plans
	// were made while the table was small.
	cfg := e.pool.Config().Copy()
	cfg.MaxConns, cfg.MinConns = 1, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	startRelay(t, NewRelay(pool, e.js, testLogger(t), Options{}))
	published := 0
	// relayBatch commits 30 events in one statement and waits until the
	// last is marked published, looking it up by its key (counting rows
	// would scan the table). Marking 30 ids by index costs more than
	// scanning a table of a few hundred rows, so while the table is small
	// a generic plan would be a sequential scan.
	relayBatch := func() {
		t.Helper()
		var id int64
		if err := e.pool.QueryRow(ctx, `INSERT INTO outbox (aggregate, aggregate_id, kind, rev)
			SELECT 'document', g, 'updated', 1 FROM generate_series(1, 30) g RETURNING id`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		published += 30
		waitFor(t, 30*time.Second, "the batch marked published", func() bool {
			var done bool
			if err := e.pool.QueryRow(ctx, `SELECT bool_and(published_at IS NOT NULL) FROM outbox WHERE id >= $1 AND id < $1 + 30`, id).Scan(&done); err != nil {
				t.Fatal(err)
			}
			return done
		})
	}
	for range 8 { // more than the five custom plans Postgres makes first
		relayBatch()
	}
	// The table grows by 50,000 rows published earlier (kept for the
	// retention period).
	if _, err := e.pool.Exec(ctx, `INSERT INTO outbox (aggregate, aggregate_id, kind, rev, published_at)
		SELECT 'document', g, 'updated', 1, now() FROM generate_series(1, 50000) g`); err != nil {
		t.Fatal(err)
	}
	published += 50000
	// Postgres publishes a backend's table statistics at most once a
	// second, when it goes idle: a batch after a pause flushes what the
	// batches before it counted.
	seqScans := func() int64 {
		t.Helper()
		time.Sleep(1100 * time.Millisecond)
		relayBatch()
		var n int64
		err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
				return err
			}
			return tx.QueryRow(ctx, `SELECT seq_scan FROM pg_stat_user_tables WHERE relid = 'outbox'::regclass`).Scan(&n)
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := seqScans()
	for range 10 {
		relayBatch()
	}
	if after := seqScans(); after != before {
		t.Errorf("11 batches on a table of %d rows ran %d sequential scans of it, want 0", published, after-before)
	}
}
