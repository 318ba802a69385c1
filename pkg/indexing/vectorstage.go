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
// The stage needs an engine that takes vectors after the document
// (engine.VectorStage: the embedded engine); with OpenSearch the indexer
// embeds before writing, as without DeferVectors.

// vectorStageIdle is how long the stage sleeps with nothing to do when
// nobody wakes it (a write by another indexer of the same engine, a
// restart with documents pending).
const vectorStageIdle = 5 * time.Second

// vectorStageRetry is how long the stage waits after a failure.
const vectorStageRetry = 2 * time.Second

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
		n, backlog, err := ix.vectorStep(ctx, vs)
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
		if n == 0 && !wait(vectorStageIdle) {
			return
		}
	}
}

// vectorStep embeds one batch of pending documents and writes their
// vectors. It returns how many were written and how many documents wait
// (before the batch).
func (ix *Indexer) vectorStep(ctx context.Context, vs engine.VectorStage) (int, int, error) {
	ectx, cancel := context.WithTimeout(ctx, ix.o.EngineTimeout)
	docs, backlog, err := vs.PendingVectors(ectx, ix.o.VectorBatch)
	cancel()
	if err != nil {
		return 0, 0, err
	}
	metricVectorBacklog.Set(float64(backlog))
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
	metricVectorBacklog.Set(float64(max(backlog-res.Written, 0)))
	// Documents changed meanwhile (stale) wait again at their new
	// revision; the step still moved forward when it wrote any.
	return max(res.Written, min(res.Stale, 1)), backlog, nil
}
