package indexing

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// A full rebuild (IndexerService.Reindex with recreate, and the online
// re-embedding with a new embedder) never leaves search partial: it
// writes a complete new index while the current one goes on answering
// searches and taking the consumer's writes, and switches to it
// atomically. A rebuild that fails, is cancelled, or cannot index every
// document leaves the current index untouched.
//
// Writes made during the rebuild reach the new index as well as the
// current one (the mirror): from the moment the new index exists, every
// engine write of the indexer — the consumer's, the OCR stage's, the
// anti-entropy pass's — is applied to both, an upload or update written
// to the new index with its text and metadata vector and its content
// marked VectorsPending (the new index takes vectors afterwards:
// engine.VectorStage; otherwise they are embedded before the write), a
// deletion or trashing as a deletion. So the consumer never waits for the
// new embedder: text is indexed as fast as without a rebuild. The new
// index is written from the documents of record (their pass reads them
// after the mirror is in place, so nothing written before it is missed),
// caught up with them once more (an anti-entropy pass into it), and then
// the rebuild embeds the content of the documents the mirror left
// waiting, until none is left, before it switches: the switch holds the
// indexer's writes only to check that nothing is left (or, when writes
// kept coming, to embed the few that arrived since the last check), so
// the moment the new index is in use every document, those written
// during the rebuild included, is there at its current revision with its
// vectors, and deleted or trashed ones are gone. A mirrored write that
// failed is indexed into the new index again before the switch. After
// the switch the anti-entropy pass runs on the index in use as a last
// check.
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
	// before; the OCR stage writes the index in use, and the mirror this
	// one).
	into.o.DeferVectors = false
	into.inlineOCR = true
	// From here on the indexer's writes reach the new index too.
	m := newMirror(into)
	ix.setMirror(m)
	abandon := func() {
		ix.setMirror(nil)
		t.Abandon()
	}
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
		abandon()
		return p, err
	}
	// Whatever the mirror could not write, once more against the
	// documents of record.
	caught, err := into.Verify(ctx, nil)
	if err != nil {
		abandon()
		return p, fmt.Errorf("indexing: rebuild: catching the new index up: %w", err)
	}
	if caught.Failed > 0 {
		ix.log.Warn("rebuild: documents changed during the rebuild could not be indexed into the new index; the pass after the switch tries again",
			"failed", caught.Failed)
	}
	if err := ix.switchTo(ctx, t, m); err != nil {
		abandon()
		return p, fmt.Errorf("indexing: rebuild: switch to the new index: %w", err)
	}
	ix.log.Info("rebuild: the new index is in use", "documents", p.Done, "failed", p.Failed)
	// A last check of the index in use.
	if _, err := ix.Verify(ctx, nil); err != nil {
		ix.log.Warn("rebuild: the verification after the switch failed; the next periodic pass repairs", "error", err)
	}
	p.Finished = true
	if report != nil {
		return p, report(p)
	}
	return p, nil
}

// switchRounds is how many times the switch catches the new index up with
// the writes mirrored into it while writes go on, before it catches up
// the last few with writes held.
const switchRounds = 10

// switchTo commits t once the new index holds every mirrored write with
// its vectors (see the top of the file), and ends the mirror.
func (ix *Indexer) switchTo(ctx context.Context, t Target, m *mirror) error {
	began := time.Now()
	if left, err := m.left(ctx); err == nil && left > 0 {
		ix.log.Info("rebuild: embedding the documents written during the rebuild before the switch", "waiting", left)
	}
	for round := 1; ; round++ {
		if err := m.catchUp(ctx); err != nil {
			return err
		}
		ix.mirrorMu.Lock()
		held := time.Now()
		left, err := m.left(ctx)
		if err == nil && left > 0 && round < switchRounds {
			ix.mirrorMu.Unlock()
			continue
		}
		if err == nil && left > 0 {
			// Writes are held, so what is left is bounded: what came
			// since the last round.
			err = m.catchUp(ctx)
		}
		if err == nil {
			err = t.Commit(ctx)
		}
		if err == nil {
			ix.mirror = nil
		}
		ix.mirrorMu.Unlock()
		if err == nil {
			ix.log.Info("rebuild: the writes made during the rebuild are in the new index, with their vectors", "documents", m.written(),
				"rounds", round, "took", time.Since(began).Round(time.Millisecond), "writes_held", time.Since(held).Round(time.Microsecond), "left_at_switch", left)
		}
		return err
	}
}

