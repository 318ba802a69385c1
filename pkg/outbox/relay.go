package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/docrepo/docrepo/pkg/events"
	eventv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/event/v1"
)

// MsgID is the Nats-Msg-Id of outbox row id of schema: each service's
// outbox numbers its rows on its own, so the schema keeps them apart in
// JetStream's duplicate window.
func MsgID(schema string, id int64) string { return schema + "-" + strconv.FormatInt(id, 10) }

// Relay defaults; see Options.
const (
	DefaultBatchSize    = 500
	DefaultMaxInFlight  = 256
	DefaultPollInterval = time.Second
	DefaultAckTimeout   = 5 * time.Second
	DefaultBackoffMin   = 50 * time.Millisecond
	// DefaultBackoffMax is also how long after an outage of the
	// database or NATS the relay may take to notice it is over; a retry
	// costs a connection attempt or a claim query.
	DefaultBackoffMax      = 2 * time.Second
	DefaultRetention       = 24 * time.Hour
	DefaultCleanupInterval = 10 * time.Minute

	markTimeout  = 10 * time.Second
	cleanupBatch = 5000
)

// Options configure a Relay. Zero fields take the defaults above.
type Options struct {
	// Name identifies the relay in logs, e.g. the service running it.
	Name string
	// Schema is the schema of the outbox table; by default the pool's
	// search_path (a service's pool has its own schema there).
	Schema string
	// BatchSize is the number of rows claimed, published and marked per
	// transaction.
	BatchSize int
	// MaxInFlight bounds the publishes awaiting their JetStream ack.
	MaxInFlight int
	// PollInterval is the fallback wake-up when no commit of this process
	// woke the relay (see Committed): it bounds how long rows written by a
	// process that died before its relay published them wait.
	PollInterval time.Duration
	// AckTimeout is how long to wait for one publish ack. A row whose ack
	// does not arrive stays unpublished and is published again later.
	AckTimeout time.Duration
	// BackoffMin and BackoffMax bound the capped exponential back-off after
	// a failed batch.
	BackoffMin, BackoffMax time.Duration
	// Retention is how long published rows are kept before the relay
	// deletes them; negative disables the cleanup.
	Retention time.Duration
	// CleanupInterval is how often the relay deletes expired rows.
	CleanupInterval time.Duration
}

