package indexing

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/docrepo/docrepo/pkg/events"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	eventv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/event/v1"
	"github.com/docrepo/docrepo/pkg/outbox"
	"github.com/docrepo/docrepo/pkg/tracing"
)

// Consumer defaults; see ConsumerOptions.
const (
	DefaultDurable   = "indexer"
	DefaultBatchSize = 64
	// DefaultAckWait is short: a message delivered to a consumer that died
	// is redelivered within seconds. Work in progress keeps its messages
	// by heartbeats (InProgress every AckWait/3).
	DefaultAckWait = 10 * time.Second
	// DefaultMaxDeliver deliveries without success park an event.
	DefaultMaxDeliver = 50
	// DefaultIsolateAfter: an event delivered this often is handled alone,
	// so one that makes the process fail cannot take a batch with it.
	DefaultIsolateAfter    = 3
	DefaultLinger          = 5 * time.Millisecond
	DefaultPipeline        = 2
	DefaultContentAttempts = 5
	DefaultBackoffMin      = 500 * time.Millisecond
	DefaultBackoffMax      = time.Minute
	pendingInterval        = 2 * time.Second
	streamWaitInterval     = time.Second
	streamCallTimeout      = 10 * time.Second
)

// ConsumerOptions configure Consume. JetStream is required.
type ConsumerOptions struct {
	JetStream jetstream.JetStream
	// Durable is the consumer's durable name. Every process that indexes
	// the same engine must use the same name (they share the work); an
	// engine of its own needs a name of its own.
	Durable string
	// BatchSize is the most messages processed together.
	BatchSize int
	// Linger is how long to wait for more messages once one has arrived,
	// before processing a partial batch.
	Linger time.Duration
	// AckWait: a message not acknowledged within it is redelivered. The
	// consumer extends it for messages being worked on.
	AckWait time.Duration
	// ContentAttempts: from this delivery of an event on, a file that
	// cannot be downloaded no longer holds the document back; it is
	// indexed without content.
	ContentAttempts int
	// BackoffMin and BackoffMax bound the redelivery delay after a
	// transient failure (doubling with each delivery).
	BackoffMin, BackoffMax time.Duration
	// MaxDeliver: an event delivered this many times without being handled
	// is parked in the dead-letter stream (DeadLetterStream).
	MaxDeliver int
	// IsolateAfter: events delivered this many times are handled one by
	// one, outside the batch.
	IsolateAfter int
	// StreamReplicas is the replica count of the dead-letter stream when
	// the consumer creates it.
	StreamReplicas int
	// Pipeline is how many batches are in flight at once: while one is
	// written to the engine, the next is loaded. The engine keeps the
	// newest revision of a document whatever order batches finish in.
	Pipeline int
	// Exclusive says this process is the only one consuming Durable (the
	// embedded engine, whose index has a single writer). Then the events
	// still unacknowledged when Consume starts were held by a process
	// that died, and Consume hands them out again at once (it resets the
	// consumer to its ack floor; NATS 2.14 or newer) instead of letting
	// them wait out AckWait. Never set it for consumers several processes
	// share: their events in progress would be handled twice.
	Exclusive bool
}

func (o *ConsumerOptions) defaults() {
	if o.Durable == "" {
		o.Durable = DefaultDurable
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Linger <= 0 {
		o.Linger = DefaultLinger
	}
	if o.Pipeline <= 0 {
		o.Pipeline = DefaultPipeline
	}
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
	}
	if o.ContentAttempts <= 0 {
		o.ContentAttempts = DefaultContentAttempts
	}
	if o.BackoffMin <= 0 {
		o.BackoffMin = DefaultBackoffMin
	}
	if o.BackoffMax < o.BackoffMin {
		o.BackoffMax = max(DefaultBackoffMax, o.BackoffMin)
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = DefaultMaxDeliver
	}
	if o.IsolateAfter <= 0 {
		o.IsolateAfter = DefaultIsolateAfter
	}
}

// ConsumerConfig is the JetStream consumer Consume creates or updates.
func ConsumerConfig(o ConsumerOptions) jetstream.ConsumerConfig {
	o.defaults()
	return jetstream.ConsumerConfig{
		Durable:       o.Durable,
		Description:   "docrepo indexer: keeps the search engine in step with document events",
		FilterSubject: events.SubjectDocuments,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: max(4*o.BatchSize, 1000),
	}
}

