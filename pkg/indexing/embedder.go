package indexing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// Changing the embedder. Vectors of two embedders cannot be compared: a
// query embedded by the new model measured against documents embedded by
// the old one ranks noise. So an index records the identity of the
// embedder whose vectors it holds (engine.Engine.SetEmbedder), and every
// process that embeds — the search service for queries, the indexer for
// documents — checks it at start-up with CheckEmbedder:
//
//   - the same embedder (embed.Identity.Compatible): nothing to do;
//   - none recorded and the index is empty: this one is recorded;
//   - none recorded but documents are there (an index written before
//     identities were recorded): its embedder cannot be known. With
//     DOCREPO_EMBEDDER_CHANGE=refuse (the default) this one is recorded
//     and a warning says that the old vectors are taken on trust and
//     hold one vector of each document's beginning until a rebuild; with
//     rebuild the index is re-embedded like a changed one;
//   - another embedder: with refuse, start-up fails with an error naming
//     both identities and the ways out; with rebuild the process starts
//     and the index is re-embedded online (Reembed): the current index
//     goes on answering full-text and metadata searches, the indexer
//     writes new documents into it without vectors (never a mix: see
//     Indexer.vectorsFit) and into the new index with the new
//     embedder's (rebuild.go: the switch waits until they have them),
//     vector searches are answered from it with
//     queries embedded by the embedder it records when the search
//     service can build that one (Settings.EmbedderFor: always for hash)
//     and 503 otherwise, until the new index is in use; progress is
//     logged, exported as docrepo_indexer_reembed_* and shown in /readyz
//     (Server.Reembedding).

// Embedder change policies (DOCREPO_EMBEDDER_CHANGE).
const (
	ChangeRefuse  = "refuse"
	ChangeRebuild = "rebuild"
)

// UnknownEmbedder is recorded in an index written before identities were
// recorded when it is to be re-embedded: no embedder is compatible with
// it, so it gets no new vectors and answers no vector search meanwhile.
var UnknownEmbedder = embed.Identity{Kind: "unknown", Model: "written before embedder identities were recorded"}

// ErrEmbedderChanged is the start-up error of an index holding vectors of
// another embedder under ChangeRefuse.
var ErrEmbedderChanged = errors.New("the index holds vectors of another embedder")

// EmbedderCheck is what CheckEmbedder found.
type EmbedderCheck int

const (
	// EmbedderSame: the index records this embedder.
	EmbedderSame EmbedderCheck = iota
	// EmbedderRecorded: the index was empty and now records this one.
	EmbedderRecorded
	// EmbedderAdopted: the index held documents but no identity; it now
	// records this one (ChangeRefuse).
	EmbedderAdopted
	// EmbedderRebuild: the index holds vectors of another (or an
	// unknown) embedder and must be re-embedded (ChangeRebuild).
	EmbedderRebuild
)

func (c EmbedderCheck) String() string {
	switch c {
	case EmbedderSame:
		return "same"
	case EmbedderRecorded:
		return "recorded"
	case EmbedderAdopted:
		return "adopted"
	}
	return "rebuild"
}

// CheckEmbedder compares the embedder recorded in eng with id, as
// described above, under policy (ChangeRefuse when empty). It fails with
// an error wrapping ErrEmbedderChanged when policy is ChangeRefuse and the
// index records another embedder.
func CheckEmbedder(ctx context.Context, eng engine.Engine, id embed.Identity, policy string, log *slog.Logger) (EmbedderCheck, error) {
	if log == nil {
		log = slog.Default()
	}
	switch policy {
	case "":
		policy = ChangeRefuse
	case ChangeRefuse, ChangeRebuild:
	default:
		return 0, fmt.Errorf("DOCREPO_EMBEDDER_CHANGE=%q: want %s or %s", policy, ChangeRefuse, ChangeRebuild)
	}
	got, ok, err := eng.Embedder(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the index's embedder: %w", err)
	}
	switch {
	case ok && got.Compatible(id):
		return EmbedderSame, nil
	case ok && policy == ChangeRefuse:
		return 0, fmt.Errorf("%w: the index was built with %s, this process embeds with %s, and their vectors cannot be compared. "+
			"Either configure the embedder the index was built with (DOCREPO_EMBEDDER and its settings), "+
			"or re-embed the index with the new one: restart with DOCREPO_EMBEDDER_CHANGE=rebuild, which starts the service and rebuilds the index online "+
			"(full-text search keeps working; vector search answers from the old index meanwhile where its embedder can still be built, hash always, else 503; progress in the log and docrepo_indexer_reembed_*; "+
			"docrepoctl reindex -recreate runs the same rebuild again if it fails)",
			ErrEmbedderChanged, got, id)
	case ok:
		log.Warn("the index holds vectors of another embedder: it is re-embedded (DOCREPO_EMBEDDER_CHANGE=rebuild)",
			"index_embedder", got.String(), "embedder", id.String())
		return EmbedderRebuild, nil
	}
	n, err := eng.Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count the index's documents: %w", err)
	}
	if n > 0 && policy == ChangeRebuild {
		// Recorded as unknown, so that nothing mixes new vectors into it
		// or searches it by vector until the rebuilt index replaces it.
		if err := eng.SetEmbedder(ctx, UnknownEmbedder); err != nil {
			return 0, fmt.Errorf("record the embedder in the index: %w", err)
		}
		log.Warn("the index records no embedder (it was written before identities were recorded): it is re-embedded (DOCREPO_EMBEDDER_CHANGE=rebuild)",
			"documents", n, "embedder", id.String())
		return EmbedderRebuild, nil
	}
	if err := eng.SetEmbedder(ctx, id); err != nil {
		return 0, fmt.Errorf("record the embedder in the index: %w", err)
	}
	if n > 0 {
		log.Warn("the index records no embedder (it was written before identities were recorded): its vectors are taken to be this embedder's, "+
			"and each document has one vector of its beginning, not passages, until docrepoctl reindex -recreate",
			"documents", n, "embedder", id.String())
		return EmbedderAdopted, nil
	}
	log.Info("the index records this embedder", "embedder", id.String())
	return EmbedderRecorded, nil
}

