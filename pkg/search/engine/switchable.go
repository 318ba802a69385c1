package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/docrepo/docrepo/pkg/embed"
)

// Switchable is an Engine that delegates to another and can switch to a
// new one atomically: a full rebuild writes a new index while searches and
// writes go on against the current one, then Switch makes the new index
// current. New calls go to the new engine at once; calls in progress
// finish against the engine they started on, and Switch waits for them
// (only them) before it returns the old engine.
type Switchable struct {
	cur atomic.Pointer[generation]
}

// generation is one engine and the calls in progress on it.
type generation struct {
	e  Engine
	mu sync.RWMutex // held for reading by each call in progress
}

// NewSwitchable returns a Switchable delegating to e.
func NewSwitchable(e Engine) *Switchable {
	s := &Switchable{}
	s.cur.Store(&generation{e: e})
	return s
}

// acquire returns the generation in use, held for a call.
func (s *Switchable) acquire() *generation {
	for {
		g := s.cur.Load()
		g.mu.RLock()
		if s.cur.Load() == g {
			return g
		}
		g.mu.RUnlock() // switched meanwhile: use the new one
	}
}

// Switch makes next the engine in use and returns the one it replaces once
// the calls in progress on it have finished (for the caller to close).
func (s *Switchable) Switch(next Engine) Engine {
	old := s.cur.Swap(&generation{e: next})
	old.mu.Lock() // waits for the calls in progress on old
	old.mu.Unlock()
	return old.e
}

// Current returns the engine in use.
func (s *Switchable) Current() Engine { return s.cur.Load().e }

// Pin returns the engine in use, held as one call in progress until
// release is called: a Switch meanwhile waits for it, so that several
// calls (the search service reads the index's embedder, embeds the query
// with it and searches) see the same index. release must be called
// exactly once, soon: Switch blocks until it is.
func (s *Switchable) Pin() (e Engine, release func()) {
	g := s.acquire()
	var once sync.Once
	return g.e, func() { once.Do(g.mu.RUnlock) }
}

func (s *Switchable) Upsert(ctx context.Context, docs []Document) (WriteResult, error) {
	g := s.acquire()
	defer g.mu.RUnlock()
	return g.e.Upsert(ctx, docs)
}

func (s *Switchable) Delete(ctx context.Context, id, rev int64) error {
	g := s.acquire()
	defer g.mu.RUnlock()
	return g.e.Delete(ctx, id, rev)
}

func (s *Switchable) Revision(ctx context.Context, id int64) (int64, bool, error) {
	g := s.acquire()
	defer g.mu.RUnlock()
	return g.e.Revision(ctx, id)
}

func (s *Switchable) Revisions(ctx context.Context) (map[int64]int64, error) {
	g := s.acquire()
	defer g.mu.RUnlock()
	return g.e.Revisions(ctx)
}

func (s *Switchable) Search(ctx context.Context, req Request) (Result, error) {
	g := s.acquire()
	defer g.mu.RUnlock()
	return g.e.Search(ctx, req)
}

func (s *Switchable) Count(ctx context.Context) (int64, error) {
	g := s.acquire()
	defer g.mu.RUnlock()
	return g.e.Count(ctx)
}

func (s *Switchable) Reset(ctx context.Context) error {
	g := s.acquire()
	defer g.mu.RUnlock()
	return g.e.Reset(ctx)
}

func (s *Switchable) Embedder(ctx context.Context) (embed.Identity, bool, error) {
	g := s.acquire()
	defer g.mu.RUnlock()
	return g.e.Embedder(ctx)
}

func (s *Switchable) SetEmbedder(ctx context.Context, id embed.Identity) error {
	g := s.acquire()
	defer g.mu.RUnlock()
	return g.e.SetEmbedder(ctx, id)
}

// PendingVectors implements VectorStage for an engine in use that does;
// for another it reports nothing pending.
func (s *Switchable) PendingVectors(ctx context.Context, limit int) ([]Document, int, error) {
	g := s.acquire()
	defer g.mu.RUnlock()
	if vs, ok := g.e.(VectorStage); ok {
		return vs.PendingVectors(ctx, limit)
	}
	return nil, 0, nil
}

// SetContentVectors implements VectorStage for an engine in use that
// does; for another every document is Stale.
func (s *Switchable) SetContentVectors(ctx context.Context, docs []Document) (WriteResult, error) {
	g := s.acquire()
	defer g.mu.RUnlock()
	if vs, ok := g.e.(VectorStage); ok {
		return vs.SetContentVectors(ctx, docs)
	}
	return WriteResult{Stale: len(docs)}, nil
}

// DocFreqs implements DocFreqs for an engine in use that does; for
// another it knows nothing (nil freqs).
func (s *Switchable) DocFreqs(ctx context.Context, req Request, words []string) ([]int64, int64, error) {
	g := s.acquire()
	defer g.mu.RUnlock()
	if df, ok := g.e.(DocFreqs); ok {
		return df.DocFreqs(ctx, req, words)
	}
	return nil, 0, nil
}

// Close closes the engine in use.
func (s *Switchable) Close() error { return s.Current().Close() }
