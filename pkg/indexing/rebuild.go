package indexing

import (
	"context"
	"fmt"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// A full rebuild (IndexerService.Reindex with recreate) never leaves
// search partial: it writes a complete new index while the current one
// goes on answering searches and taking the consumer's writes, catches the
// new index up with the documents of record (an anti-entropy pass into it:
// what changed or was deleted while it was written), switches to it
// atomically, and then runs the anti-entropy pass on the index in use,
// which brings over whatever changed during the catch-up. A rebuild that
// fails, is cancelled, or cannot index every document leaves the current
// index untouched.
//
// The engines provide the Target: the embedded engine a new index
// generation behind engine.Switchable (services/search), OpenSearch a new
// versioned index the alias is moved to (opensearchengine.Generation,
// services/indexer).

// Target is where a rebuild writes: a new, empty index, and how to make it
// current (or drop it).
type Target interface {
	// Engine is the new index.
	Engine() engine.Engine
	// Commit makes the new index the one in use (atomically, for searches
	// and writes alike) and releases the old one.
	Commit(ctx context.Context) error
	// Abandon drops the new index.
	Abandon()
}

// Rebuild indexes every document of record into a target that newTarget
// creates, then commits it and verifies the result against the documents
// of record. report receives the progress of the rebuild, then of the
// verification.
func (ix *Indexer) Rebuild(ctx context.Context, newTarget func(ctx context.Context) (Target, error), report func(Progress) error) (Progress, error) {
	t, err := newTarget(ctx)
	if err != nil {
		return Progress{}, fmt.Errorf("indexing: rebuild: new index: %w", err)
	}
	into := &Indexer{o: ix.o, log: ix.log.With("rebuild", true), id: ix.id, wake: make(chan struct{}, 1), ocrWake: ix.ocrWake}
	into.o.Engine = t.Engine()
	// The new index is switched in complete, vectors and OCR text
	// included (OCR text comes from the cache when the file was read
	// before; the OCR stage writes the index in use, not this one).
	into.o.DeferVectors = false
	into.inlineOCR = true
	p, err := into.Reindex(ctx, false, func(p Progress) error {
		if p.Finished || report == nil {
			return nil // finished only after the switch
		}
		return report(p)
	})
	if err == nil && p.Failed > 0 {
		err = fmt.Errorf("indexing: rebuild: %d documents could not be indexed; the current index stays in use", p.Failed)
	}
	if err != nil {
		t.Abandon()
		return p, err
	}
	// Writes that went to the current index while the new one was written.
	caught, err := into.Verify(ctx, nil)
	if err != nil {
		t.Abandon()
		return p, fmt.Errorf("indexing: rebuild: catching the new index up: %w", err)
	}
	if caught.Failed > 0 {
		ix.log.Warn("rebuild: documents changed during the rebuild could not be indexed into the new index; the pass after the switch tries again",
			"failed", caught.Failed)
	}
	if err := t.Commit(ctx); err != nil {
		t.Abandon()
		return p, fmt.Errorf("indexing: rebuild: switch to the new index: %w", err)
	}
	ix.log.Info("rebuild: the new index is in use", "documents", p.Done, "failed", p.Failed)
	// Writes that went to the old index during the catch-up.
	if _, err := ix.Verify(ctx, nil); err != nil {
		ix.log.Warn("rebuild: the verification after the switch failed; the next periodic pass repairs", "error", err)
	}
	p.Finished = true
	if report != nil {
		return p, report(p)
	}
	return p, nil
}