// reembedRetry is how long Reembed waits after a failed rebuild.
const reembedRetry = time.Minute

// Reembed rebuilds the index with the indexer's embedder, in the
// background, until it succeeds or ctx ends: through the server's rebuild
// into a new index when it has one (RebuildInto: the embedded engine's
// next generation, switched to when complete), otherwise by emptying the
// engine and reindexing (OpenSearch: Reset creates the index anew,
// recording the new embedder; searches see it fill up). Progress goes to
// the log every 10 seconds and to docrepo_indexer_reembed_done and
// docrepo_indexer_reembed_total. A reindex already running (docrepoctl)
// makes it wait for its turn. When the new index is one a killed process
// left unfinished (services/search: the same embedder's generation), what
// it holds at the current revision is kept (Progress.Kept,
// docrepo_indexer_reembed_kept), not embedded again.
func (s *Server) Reembed(ctx context.Context) {
	log := s.ix.log.With("reembed", true)
	metricReembedRunning.Set(1)
	s.reembed.running.Store(true)
	defer func() {
		metricReembedRunning.Set(0)
		s.reembed.running.Store(false)
	}()
	for {
		err := s.reembedOnce(ctx, log)
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Error("re-embedding the index failed; trying again", "error", err, "retry_in", reembedRetry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(reembedRetry):
		}
	}
}

// Reembedding reports whether Reembed is running and its progress
// (documents done of total, as last reported, total 0 until counted; kept:
// of those done, the ones the new index held already, not embedded again).
func (s *Server) Reembedding() (running bool, done, total, kept int64) {
	return s.reembed.running.Load(), s.reembed.done.Load(), s.reembed.total.Load(), s.reembed.kept.Load()
}

func (s *Server) reembedOnce(ctx context.Context, log *slog.Logger) error {
	for !s.running.CompareAndSwap(false, true) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	defer s.running.Store(false)
	started := time.Now()
	log.Info("re-embedding the index with the new embedder", "embedder", s.ix.id.String())
	var last time.Time
	report := func(p Progress) error {
		metricReembedDone.Set(float64(p.Done))
		metricReembedTotal.Set(float64(p.Total))
		metricReembedKept.Set(float64(p.Kept))
		s.reembed.done.Store(p.Done)
		s.reembed.total.Store(p.Total)
		s.reembed.kept.Store(p.Kept)
		if time.Since(last) >= 10*time.Second || p.Finished {
			last = time.Now()
			log.Info("re-embedding the index", "done", p.Done, "total", p.Total, "failed", p.Failed, "kept", p.Kept, "finished", p.Finished,
				"elapsed", time.Since(started).Round(time.Second))
		}
		return nil
	}
	var p Progress
	var err error
	if s.newTarget != nil {
		p, err = s.ix.Rebuild(ctx, s.newTarget, report)
	} else {
		p, err = s.ix.Reindex(ctx, true, report)
	}
	if err == nil && p.Failed > 0 {
		err = fmt.Errorf("%d documents could not be indexed", p.Failed)
	}
	if err != nil {
		return err
	}
	log.Info("the index is re-embedded: vector search uses the new embedder", "documents", p.Done,
		"kept", p.Kept, "embedded", p.Done-p.Kept, "took", time.Since(started).Round(time.Second))
	return nil
}
