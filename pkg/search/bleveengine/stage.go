package bleveengine

import (
	"context"
	"fmt"

	"github.com/blevesearch/bleve/v2/document"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// The vector stage (engine.VectorStage): a document written with
// VectorsPending has a record marked pending and no content vectors; it is
// searchable by full text at once. SetContentVectors writes the document
// again with its vectors, from its record and its stored content (the
// content is analysed a second time: the price of making text searchable
// before a slow embedder has run). Pending survives restarts (a record
// flag), so a stage interrupted by a crash picks up where it was.

// PendingVectors implements engine.VectorStage: the first pending
// documents in table order (about the order they were written), with
// their stored content.
func (e *Engine) PendingVectors(ctx context.Context, limit int) ([]engine.Document, int, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, 0, engine.ErrClosed
	}
	total := e.tab.pending
	if total == 0 || limit <= 0 {
		return nil, total, nil
	}
	adv, err := e.idx.Advanced()
	if err != nil {
		return nil, 0, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	var out []engine.Document
	for i := range e.tab.recs {
		rec := &e.tab.recs[i]
		if !rec.pending || rec.deleted {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		content, err := storedContent(r, rec.id)
		if err != nil {
			return nil, 0, fmt.Errorf("bleveengine: content of %d: %w", rec.id, err)
		}
		out = append(out, engine.Document{ID: rec.id, Rev: rec.rev, Content: content, VectorsPending: true})
		if len(out) == limit {
			break
		}
	}
	return out, total, nil
}

// SetContentVectors implements engine.VectorStage.
func (e *Engine) SetContentVectors(ctx context.Context, docs []engine.Document) (engine.WriteResult, error) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	var res engine.WriteResult
	idx, err := e.writer()
	if err != nil {
		return res, err
	}
	if err := checkPassages("set vectors", docs); err != nil {
		return res, err
	}
	adv, err := idx.Advanced()
	if err != nil {
		return res, err
	}
	r, err := adv.Reader()
	if err != nil {
		return res, err
	}
	defer r.Close()
	b := idx.NewBatch()
	var recs []record
	var written []*document.Document
	seen := map[int64]bool{}
	for i := range docs {
		d := &docs[i]
		e.mu.RLock()
		cur, ok := e.tab.get(d.ID)
		var rec record
		if ok {
			rec = *cur
		}
		e.mu.RUnlock()
		if !ok || rec.deleted || !rec.pending || rec.rev != d.Rev || seen[d.ID] {
			res.Stale++
			continue
		}
		seen[d.ID] = true
		if err := ctx.Err(); err != nil {
			return engine.WriteResult{}, fmt.Errorf("bleveengine: set vectors: %w", err)
		}
		content, err := storedContent(r, d.ID)
		if err != nil {
			return engine.WriteResult{}, fmt.Errorf("bleveengine: set vectors: content of %d: %w", d.ID, err)
		}
		rec.cvec, rec.cdim, _ = flattenPassages(d.ContentVectors)
		// The table keeps no vectors: the metadata vector is written
		// again from the vector index.
		e.mu.RLock()
		rec.mvec, _ = e.storedVectors(d.ID, true)
		e.mu.RUnlock()
		rec.pending = false
		doc := e.document(&engine.Document{ID: d.ID, Content: content}, &rec)
		if err := b.IndexAdvanced(doc); err != nil {
			return engine.WriteResult{}, fmt.Errorf("bleveengine: set vectors: %w", err)
		}
		recs = append(recs, rec)
		written = append(written, doc)
	}
	if len(recs) == 0 {
		return res, nil
	}
	// The same content written again counts in the dictionary until the
	// replaced documents are merged away: its terms are candidates for C.
	if err := e.beforeContentWrite(idx); err != nil {
		return engine.WriteResult{Stale: res.Stale}, fmt.Errorf("bleveengine: set vectors: %w", err)
	}
	e.beginBatch()
	err = idx.Batch(b)
	e.collectCommon(written, err != nil)
	if err != nil {
		e.abandonBatch()
		return engine.WriteResult{Stale: res.Stale}, fmt.Errorf("bleveengine: set vectors: %w", err)
	}
	// The content, so its terms, and the visibility stay as they were.
	changes := make([]*termChange, len(recs))
	for i := range changes {
		changes[i] = &termChange{same: true}
	}
	if err := e.putRecords(recs, changes); err != nil {
		return engine.WriteResult{Stale: res.Stale}, fmt.Errorf("bleveengine: set vectors: %w", err)
	}
	res.Written = len(recs)
	if err := e.maybeCheckpoint(); err != nil {
		return res, fmt.Errorf("bleveengine: set vectors: %w", err)
	}
	return res, nil
}