// Consume indexes document events until ctx ends (then it returns nil). It
// makes sure the DOCREPO stream, the durable consumer and the dead-letter
// stream exist (creating what is missing), and processes batches. When
// they vanish while it runs — a NATS server restarted with an empty store —
// it creates them again, and has the anti-entropy pass repair the index for
// the events that were lost with the store.
func (ix *Indexer) Consume(ctx context.Context, o ConsumerOptions) error {
	if o.JetStream == nil {
		return errors.New("indexing: ConsumerOptions.JetStream is required")
	}
	o.defaults()
	first := true
	for ctx.Err() == nil {
		cons, err := ix.openConsumer(ctx, o)
		if err != nil || cons == nil {
			return err
		}
		if first && o.Exclusive {
			ix.reclaim(ctx, o.JetStream, cons, o)
		}
		if !first {
			ix.log.Warn("the event stream or the indexer's consumer was gone (a NATS server that lost its store?) and is back; repairing the index from the documents of record",
				"stream", events.StreamName, "durable", o.Durable)
			metricConsumerRecreated.Inc()
			go ix.repairAfterLoss(ctx)
		}
		first = false
		ix.log.Info("indexer consuming", "stream", events.StreamName, "durable", o.Durable, "filter", events.SubjectDocuments)
		ix.consumeUntilLost(ctx, cons, o)
	}
	return nil
}