func (o Options) withDefaults() Options {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	def(&o.PollInterval, DefaultPollInterval)
	def(&o.AckTimeout, DefaultAckTimeout)
	def(&o.BackoffMin, DefaultBackoffMin)
	def(&o.BackoffMax, DefaultBackoffMax)
	if o.BackoffMax < o.BackoffMin {
		o.BackoffMax = o.BackoffMin
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	def(&o.CleanupInterval, DefaultCleanupInterval)
	return o
}

// Relay publishes outbox rows to JetStream. Several relays, in one process
// or many, may run against the same database: each claims its batch with
// SELECT ... FOR UPDATE SKIP LOCKED, so no row is published by two relays at
// once, and JetStream's duplicate window absorbs the re-publication of a
// batch whose transaction did not commit.
//
// Rows are published in id order within a batch. Across relays, and when a
// lower id commits after a higher one, events can arrive out of id order;
// consumers rely on rev, not on arrival order.
type Relay struct {
	pool   *pgxpool.Pool
	js     jetstream.JetStream
	log    *slog.Logger
	opts   Options
	schema string

	running       atomic.Bool
	published     atomic.Int64
	duplicates    atomic.Int64
	publishErrors atomic.Int64

	poisonMu sync.Mutex
	poisoned map[int64]bool // rows already reported as unpublishable

	// recreate: a failed batch checks whether the stream is gone and
	// creates it again with streamOpts (RunRelay).
	recreate   bool
	streamOpts []StreamOption

	// Test hook: afterPublish runs once the batch's acks are in, before
	// the rows are marked and the transaction commits.
	afterPublish func(ctx context.Context, tx pgx.Tx, acked []int64)
}

// NewRelay returns a relay reading the outbox through pool and publishing to
// js; a nil log means slog.Default(). The DOCREPO stream must exist (see
// EnsureStream): until it does, publishes fail and are retried. Publish acks
// are awaited by the relay itself (Options.AckTimeout), so js needs no
// async-publish options.
func NewRelay(pool *pgxpool.Pool, js jetstream.JetStream, log *slog.Logger, opts Options) *Relay {
	if log == nil {
		log = slog.Default()
	}
	opts = opts.withDefaults()
	schema := opts.Schema
	if schema == "" {
		schema = poolSchema(pool)
	}
	return &Relay{
		pool:     pool,
		js:       js,
		log:      log.With("component", "outbox-relay", "relay", opts.Name),
		opts:     opts,
		schema:   schema,
		poisoned: map[int64]bool{},
	}
}

// recreateStream creates the DOCREPO stream again when it is gone: a NATS
// server that lost its store comes back without it, and every publish
// fails until someone creates it.
func (r *Relay) recreateStream(ctx context.Context) {
	if !r.recreate {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, r.opts.AckTimeout)
	defer cancel()
	if _, err := r.js.Stream(cctx, events.StreamName); !errors.Is(err, jetstream.ErrStreamNotFound) {
		return
	}
	if _, err := EnsureStream(cctx, r.js, r.streamOpts...); err != nil {
		r.log.Warn("the event stream is gone and could not be created again; retrying", "error", err)
		return
	}
	r.log.Warn("the event stream was gone (a NATS server that lost its store?) and is created again", "stream", events.StreamName)
}

// Stats counts what one relay has done since it was created.
type Stats struct {
	// Published counts rows acknowledged by JetStream and marked published.
	Published int64
	// Duplicates counts acks flagged duplicate: rows published again after
	// an earlier publish whose marking did not commit.
	Duplicates int64
	// PublishErrors counts publishes that failed or were not acknowledged.
	PublishErrors int64
}

// Stats returns the relay's counters.
func (r *Relay) Stats() Stats {
	return Stats{
		Published:     r.published.Load(),
		Duplicates:    r.duplicates.Load(),
		PublishErrors: r.publishErrors.Load(),
	}
}

// Run relays until ctx is done, then returns nil once its goroutines have
// stopped; a relay runs at most once at a time. Failures (database, NATS)
// are logged and retried with capped exponential back-off; no row is ever
// skipped for good.
//
// Stopping is graceful: the batch in hand sends nothing more, its acks in
// flight are awaited (at most AckTimeout) and the acknowledged rows marked,
// so a normal shutdown publishes nothing twice. Only a crash does, and then
// JetStream drops the copies within the stream's duplicate window.
func (r *Relay) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("outbox: relay is already running")
	}
	defer r.running.Store(false)

	wake := make(chan struct{}, 1)
	unregister := register(r.schema, wake)
	defer func() {
		unregister()
		r.log.Info("outbox relay stopped")
	}()
	r.log.Info("outbox relay started", "batch_size", r.opts.BatchSize, "poll_interval", r.opts.PollInterval)

	bo := backoff{min: r.opts.BackoffMin, max: r.opts.BackoffMax}
	poll := time.NewTimer(r.opts.PollInterval)
	defer poll.Stop()
	var lastBacklog time.Time
	nextCleanup := time.Now()
	for {
		claimed, marked, err := r.relayBatch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			d := bo.next()
			r.log.Warn("outbox batch failed; retrying", "err", err, "claimed", claimed, "marked", marked, "retry_in", d)
			r.recreateStream(ctx)
			if !sleep(ctx, d) {
				return nil
			}
			continue
		}
		bo.reset()
		more := claimed == r.opts.BatchSize && marked > 0
		if !more || time.Since(lastBacklog) >= r.opts.PollInterval {
			r.refreshBacklog(ctx)
			lastBacklog = time.Now()
		}
		if r.opts.Retention > 0 && !time.Now().Before(nextCleanup) {
			r.cleanup(ctx)
			nextCleanup = time.Now().Add(r.opts.CleanupInterval)
		}
		if more {
			continue
		}
		poll.Reset(r.opts.PollInterval)
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-poll.C:
		}
	}
}

// row is one claimed outbox row.
type row struct {
	id          int64
	aggregate   string
	aggregateID int64
	kind        string
	rev         int64
	actorUserID int64
	requestID   string
	folderIDs   []int64
	groupIDs    []int64
	filehashes  []string
	createdAt   time.Time
	traceparent string
}

type ackedRow struct {
	row       *row
	at        time.Time
	duplicate bool
}