// setMirror makes m the new index the indexer's writes also reach (nil:
// none).
func (ix *Indexer) setMirror(m *mirror) {
	ix.mirrorMu.Lock()
	ix.mirror = m
	ix.mirrorMu.Unlock()
}

// currentMirror returns the mirror in place, if any.
func (ix *Indexer) currentMirror() *mirror {
	ix.mirrorMu.RLock()
	defer ix.mirrorMu.RUnlock()
	return ix.mirror
}

// upsert writes batch into the engine and, while a rebuild runs, into its
// new index. fit says whether batch carries this indexer's vectors
// (embed).
func (ix *Indexer) upsert(ctx context.Context, batch []engine.Document, fit bool) error {
	// The new index's copies are made (and their metadata embedded)
	// before the lock, so a switch waiting for it is not held up.
	m := ix.currentMirror()
	var copies []engine.Document
	if m != nil {
		copies = m.documents(ctx, batch, fit)
	}
	ix.mirrorMu.RLock()
	defer ix.mirrorMu.RUnlock()
	ectx, cancel := context.WithTimeout(ctx, ix.o.EngineTimeout)
	_, err := ix.o.Engine.Upsert(ectx, batch)
	cancel()
	if err != nil {
		return err
	}
	// A mirror gone meanwhile was switched in or dropped; one that came
	// meanwhile belongs to a rebuild that reads these documents itself,
	// after they were read here.
	if m != nil && ix.mirror == m {
		m.upsert(ctx, batch, copies)
	}
	return nil
}

// remove deletes a document from the engine under the engine deadline
// and, while a rebuild runs, from its new index.
func (ix *Indexer) remove(ctx context.Context, id, rev int64) error {
	ix.mirrorMu.RLock()
	defer ix.mirrorMu.RUnlock()
	ectx, cancel := context.WithTimeout(ctx, ix.o.EngineTimeout)
	err := ix.o.Engine.Delete(ectx, id, rev)
	cancel()
	if err == nil && ix.mirror != nil {
		ix.mirror.remove(ctx, id, rev)
	}
	return err
}

// mirror is the new index of a rebuild in progress as the indexer's
// writes reach it.
type mirror struct {
	// into writes the new index (into.o.Engine) and embeds for it.
	into *Indexer
	// deferContent: the new index takes content vectors after the
	// document (engine.VectorStage).
	deferContent bool
	log          *slog.Logger
	mu           sync.Mutex
	// missed holds documents whose write could not be mirrored.
	missed map[int64]struct{}
	writes int64
}

func newMirror(into *Indexer) *mirror {
	_, vs := into.o.Engine.(engine.VectorStage)
	return &mirror{into: into, deferContent: vs, log: into.log, missed: map[int64]struct{}{}}
}

// documents returns the new index's copies of batch, written by an
// indexer whose vectors the index in use takes (fit) or not: its own
// vectors are kept; without them the metadata is embedded for the new
// index and the content marked pending (or embedded, when the new index
// takes no vectors afterwards). Nil when that failed (the documents are
// then missed).
func (m *mirror) documents(ctx context.Context, batch []engine.Document, fit bool) []engine.Document {
	out := slices.Clone(batch)
	var embedNow []*engine.Document
	for i := range out {
		d := &out[i]
		if fit && !(d.VectorsPending && !m.deferContent) {
			continue
		}
		d.ContentVectors, d.MetadataVector, d.VectorsPending = nil, nil, false
		embedNow = append(embedNow, d)
	}
	if len(embedNow) == 0 {
		return out
	}
	ok, err := m.into.embed(ctx, embedNow, m.deferContent)
	if err == nil && !ok {
		err = fmt.Errorf("the new index records another embedder")
	}
	if err != nil {
		m.miss(batch, err)
		return nil
	}
	return out
}

