package indexing

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/docrepo/docrepo/pkg/apierr"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
)

const (
	reindexPage = 512
	// verifyPage is the page of ids and revisions Verify lists at a
	// time: it only compares them, so a page costs a round trip and a
	// query, not indexing, and fewer, larger pages make a pass over N
	// documents N/verifyPage round trips (the document service allows
	// up to 10,000).
	verifyPage         = 4096
	reindexRetries     = 3
	reindexRetryDelay  = 500 * time.Millisecond
	progressMinGap     = 200 * time.Millisecond
	reindexBatchFactor = 16
)

// Progress reports how far a reindex has come.
type Progress struct {
	// Done counts documents processed (written, current, deleted or
	// failed); Total is the number of documents of record, as last counted.
	Done, Total, Failed int64
	// Kept counts the documents the index already held at their current
	// revision (left alone): in a resumed re-embedding, those its
	// unfinished generation held, which are not embedded again.
	Kept     int64
	Finished bool
}

// Reindex sends every document of record through the indexing path. With
// recreate the engine is emptied first (which also drops documents that no
// longer exist); without it, documents the engine holds at their current
// revision are left alone. A document that still fails after a few retries
// counts as failed and the reindex goes on. report, when not nil, is called
// with the progress after each batch (at most every 200 ms) and at the end;
// an error from it stops the reindex.
func (ix *Indexer) Reindex(ctx context.Context, recreate bool, report func(Progress) error) (Progress, error) {
	var p Progress
	if recreate {
		if err := ix.o.Engine.Reset(ctx); err != nil {
			return p, fmt.Errorf("indexing: reset engine: %w", err)
		}
		ix.log.Info("reindex: engine emptied")
	}
	started := time.Now()
	var lastReport time.Time
	send := func(force bool) error {
		if report == nil || (!force && time.Since(lastReport) < progressMinGap) {
			return nil
		}
		lastReport = time.Now()
		return report(p)
	}
	batch := ix.o.Workers * reindexBatchFactor
	var after int64
	for {
		cctx, cancel := context.WithTimeout(ctx, ix.o.CallTimeout)
		page, err := ix.o.Source.ListDocumentIds(cctx, &documentv1.ListDocumentIdsRequest{AfterId: after, Limit: reindexPage})
		cancel()
		if err != nil {
			return p, fmt.Errorf("indexing: list documents after %d: %w", after, err)
		}
		if after == 0 {
			p.Total = page.GetTotal() // the first page's only
		}
		p.Total = max(p.Total, p.Done)
		ids := page.GetIds()
		if len(ids) == 0 {
			break
		}
		for start := 0; start < len(ids); start += batch {
			part := ids[start:min(start+batch, len(ids))]
			failed, kept, err := ix.reindexBatch(ctx, part)
			if err != nil {
				return p, err
			}
			p.Done += int64(len(part))
			p.Failed += failed
			p.Kept += kept
			p.Total = max(p.Total, p.Done)
			if err := send(false); err != nil {
				return p, err
			}
		}
		after = ids[len(ids)-1]
	}
	p.Total = p.Done
	p.Finished = true
	ix.log.Info("reindex finished", "documents", p.Done, "failed", p.Failed, "kept", p.Kept, "recreate", recreate, "took", time.Since(started).Round(time.Millisecond))
	return p, send(true)
}

// reindexBatch indexes ids, retrying failures a few times; it returns how
// many still failed, and how many the engine held already (Current). It
// fails only when ctx ends.
func (ix *Indexer) reindexBatch(ctx context.Context, ids []int64) (failed, kept int64, err error) {
	items := make([]Item, len(ids))
	for i, id := range ids {
		items[i] = Item{ID: id, DeferOCR: ix.defersOCR()}
	}
	for attempt := 1; ; attempt++ {
		results := ix.Index(ctx, items)
		if ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		var retry []Item
		for i, r := range results {
			if r.Outcome == Failed {
				retry = append(retry, Item{ID: items[i].ID, DegradeContent: attempt >= reindexRetries-1, DeferOCR: ix.defersOCR()})
				if attempt == reindexRetries {
					ix.log.Error("reindex: document failed", "doc_id", items[i].ID, "error", r.Err)
					metricFailed.WithLabelValues("transient").Inc()
				}
				continue
			}
			if r.Outcome == Current {
				kept++
			}
			metricIndexed.WithLabelValues(r.Outcome.String()).Inc()
		}
		if len(retry) == 0 || attempt == reindexRetries {
			return int64(len(retry)), kept, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(reindexRetryDelay * time.Duration(attempt)):
		}
		items = retry
	}
}

// Server is the IndexerService gRPC API over an Indexer. One reindex runs
// at a time.
type Server struct {
	indexerv1.UnimplementedIndexerServiceServer
	ix      *Indexer
	running atomic.Bool
	// newTarget, when set, makes recreate a zero-downtime rebuild into a
	// new index (Indexer.Rebuild) instead of emptying the current one.
	newTarget func(context.Context) (Target, error)
	// reembed is Reembed's state, for Reembedding.
	reembed struct {
		running           atomic.Bool
		done, total, kept atomic.Int64
	}
}

// RebuildInto makes Reindex with recreate build a new index from
// newTarget and switch to it, so searches never see a partial index.
func (s *Server) RebuildInto(newTarget func(context.Context) (Target, error)) {
	s.newTarget = newTarget
}

// NewServer returns the IndexerService for ix.
func NewServer(ix *Indexer) *Server { return &Server{ix: ix} }

// Reindex implements IndexerService.Reindex. The reindex stops when the
// client goes away.
func (s *Server) Reindex(req *indexerv1.ReindexRequest, stream grpc.ServerStreamingServer[indexerv1.ReindexResponse]) error {
	if !s.running.CompareAndSwap(false, true) {
		return apierr.Conflict("A reindex is already running")
	}
	defer s.running.Store(false)
	var err error
	if req.GetVerify() {
		if req.GetRecreate() {
			return apierr.Invalid("verify and recreate exclude each other")
		}
		_, err = s.ix.Verify(stream.Context(), func(r VerifyResult, total int64, finished bool) error {
			return stream.Send(&indexerv1.ReindexResponse{Done: r.Checked, Total: max(total, r.Checked), Failed: r.Failed, Finished: finished,
				Missing: r.Missing, Stale: r.Stale, Diverged: r.Diverged, Deleted: r.Deleted, Unread: r.Unread})
		})
	} else {
		send := func(p Progress) error {
			return stream.Send(&indexerv1.ReindexResponse{Done: p.Done, Total: p.Total, Failed: p.Failed, Finished: p.Finished})
		}
		if req.GetRecreate() && s.newTarget != nil {
			_, err = s.ix.Rebuild(stream.Context(), s.newTarget, send)
		} else {
			_, err = s.ix.Reindex(stream.Context(), req.GetRecreate(), send)
		}
	}
	if err != nil {
		if stream.Context().Err() != nil {
			return stream.Context().Err()
		}
		return apierr.Unavailable("Reindex failed: %v", err)
	}
	return nil
}