// relayBatch claims, publishes and marks one batch in one transaction.
//
// Once rows are acknowledged they are marked even if ctx is cancelled
// meanwhile (within markTimeout), so that a normal shutdown publishes
// nothing twice; only a real crash leaves published rows unmarked.
func (r *Relay) relayBatch(ctx context.Context) (claimed, marked int, err error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		metricDBErrors.Inc()
		return 0, 0, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx) // no-op after Commit
	}()

	rows, err := claim(ctx, tx, r.opts.BatchSize)
	if err != nil {
		metricDBErrors.Inc()
		return 0, 0, fmt.Errorf("claim: %w", err)
	}
	if len(rows) == 0 {
		return 0, 0, nil
	}
	acked, pubErr := r.publish(ctx, rows)
	ids := make([]int64, len(acked))
	for i, a := range acked {
		ids[i] = a.row.id
	}
	if r.afterPublish != nil {
		r.afterPublish(ctx, tx, ids)
	}
	if len(ids) > 0 {
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
		defer cancel()
		// Like every statement of the relay, planned anew each time (an
		// unnamed statement), never as a prepared statement: a generic plan
		// made while the table was small would be a sequential scan kept
		// as published rows pile up.
		if _, err := tx.Exec(mctx, markPublishedSQL, pgx.QueryExecModeCacheDescribe, ids); err != nil {
			metricDBErrors.Inc()
			return len(rows), 0, fmt.Errorf("mark %d rows published: %w", len(ids), err)
		}
		if err := tx.Commit(mctx); err != nil {
			metricDBErrors.Inc()
			return len(rows), 0, fmt.Errorf("commit %d published rows: %w", len(ids), err)
		}
		for _, a := range acked {
			metricPublished.WithLabelValues(a.row.aggregate).Inc()
			if !a.duplicate {
				metricLatency.Observe(max(a.at.Sub(a.row.createdAt), 0).Seconds())
			}
		}
		r.published.Add(int64(len(ids)))
	}
	r.log.Debug("outbox batch relayed", "claimed", len(rows), "published", len(ids), "first_id", rows[0].id)
	if pubErr != nil {
		return len(rows), len(ids), fmt.Errorf("publish: %w", pubErr)
	}
	return len(rows), len(ids), nil
}

// markPublishedSQL marks the rows of a relayed batch published.
const markPublishedSQL = `UPDATE outbox SET published_at = now() WHERE id = ANY($1)`

func claim(ctx context.Context, tx pgx.Tx, limit int) ([]row, error) {
	rs, err := tx.Query(ctx, `SELECT id, aggregate, aggregate_id, kind, rev, actor_user_id, request_id, folder_ids, filehashes, created_at, traceparent, group_ids
		FROM outbox
		WHERE published_at IS NULL
		ORDER BY id
		LIMIT $1
		FOR UPDATE SKIP LOCKED`, pgx.QueryExecModeCacheDescribe, limit)
	if err != nil {
		return nil, err
	}
	var rows []row
	var x row
	_, err = pgx.ForEachRow(rs, []any{&x.id, &x.aggregate, &x.aggregateID, &x.kind, &x.rev, &x.actorUserID, &x.requestID, &x.folderIDs, &x.filehashes, &x.createdAt, &x.traceparent, &x.groupIDs}, func() error {
		rows = append(rows, x)
		x.folderIDs, x.filehashes, x.groupIDs = nil, nil, nil
		return nil
	})
	return rows, err
}

// publish sends rows in order with at most MaxInFlight acks outstanding and
// returns the acknowledged ones. After the first failure, or once ctx is
// done, it sends nothing more and collects the acks already in flight (on
// cancellation for at most AckTimeout in all) so they can be marked.
//
// Each ack is awaited until AckTimeout after its message was sent, not
// AckTimeout from when it is looked at: the acks of a window are awaited
// together, so a stream that stops acknowledging holds the batch's claim
// (its open transaction) for about AckTimeout, not once per message in
// flight (256 × 5 s before).
func (r *Relay) publish(ctx context.Context, rows []row) ([]ackedRow, error) {
	type inflight struct {
		row  *row
		f    jetstream.PubAckFuture
		sent time.Time
	}
	var (
		acked    = make([]ackedRow, 0, len(rows))
		window   = make([]inflight, 0, r.opts.MaxInFlight)
		firstErr error
	)
	fail := func(rw *row, err error) {
		r.publishErrors.Add(1)
		metricPublishErrors.Inc()
		if firstErr == nil {
			firstErr = fmt.Errorf("event %d: %w", rw.id, err)
		}
	}
	timer := time.NewTimer(r.opts.AckTimeout)
	defer timer.Stop()
	done := ctx.Done()           // nil once seen
	drain := make(chan struct{}) // closed AckTimeout after ctx is done
	var drainTimer *time.Timer
	defer func() {
		if drainTimer != nil {
			drainTimer.Stop()
		}
	}()
	ok := func(p inflight, ack *jetstream.PubAck) {
		if ack.Duplicate {
			r.duplicates.Add(1)
			metricDuplicates.Inc()
		}
		acked = append(acked, ackedRow{row: p.row, at: time.Now(), duplicate: ack.Duplicate})
	}
	await := func(p inflight) {
		select {
		case ack := <-p.f.Ok():
			ok(p, ack)
			return
		default:
		}
		timer.Reset(time.Until(p.sent.Add(r.opts.AckTimeout)))
		for {
			select {
			case ack := <-p.f.Ok():
				ok(p, ack)
			case err := <-p.f.Err():
				fail(p.row, err)
			case <-timer.C:
				fail(p.row, fmt.Errorf("no ack within %v", r.opts.AckTimeout))
			case <-done:
				done = nil
				drainTimer = time.AfterFunc(r.opts.AckTimeout, func() { close(drain) })
				if firstErr == nil {
					firstErr = ctx.Err()
				}
				continue
			case <-drain:
				// Shutting down and out of patience: the rows not acked by
				// now stay unpublished and are published again later.
				select {
				case ack := <-p.f.Ok():
					ok(p, ack)
				default:
				}
			}
			return
		}
	}

	for i := range rows {
		if firstErr != nil || ctx.Err() != nil {
			break
		}
		rw := &rows[i]
		msg, err := r.message(rw)
		if err != nil {
			// Not publishable as stored (e.g. a kind written by SQL that is
			// not a subject token). Leave it unpublished, visible in the
			// backlog, and carry on with the others.
			r.reportPoison(rw, err)
			continue
		}
		f, err := r.js.PublishMsgAsync(msg,
			jetstream.WithMsgID(MsgID(r.schema, rw.id)),
			jetstream.WithExpectStream(events.StreamName))
		if err != nil {
			fail(rw, err)
			break
		}
		window = append(window, inflight{row: rw, f: f, sent: time.Now()})
		if len(window) >= r.opts.MaxInFlight {
			await(window[0])
			window = window[1:]
		}
	}
	for _, p := range window {
		await(p)
	}
	return acked, firstErr
}