// upsert writes the copies of batch into the new index.
func (m *mirror) upsert(ctx context.Context, batch, copies []engine.Document) {
	if copies == nil {
		return // missed already
	}
	ectx, cancel := context.WithTimeout(ctx, m.into.o.EngineTimeout)
	res, err := m.into.o.Engine.Upsert(ectx, copies)
	cancel()
	if err != nil {
		m.miss(batch, err)
		return
	}
	m.mu.Lock()
	m.writes += int64(res.Written)
	m.mu.Unlock()
}

// remove deletes a document from the new index, which may hold a newer
// revision of it than the index in use (read by the rebuild).
func (m *mirror) remove(ctx context.Context, id, rev int64) {
	eng := m.into.o.Engine
	ectx, cancel := context.WithTimeout(ctx, m.into.o.EngineTimeout)
	defer cancel()
	held, ok, err := eng.Revision(ectx, id)
	if err == nil {
		if ok {
			rev = max(rev, held)
		}
		err = eng.Delete(ectx, id, rev)
	}
	if err != nil {
		m.miss([]engine.Document{{ID: id}}, err)
	}
}

// miss records documents whose write could not be mirrored: the rebuild
// indexes them into the new index before the switch.
func (m *mirror) miss(docs []engine.Document, err error) {
	m.mu.Lock()
	for _, d := range docs {
		m.missed[d.ID] = struct{}{}
	}
	m.mu.Unlock()
	m.log.Warn("rebuild: a write could not be made in the new index too; it is indexed there again before the switch",
		"documents", len(docs), "error", err)
}

func (m *mirror) written() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

// takeMissed returns the missed documents and forgets them.
func (m *mirror) takeMissed() []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := slices.Sorted(maps.Keys(m.missed))
	clear(m.missed)
	return ids
}

// left counts the documents the new index still owes: missed writes and
// documents waiting for their vectors.
func (m *mirror) left(ctx context.Context) (int, error) {
	m.mu.Lock()
	n := len(m.missed)
	m.mu.Unlock()
	if vs, ok := m.into.o.Engine.(engine.VectorStage); ok {
		ectx, cancel := context.WithTimeout(ctx, m.into.o.EngineTimeout)
		_, pending, err := vs.PendingVectors(ectx, 0)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("documents waiting for vectors in the new index: %w", err)
		}
		n += pending
	}
	return n, nil
}

// catchUp indexes the missed documents into the new index and embeds the
// content of its documents waiting for vectors, until none is left.
func (m *mirror) catchUp(ctx context.Context) error {
	vs, stage := m.into.o.Engine.(engine.VectorStage)
	for {
		if ids := m.takeMissed(); len(ids) > 0 {
			items := make([]Item, len(ids))
			for i, id := range ids {
				items[i] = Item{ID: id}
			}
			for i, r := range m.into.Index(ctx, items) {
				if r.Outcome == Failed {
					m.miss([]engine.Document{{ID: ids[i]}}, r.Err)
					return fmt.Errorf("indexing document %d into the new index: %w", ids[i], r.Err)
				}
			}
		}
		if !stage {
			if left, err := m.left(ctx); err != nil || left == 0 {
				return err
			}
			continue
		}
		n, backlog, err := m.into.vectorStep(ctx, vs, m.into.o.VectorBatch, false)
		if err != nil {
			return fmt.Errorf("embedding the documents waiting in the new index: %w", err)
		}
		if backlog == 0 {
			if left, err := m.left(ctx); err != nil || left == 0 {
				return err
			}
			continue
		}
		if n == 0 {
			return fmt.Errorf("%d documents wait for vectors the new index does not take", backlog)
		}
	}
}