// openConsumer makes sure the event stream, the durable consumer and the
// dead-letter stream exist, waiting (and retrying) while NATS does not
// answer. It returns nil, nil when ctx ends.
func (ix *Indexer) openConsumer(ctx context.Context, o ConsumerOptions) (jetstream.Consumer, error) {
	logged := false
	for {
		cons, err := ix.ensureConsumer(ctx, o)
		if err == nil {
			return cons, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if !logged {
			ix.log.Info("waiting for the event stream", "stream", events.StreamName, "error", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(streamWaitInterval):
		}
	}
}

// ensureConsumer creates what is missing of the event stream (as the
// publishing services configure it), the dead-letter stream and the
// consumer, in that order.
func (ix *Indexer) ensureConsumer(ctx context.Context, o ConsumerOptions) (jetstream.Consumer, error) {
	cctx, cancel := context.WithTimeout(ctx, streamCallTimeout)
	defer cancel()
	if _, err := o.JetStream.Stream(cctx, events.StreamName); errors.Is(err, jetstream.ErrStreamNotFound) {
		if _, err := outbox.EnsureStream(cctx, o.JetStream, outbox.WithReplicas(max(1, o.StreamReplicas))); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	// The dead-letter stream first: once the consumer exists it can
	// deliver a message that must be parked.
	if err := ensureDeadLetterStream(cctx, o.JetStream, o.StreamReplicas); err != nil {
		return nil, err
	}
	cons, err := o.JetStream.CreateOrUpdateConsumer(cctx, events.StreamName, ConsumerConfig(o))
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", o.Durable, err)
	}
	return cons, nil
}

// consumeUntilLost processes batches until ctx ends or the consumer is
// found gone (watchConsumer): a pull iterator whose stream vanished with
// the server's store does not fail, it only stops delivering.
func (ix *Indexer) consumeUntilLost(ctx context.Context, cons jetstream.Consumer, o ConsumerOptions) {
	lctx, lost := context.WithCancel(ctx)
	defer lost()
	go ix.watchConsumer(lctx, lost, cons)
	for lctx.Err() == nil {
		if err := ix.consume(ctx, lctx, cons, o); err != nil && lctx.Err() == nil {
			ix.log.Warn("indexer message iterator stopped; restarting", "error", err)
			select {
			case <-lctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// watchConsumer reports the consumer's backlog every pendingInterval and
// calls lost once the server says the consumer or its stream does not
// exist.
func (ix *Indexer) watchConsumer(ctx context.Context, lost func(), cons jetstream.Consumer) {
	t := time.NewTicker(pendingInterval)
	defer t.Stop()
	for {
		info, err := cons.Info(ctx)
		switch {
		case err == nil:
			metricPending.Set(float64(info.NumPending) + float64(info.NumAckPending))
		case errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound):
			if ctx.Err() == nil {
				ix.log.Warn("the indexer's consumer is gone; creating it again", "error", err)
				lost()
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// repairAfterLoss runs the anti-entropy pass once the event stream was
// found lost: the events it held that were not yet indexed are gone, and
// the pass indexes what they would have.
func (ix *Indexer) repairAfterLoss(ctx context.Context) {
	if !ix.repairing.CompareAndSwap(false, true) {
		return
	}
	defer ix.repairing.Store(false)
	res, err := ix.Verify(ctx, nil)
	if err != nil && ctx.Err() == nil {
		ix.log.Warn("repair after the event stream was lost failed; the periodic pass tries again", "error", err)
		return
	}
	ix.log.Info("repaired the index after the event stream was lost", "repaired", res.Repaired(), "checked", res.Checked)
}

// reclaimTimeout bounds the consumer reset at start-up (a server before
// 2.14 does not answer it).
const reclaimTimeout = 5 * time.Second

// reclaim makes the events a dead predecessor of this exclusive consumer
// held unacknowledged deliverable again at once: the fault-injection suite
// (gateway/faulttest) measured a search process killed with SIGKILL
// leaving up to AckWait (10 s) of documents unsearchable after it was
// back. Events acknowledged above the ack floor come again too; handling
// is idempotent and the engine keeps the newest revision.
func (ix *Indexer) reclaim(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer, o ConsumerOptions) {
	held := cons.CachedInfo().NumAckPending
	if held == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, reclaimTimeout)
	defer cancel()
	resp, err := js.ResetConsumer(rctx, events.StreamName, o.Durable)
	if err != nil {
		if ctx.Err() == nil {
			ix.log.Warn("could not reclaim the events a previous process held (NATS 2.14 or newer can); they are delivered again after the ack wait",
				"durable", o.Durable, "held", held, "ack_wait", o.AckWait, "error", err)
		}
		return
	}
	ix.log.Info("reclaimed the events a previous process held unacknowledged", "durable", o.Durable, "held", held, "from_stream_seq", resp.ResetSeq)
}

// consume runs one message iterator until it fails or next ends; batches
// are processed under ctx.
func (ix *Indexer) consume(ctx, next context.Context, cons jetstream.Consumer, o ConsumerOptions) error {
	it, err := cons.Messages(jetstream.PullMaxMessages(o.BatchSize * o.Pipeline))
	if err != nil {
		return err
	}
	defer it.Stop()
	// Batches in flight finish (and acknowledge) before consume returns.
	inflight := make(chan struct{}, o.Pipeline)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		first, err := it.Next(jetstream.NextContext(next))
		if err != nil {
			return err
		}
		// The batch grows while messages keep coming within Linger, and
		// also for as long as every pipeline slot is busy: under load,
		// batches grow with it (fewer, larger engine writes), while a
		// lone event still goes at once.
		batch := []jetstream.Msg{first}
		for len(batch) < o.BatchSize {
			m, err := it.Next(jetstream.NextMaxWait(o.Linger))
			if err == nil {
				batch = append(batch, m)
				continue
			}
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) || len(inflight) < cap(inflight) {
				break
			}
		}
		inflight <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-inflight; wg.Done() }()
			ix.processBatch(ctx, batch, o)
		}()
	}
}

// pendingMsg is a message of a batch and what it asks for.
type pendingMsg struct {
	msg       jetstream.Msg
	delivered uint64
	occurred  time.Time
}

// processBatch indexes the documents of a batch and acknowledges each
// message once the engine write covering it is done: decode the events
// into one item per document, keep them in progress, handle the items
// (suspects one by one), settle every message.
func (ix *Indexer) processBatch(ctx context.Context, batch []jetstream.Msg, o ConsumerOptions) {
	start := time.Now()
	items, byDoc := ix.decodeBatch(ctx, batch, o)
	if len(items) == 0 {
		return
	}
	stopProgress := ix.keepInProgress(batch, o.AckWait/3)
	defer stopProgress()
	// Events delivered several times already are handled one by one: if
	// one of them makes the process fail, it fails alone, and only its
	// deliveries count up to MaxDeliver.
	batched, alone := splitSuspects(items, byDoc, o.IsolateAfter)
	ix.handleItems(ctx, batched, byDoc, o)
	for _, it := range alone {
		ix.handleItems(ctx, []Item{it}, byDoc, o)
	}
	metricBatch.Observe(time.Since(start).Seconds())
}

// decodeBatch turns a batch's messages into one Item per document (the
// highest rev of its events, the newest writer's trace) and the messages
// each item settles. Messages that are no valid document event, or that
// were delivered too often, are parked at once.
func (ix *Indexer) decodeBatch(ctx context.Context, batch []jetstream.Msg, o ConsumerOptions) ([]Item, map[int64][]pendingMsg) {
	var items []Item
	byDoc := map[int64][]pendingMsg{}
	pos := map[int64]int{}
	for _, m := range batch {
		pm, ev, err := decodeMessage(m)
		if err != nil {
			metricFailed.WithLabelValues("bad_event").Inc()
			ix.park(ctx, o, m, pm.delivered, fmt.Errorf("not a valid document event: %w", err))
			continue
		}
		if pm.delivered > uint64(o.MaxDeliver) {
			ix.park(ctx, o, m, pm.delivered, errDeliveredTooOften{pm.delivered})
			continue
		}
		id := ev.GetDocId()
		i, ok := pos[id]
		if !ok {
			i = len(items)
			pos[id] = i
			items = append(items, Item{ID: id, DeferOCR: ix.defersOCR()})
		}
		if ev.GetRev() >= items[i].Rev {
			// The newest event's writer is the cause of what gets indexed.
			items[i].Cause = trace.SpanContextFromContext(tracing.Extract(ctx, events.HeaderCarrier(m.Headers())))
		}
		items[i].Rev = max(items[i].Rev, ev.GetRev())
		items[i].EraseFilehashes = append(items[i].EraseFilehashes, ev.GetErasedFilehashes()...)
		if pm.delivered >= uint64(o.ContentAttempts) {
			items[i].DegradeContent = true
		}
		byDoc[id] = append(byDoc[id], pm)
	}
	return items, byDoc
}

// decodeMessage reads a message's delivery count, event and occurrence
// time; the error says why it is no valid document event.
func decodeMessage(m jetstream.Msg) (pendingMsg, *eventv1.DocumentEvent, error) {
	pm := pendingMsg{msg: m, delivered: 1}
	if md, err := m.Metadata(); err == nil {
		pm.delivered = md.NumDelivered
	}
	ev, err := events.DecodeDocumentEvent(m)
	if err == nil && ev.GetDocId() <= 0 {
		err = errors.New("document event without a document id")
	}
	if err != nil {
		return pm, nil, err
	}
	if ev.GetOccurredAt() != nil {
		pm.occurred = ev.GetOccurredAt().AsTime()
	}
	return pm, ev, nil
}

// splitSuspects separates the items whose events were delivered
// isolateAfter times or more (handled alone) from the others.
func splitSuspects(items []Item, byDoc map[int64][]pendingMsg, isolateAfter int) (batched, alone []Item) {
	for _, it := range items {
		if suspect(byDoc[it.ID], isolateAfter) {
			alone = append(alone, it)
		} else {
			batched = append(batched, it)
		}
	}
	return batched, alone
}

// handleItems indexes its and settles their messages. Items failing for a
// transient reason are tried again at once while an outage of what every
// document needs lasts (holdThroughOutage: the index catches up as soon as
// it ends, and a long one counts no deliveries towards the dead-letter
// stream); otherwise they are redelivered with a growing delay.
func (ix *Indexer) handleItems(ctx context.Context, its []Item, byDoc map[int64][]pendingMsg, o ConsumerOptions) {
	for len(its) > 0 {
		results := ix.Index(ctx, its)
		again := ix.settleResults(ctx, its, results, byDoc, o)
		if len(again) == 0 {
			return
		}
		if !ix.holdThroughOutage(ctx) {
			for _, i := range again {
				ix.settle(ctx, its[i], results[i], byDoc[its[i].ID], o)
			}
			return
		}
		retry := make([]Item, len(again))
		for j, i := range again {
			retry[j] = its[i]
		}
		its = retry
	}
}

// settleResults settles the messages of every item whose result is final
// and returns the positions of those that failed transiently (left
// unsettled for the caller).
func (ix *Indexer) settleResults(ctx context.Context, its []Item, results []Result, byDoc map[int64][]pendingMsg, o ConsumerOptions) []int {
	var again []int
	for i, it := range its {
		switch {
		case results[i].Outcome == Failed && transient(results[i].Err) && ctx.Err() == nil:
			again = append(again, i)
		default:
			ix.settle(ctx, it, results[i], byDoc[it.ID], o)
		}
	}
	return again
}

// suspect reports whether any of msgs has been delivered isolateAfter
// times or more.
func suspect(msgs []pendingMsg, isolateAfter int) bool {
	for _, pm := range msgs {
		if pm.delivered >= uint64(isolateAfter) {
			return true
		}
	}
	return false
}

// settle acknowledges the messages of an item after its result: ack when
// handled, delayed redelivery after a transient failure, termination of
// events the document service refuses.
func (ix *Indexer) settle(ctx context.Context, it Item, r Result, msgs []pendingMsg, o ConsumerOptions) {
	if r.Outcome == Failed {
		if ctx.Err() != nil {
			// Shutting down: hand the messages back at once.
			for _, pm := range msgs {
				_ = pm.msg.Nak()
			}
			return
		}
		if !transient(r.Err) {
			metricFailed.WithLabelValues("bad_event").Inc()
			for _, pm := range msgs {
				ix.park(ctx, o, pm.msg, pm.delivered, fmt.Errorf("the document service refuses it: %w", r.Err))
			}
			return
		}
		metricFailed.WithLabelValues("transient").Inc()
		for _, pm := range msgs {
			delay := backoff(pm.delivered, o.BackoffMin, o.BackoffMax)
			ix.log.Warn("indexing failed; retrying", "doc_id", it.ID, "rev", it.Rev, "delivery", pm.delivered, "retry_in", delay, "error", r.Err)
			_ = pm.msg.NakWithDelay(delay)
		}
		return
	}
	metricIndexed.WithLabelValues(r.Outcome.String()).Inc()
	now := time.Now()
	for _, pm := range msgs {
		if err := pm.msg.Ack(); err != nil {
			ix.log.Warn("ack failed; the event will be redelivered and found current", "doc_id", it.ID, "error", err)
			continue
		}
		if !pm.occurred.IsZero() {
			metricLag.Observe(now.Sub(pm.occurred).Seconds())
		}
	}
}

// keepInProgress extends the ack deadline of msgs every interval until the
// returned function is called.
func (ix *Indexer) keepInProgress(msgs []jetstream.Msg, interval time.Duration) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, m := range msgs {
					_ = m.InProgress()
				}
			}
		}
	}()
	return func() { close(done) }
}

