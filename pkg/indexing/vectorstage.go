package indexing

import (
	"context"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// The vector stage. Embedding a long document with a transformer takes
// seconds (pkg/embed/doc.go), extracting and indexing its text
// milliseconds; with Options.DeferVectors the consumer does not wait for
// the embedder: a document is written with its full text, metadata and
// metadata vector, marked VectorsPending, and acknowledged, so text
// search finds it at once. RunVectorStage then embeds the pending
// documents' passages, a batch (Options.VectorBatch documents) at a time,
// one batch after the other, and gives the engine their vectors; a
// document changed meanwhile is skipped (the engine takes vectors only
// for the revision they were made from) and embedded again at its new
// revision. Until its vectors arrive a document is no content neighbour
// of any vector search. The pending mark is kept by the engine, so the
// stage resumes after a restart; docrepo_indexer_vector_backlog is the
// number of documents waiting.
//
// Text goes first. The encoder takes every core while it embeds, so the
// stage gives way to text indexing: while Index calls run, or ran in the
// last vectorTextIdle, it embeds one document at a time and then rests
// vectorRest times as long as that document took (at most
// Options.VectorYield, less if text pauses), so it holds at most a fifth
// of the time while text is indexed; once text indexing has paused for
// vectorTextIdle it embeds whole batches. A slow encoder (a transformer:
// a fraction of a second per document) thus trickles under a steady
// stream of uploads and catches up afterwards, with text searchable
// within its usual lag; a cheap one (the hash) keeps up anyway.
//
// The stage needs an engine that takes vectors after the document
// (engine.VectorStage: the embedded engine); with OpenSearch the indexer
// embeds before writing, as without DeferVectors.

// vectorStageIdle is how long the stage sleeps with nothing to do when
// nobody wakes it (a write by another indexer of the same engine, a
// restart with documents pending).
const vectorStageIdle = 5 * time.Second

// vectorStageRetry is how long the stage waits after a failure.
const vectorStageRetry = 2 * time.Second

// vectorTextIdle is how long text indexing must have paused before the
// stage embeds a whole batch. It is long against the gaps between the
// consumer's batches during an upload (which the encoder itself widens
// when it takes the cores), so a steady stream of uploads counts as busy.
const vectorTextIdle = 2 * time.Second

// vectorRest is how many times as long as its last document took the
// stage rests while text is indexed: the stage's share of the time is
// 1/(1+vectorRest).
const vectorRest = 4

// vectorStageReport is how often the stage logs its progress while
// documents wait.
const vectorStageReport = 30 * time.Second

// DefersVectors reports whether the indexer writes documents before their
// content vectors (Options.DeferVectors with an engine that allows it).
func (ix *Indexer) DefersVectors() bool { return ix.o.DeferVectors }

func (ix *Indexer) wakeStage() {
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

// RunVectorStage embeds the passages of documents written with their
// vectors pending until ctx ends. It returns at once when the indexer
// does not defer vectors.
func (ix *Indexer) RunVectorStage(ctx context.Context) {
	vs, ok := ix.o.Engine.(engine.VectorStage)
	if !ix.o.DeferVectors || !ok {
		return
	}
	log := ix.log.With("stage", "vectors")
	var (
		embedded   int
		lastReport = time.Now()
		wasBehind  bool
	)
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-ix.wake:
		case <-t.C:
		}
		return true
	}
	for ctx.Err() == nil {
		batch, busy := ix.o.VectorBatch, ix.o.VectorYield >= 0 && ix.textBusy()
		if busy {
			batch = 1
		}
		began := time.Now()
		n, backlog, err := ix.vectorStep(ctx, vs, batch, true)
		took := time.Since(began)
		embedded += n
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("embedding pending documents failed; trying again", "error", err, "waiting", backlog)
			if !wait(vectorStageRetry) {
				return
			}
			continue
		}
		if backlog > 0 {
			wasBehind = true
			if time.Since(lastReport) >= vectorStageReport {
				log.Info("documents waiting for their vectors", "waiting", backlog, "embedded", embedded,
					"per_second", float64(embedded)/time.Since(lastReport).Seconds())
				embedded, lastReport = 0, time.Now()
			}
		} else if wasBehind {
			log.Info("every document has its vectors", "embedded", embedded)
			wasBehind, embedded, lastReport = false, 0, time.Now()
		}
		if n == 0 {
			if !wait(vectorStageIdle) {
				return
			}
		} else if busy {
			ix.yieldToText(ctx, min(ix.o.VectorYield, vectorRest*took))
		}
	}
}

func (ix *Indexer) textBegin() { ix.textRunning.Add(1) }

func (ix *Indexer) textEnd() {
	ix.textDone.Store(time.Now().UnixNano())
	ix.textRunning.Add(-1)
}

// textBusy reports whether text indexing runs or ran within
// vectorTextIdle.
func (ix *Indexer) textBusy() bool {
	return ix.textRunning.Load() > 0 || time.Since(time.Unix(0, ix.textDone.Load())) < vectorTextIdle
}

// yieldToText waits while text indexing is busy, at most d, and returns
// early when ctx ends.
func (ix *Indexer) yieldToText(ctx context.Context, d time.Duration) {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(min(d, 100*time.Millisecond))
	defer tick.Stop()
	for ix.textBusy() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// vectorStep embeds one batch (at most batch documents) of pending
// documents and writes their vectors. It returns how many were written and how many documents wait
// (before the batch). With report it sets docrepo_indexer_vector_backlog
// (the stage of the index in use does; a rebuild's new index does not).
func (ix *Indexer) vectorStep(ctx context.Context, vs engine.VectorStage, batch int, report bool) (int, int, error) {
	ectx, cancel := context.WithTimeout(ctx, ix.o.EngineTimeout)
	docs, backlog, err := vs.PendingVectors(ectx, batch)
	cancel()
	if err != nil {
		return 0, 0, err
	}
	if report {
		metricVectorBacklog.Set(float64(backlog))
	}
	if len(docs) == 0 {
		return 0, 0, nil
	}
	// Vectors of another embedder than the index's are never written; the
	// documents wait for the index's rebuild (CheckEmbedder).
	if fit, err := ix.vectorsFit(ctx); err != nil || !fit {
		return 0, backlog, err
	}
	texts := make([]string, len(docs))
	for i := range docs {
		texts[i] = docs[i].Content
	}
	vecs, err := ix.passages(ctx, texts)
	if err != nil {
		return 0, backlog, err
	}
	for i := range docs {
		docs[i].ContentVectors = vecs[i]
	}
	ectx, cancel = context.WithTimeout(ctx, ix.o.EngineTimeout)
	res, err := vs.SetContentVectors(ectx, docs)
	cancel()
	if err != nil {
		return 0, backlog, err
	}
	if report {
		metricVectorBacklog.Set(float64(max(backlog-res.Written, 0)))
	}
	// Documents changed meanwhile (stale) wait again at their new
	// revision; the step still moved forward when it wrote any.
	return max(res.Written, min(res.Stale, 1)), backlog, nil
}