// message builds the NATS message of a row.
func (r *Relay) message(rw *row) (*nats.Msg, error) {
	var ev proto.Message
	occurred := timestamppb.New(rw.createdAt)
	switch rw.aggregate {
	case AggregateDocument:
		ev = &eventv1.DocumentEvent{
			EventId:     rw.id,
			DocId:       rw.aggregateID,
			Rev:         rw.rev,
			Kind:        rw.kind,
			OccurredAt:  occurred,
			ActorUserId: rw.actorUserID,
			RequestId:   rw.requestID,
			// Empty for all but purges.
			ErasedFilehashes: rw.filehashes,
		}
	case AggregateFolder:
		ev = &eventv1.FolderEvent{
			EventId:     rw.id,
			FolderId:    rw.aggregateID,
			Kind:        rw.kind,
			OccurredAt:  occurred,
			ActorUserId: rw.actorUserID,
			FolderIds:   rw.folderIDs,
			RequestId:   rw.requestID,
			GroupIds:    rw.groupIDs,
		}
	default:
		return nil, fmt.Errorf("unknown aggregate %q", rw.aggregate)
	}
	msg, err := events.Encode(ev)
	if err != nil {
		return nil, err
	}
	// The span to continue is the writer's, not the relay's: Insert stored
	// its W3C traceparent with the row, and consumers extract it from here.
	if rw.traceparent != "" {
		msg.Header.Set(events.HeaderTraceparent, rw.traceparent)
	}
	return msg, nil
}

func (r *Relay) reportPoison(rw *row, err error) {
	r.poisonMu.Lock()
	seen := r.poisoned[rw.id]
	r.poisoned[rw.id] = true
	r.poisonMu.Unlock()
	if !seen {
		metricPublishErrors.Inc()
		r.publishErrors.Add(1)
		r.log.Error("outbox row cannot be published; leaving it unpublished", "id", rw.id, "aggregate", rw.aggregate, "kind", rw.kind, "err", err)
	}
}

func (r *Relay) refreshBacklog(ctx context.Context) {
	var n int64
	if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`, pgx.QueryExecModeCacheDescribe).Scan(&n); err != nil {
		if ctx.Err() == nil {
			metricDBErrors.Inc()
			r.log.Warn("outbox backlog count failed", "err", err)
		}
		return
	}
	metricBacklog.Set(float64(n))
}

// cleanup deletes rows published more than Retention ago, in chunks so as
// not to hold many locks at once. Unpublished rows are never deleted.
func (r *Relay) cleanup(ctx context.Context) int64 {
	var total int64
	for ctx.Err() == nil {
		tag, err := r.pool.Exec(ctx, `DELETE FROM outbox WHERE id IN (
			SELECT id FROM outbox
			WHERE published_at < now() - make_interval(secs => $1)
			ORDER BY id
			LIMIT $2
			FOR UPDATE SKIP LOCKED)`, r.opts.Retention.Seconds(), cleanupBatch)
		if err != nil {
			if ctx.Err() == nil {
				metricDBErrors.Inc()
				r.log.Warn("outbox cleanup failed", "err", err)
			}
			break
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < cleanupBatch {
			break
		}
	}
	if total > 0 {
		r.log.Info("outbox cleanup deleted published rows", "rows", total, "retention", r.opts.Retention)
	}
	return total
}

// signal wakes the relay loop without blocking; wake-ups coalesce.
func signal(wake chan<- struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// sleep waits d or until ctx is done; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// backoff is capped exponential back-off with jitter: each delay is drawn
// from [d/2, d) where d doubles from min up to max.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	half := b.cur / 2
	return half + rand.N(half+1)
}

func (b *backoff) reset() { b.cur = 0 }