// backoff is the redelivery delay after the given delivery failed.
func backoff(delivered uint64, lo, hi time.Duration) time.Duration {
	d := lo
	for i := uint64(1); i < delivered && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// outageProbeID is a document id that never exists: reading it exercises
// the document service and its database (and the engine) without touching
// any document.
const outageProbeID = math.MaxInt64

// outagePoll is how often an outage is probed for its end.
const outagePoll = 250 * time.Millisecond

// reachable reports whether the document service (with its database) and
// the engine answer: the calls every document's indexing makes.
func (ix *Indexer) reachable(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, ix.o.CallTimeout)
	_, err := ix.o.Source.GetIndexDocument(cctx, &documentv1.GetIndexDocumentRequest{DocId: outageProbeID})
	cancel()
	if err != nil {
		return fmt.Errorf("document service: %w", err)
	}
	ectx, cancel := context.WithTimeout(ctx, ix.o.EngineTimeout)
	_, _, err = ix.o.Engine.Revision(ectx, outageProbeID)
	cancel()
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// holdThroughOutage is called after documents failed with a transient
// error. When the document service, its database or the engine does not
// answer, it waits until they do (probing every outagePoll) and reports
// true: the caller tries the documents again at once. When they answer,
// the failure is the documents' own and it reports false at once.
func (ix *Indexer) holdThroughOutage(ctx context.Context) bool {
	err := ix.reachable(ctx)
	if err == nil || ctx.Err() != nil {
		return false
	}
	began := time.Now()
	if ix.outages.Add(1) == 1 {
		metricOutage.Set(1)
		ix.log.Warn("indexing paused: a dependency does not answer; events are held until it does", "error", err)
	}
	defer func() {
		if ix.outages.Add(-1) == 0 {
			metricOutage.Set(0)
			ix.log.Info("indexing resumed: the dependency answers again", "paused", time.Since(began).Round(time.Millisecond))
		}
	}()
	t := time.NewTicker(outagePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		if ix.reachable(ctx) == nil {
			return true
		}
	}
}
