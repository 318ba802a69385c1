package indexing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/extract"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/ocr"
	"github.com/docrepo/docrepo/pkg/ocrjobs"
)

// The OCR stage. OCR never holds an event: the consumer indexes a scan's
// text layer, enqueues an OCR job (Options.OCRQueue, pkg/ocrjobs: durable,
// one per document, the newest revision wins) in the same step as the
// engine write, and acknowledges the event. RunOCRStage then claims jobs
// (the owner with the fewest jobs running first, so one user's flood of
// scans does not starve another's), at most ocr.Engine.Documents at once,
// and indexes each document again, as it is then, with OCR; the result is
// cached by the file's SHA-256 and the OCR settings, so a metadata change
// or a rebuild never reads the same bytes again.

// Timing of the OCR stage.
const (
	// ocrLease is how long a claimed job is held without a renewal; a
	// process killed during OCR leaves its jobs to others after it, or
	// at once when a live worker sees its worker lock gone
	// (ocrjobs.Store.HoldWorker).
	ocrLease = 2 * time.Minute
	// ocrWorkerSweep is how often the stage looks for claims of workers
	// that died (also once at its start).
	ocrWorkerSweep = 10 * time.Second
	// ocrStageIdle is how long the stage sleeps with nothing to claim
	// when no enqueue wakes it (jobs of another process, retry delays).
	ocrStageIdle = 2 * time.Second
	// ocrMaxAttempts: a job failing transiently this often is dropped;
	// the document keeps its text layer, and the anti-entropy pass or a
	// new revision brings it back.
	ocrMaxAttempts = 10
	// ocrRetryMin and ocrRetryMax bound the delay before a failed job is
	// tried again (doubling with each attempt).
	ocrRetryMin = 5 * time.Second
	ocrRetryMax = 10 * time.Minute
	// ocrCacheUnused: cached OCR text not used for this long is pruned
	// (at the stage's start and daily).
	ocrCacheUnused = 180 * 24 * time.Hour
)

// RunOCRStage reads the documents of the OCR queue until ctx ends. It
// returns at once without an OCR engine or a queue.
func (ix *Indexer) RunOCRStage(ctx context.Context) {
	q := ix.o.OCRQueue
	if ix.o.OCR == nil || q == nil {
		return
	}
	go ix.pruneOCRCache(ctx)
	slots := make(chan struct{}, ix.o.OCR.Documents())
	var wg sync.WaitGroup
	defer wg.Wait()
	// This process's worker lock: claims of workers that died (killed
	// mid-OCR) are released at once, not after their lease; it claims
	// only while it holds it.
	wg.Go(func() {
		q.HoldWorker(ctx, ocrWorkerSweep, func(n int64) {
			ix.log.Info("OCR stage: took back the jobs of a worker that stopped", "jobs", n)
			ix.wakeOCR()
		}, func(err error) {
			ix.log.Warn("OCR stage: the worker's liveness session failed; claiming nothing until it is back", "error", err)
		})
	})
	for ctx.Err() == nil {
		if !q.Alive() {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		job, ok, err := q.Claim(ctx, ocrLease)
		if err != nil || !ok {
			<-slots
			if err != nil && ctx.Err() == nil {
				ix.log.Warn("OCR stage: claiming a job failed; trying again", "error", err)
			}
			ix.reportOCRQueue(ctx)
			ix.waitOCRWork(ctx)
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			ix.runOCRJob(ctx, job)
		}()
	}
}

// defersOCR reports whether documents needing OCR go through the queue
// (Item.DeferOCR) when this indexer indexes them.
func (ix *Indexer) defersOCR() bool {
	return ix.o.OCR != nil && ix.o.OCRQueue != nil && !ix.inlineOCR
}

// wakeOCR tells the OCR stage that jobs were enqueued.
func (ix *Indexer) wakeOCR() {
	select {
	case ix.ocrWake <- struct{}{}:
	default:
	}
}

func (ix *Indexer) waitOCRWork(ctx context.Context) {
	t := time.NewTimer(ocrStageIdle)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-ix.ocrWake:
	case <-t.C:
	}
}

// runOCRJob indexes the job's document with OCR under a renewed claim and
// settles the job: done when the document was written (or is gone), given
// back with a delay after a transient failure.
func (ix *Indexer) runOCRJob(ctx context.Context, job ocrjobs.Job) {
	q := ix.o.OCRQueue
	log := ix.log.With("stage", "ocr", "doc_id", job.DocID, "rev", job.Rev, "owner", job.Owner, "attempt", job.Attempts)
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go ix.holdOCRClaim(jctx, cancel, job, log)
	started := time.Now()
	r := ix.Index(jctx, []Item{{ID: job.DocID, Reread: true}})[0]
	// Settling outlives a shutdown: the job goes back at once then.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), ix.o.CallTimeout)
	defer scancel()
	var err error
	switch {
	case r.Outcome != Failed:
		metricOCRJobs.WithLabelValues("done").Inc()
		log.Info("OCR job done", "outcome", r.Outcome, "source", r.Source, "took", time.Since(started).Round(time.Millisecond),
			"waited", started.Sub(job.Enqueued).Round(time.Second))
		err = q.Done(sctx, job)
	case ctx.Err() != nil:
		err = q.Retry(sctx, job, 0)
	case !transient(r.Err) || job.Attempts >= ocrMaxAttempts:
		metricOCRJobs.WithLabelValues("dropped").Inc()
		log.Warn("OCR job dropped: the document keeps its text layer", "error", r.Err)
		err = q.Done(sctx, job)
	default:
		metricOCRJobs.WithLabelValues("retried").Inc()
		delay := backoff(uint64(job.Attempts), ocrRetryMin, ocrRetryMax)
		log.Warn("OCR job failed; trying again later", "retry_in", delay, "error", r.Err)
		err = q.Retry(sctx, job, delay)
	}
	if err != nil {
		log.Warn("OCR job not settled; its claim expires and it runs again", "error", err)
	}
}

// holdOCRClaim renews the claim on job until ctx ends; when the claim is
// lost (another worker took the job after it expired) it cancels the run.
func (ix *Indexer) holdOCRClaim(ctx context.Context, cancel func(), job ocrjobs.Job, log *slog.Logger) {
	t := time.NewTicker(ocrLease / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		held, err := ix.o.OCRQueue.Extend(ctx, job, ocrLease)
		if err == nil && !held {
			log.Warn("OCR job: the claim was lost to another worker; stopping this run")
			cancel()
			return
		}
	}
}

// enqueueOCR enqueues the OCR jobs of the prepared documents, before
// their engine write; a failure fails those documents (their events are
// retried).
func (ix *Indexer) enqueueOCR(ctx context.Context, preps []prepared) {
	var jobs []ocrjobs.Job
	var idx []int
	for i := range preps {
		if preps[i].ocrJob != nil && preps[i].err == nil {
			jobs = append(jobs, *preps[i].ocrJob)
			idx = append(idx, i)
		}
	}
	if len(jobs) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, ix.o.CallTimeout)
	err := ix.o.OCRQueue.Enqueue(cctx, jobs)
	cancel()
	if err != nil {
		for _, i := range idx {
			preps[i] = prepared{err: fmt.Errorf("enqueue OCR: %w", err)}
		}
		return
	}
	metricOCRJobs.WithLabelValues("enqueued").Add(float64(len(jobs)))
	ix.wakeOCR()
}

// reportOCRQueue sets the queue gauges.
func (ix *Indexer) reportOCRQueue(ctx context.Context) {
	st, err := ix.o.OCRQueue.Status(ctx)
	if err != nil {
		return
	}
	metricOCRQueue.WithLabelValues("queued").Set(float64(st.Queued))
	metricOCRQueue.WithLabelValues("running").Set(float64(st.Running))
}

func (ix *Indexer) pruneOCRCache(ctx context.Context) {
	for {
		if n, err := ix.o.OCRQueue.Prune(ctx, ocrCacheUnused); err != nil && ctx.Err() == nil {
			ix.log.Warn("OCR cache: pruning failed", "error", err)
		} else if n > 0 {
			ix.log.Info("OCR cache: pruned text unused for long", "entries", n, "unused", ocrCacheUnused)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(24 * time.Hour):
		}
	}
}

// ocrSettings names what shapes the OCR text of a document's file besides
// its bytes: the cache key's second half.
func (ix *Indexer) ocrSettings(docType string) string {
	langs := ix.o.OCRDocTypeLangs[docType]
	if langs == "" {
		langs = ix.o.OCR.Langs()
	}
	orDefault := func(v, d int64) int64 {
		if v <= 0 {
			return d
		}
		return v
	}
	return fmt.Sprintf("langs=%s dpi=%d pixels=%d pages=%d osd=%t", langs,
		orDefault(int64(ix.o.OCRDPI), extract.DefaultOCRDPI), orDefault(ix.o.OCRMaxPixels, extract.DefaultOCRMaxPixels),
		orDefault(int64(ix.o.OCRMaxPages), extract.DefaultOCRMaxPages), ix.o.OCR.OSD())
}

// cachedOCR returns the cached OCR result of a file, if any. A file
// without a hash, or a cache that does not answer, is a miss.
func (ix *Indexer) cachedOCR(ctx context.Context, filehash, settings string) (extracted, bool) {
	if ix.o.OCRQueue == nil || filehash == "" {
		return extracted{}, false
	}
	cctx, cancel := context.WithTimeout(ctx, ix.o.CallTimeout)
	t, ok, err := ix.o.OCRQueue.Cached(cctx, filehash, settings)
	cancel()
	if err != nil {
		ix.log.Warn("OCR cache: lookup failed; reading the file", "filehash", filehash, "error", err)
	}
	if !ok {
		metricOCRCache.WithLabelValues("miss").Inc()
		return extracted{}, false
	}
	metricOCRCache.WithLabelValues("hit").Inc()
	// A failure of the cached reading was logged and counted then.
	return extracted{text: t.Content, source: extract.ContentSource(t.Source), ocrNeeded: t.Pages}, true
}

// cacheOCR stores the OCR result of a file, unless its failure says
// nothing about the file (a missing language, a cancellation), so that
// reading it again could give more. It reports whether it stored it.
func (ix *Indexer) cacheOCR(ctx context.Context, filehash, settings string, ex extracted) bool {
	if ix.o.OCRQueue == nil || filehash == "" || ex.ocrNeeded == 0 {
		return false
	}
	if e := ex.ocrErr; e != nil && (errors.Is(e, ocr.ErrLanguage) || errors.Is(e, ocr.ErrUnavailable) ||
		errors.Is(e, context.Canceled) || ctx.Err() != nil) {
		return false
	}
	t := ocrjobs.Text{Content: ex.text, Source: string(ex.source), Pages: ex.ocrNeeded}
	if ex.ocrErr != nil {
		t.Failure = ex.ocrErr.Error()
	}
	cctx, cancel := context.WithTimeout(ctx, ix.o.CallTimeout)
	defer cancel()
	if err := ix.o.OCRQueue.Put(cctx, filehash, settings, t); err != nil {
		ix.log.Warn("OCR cache: storing the text failed; the next revision reads the file again", "filehash", filehash, "error", err)
		return false
	}
	return true
}

// uncacheIfGone erases the OCR text just cached for document id's file
// when the document is gone (deleted or purged) by now: OCR takes long,
// and a purge whose event was handled while it ran erased the cache
// before this text was stored. Asking after storing closes that gap: a
// purge committed before the question is seen here, one committed after
// it has its event handled after the text was stored. A document only in
// the trash loses the cached text too (another document with the file
// reads it again): erasing too much costs an OCR run, never a leak.
func (ix *Indexer) uncacheIfGone(ctx context.Context, id int64, filehash string) {
	cctx, cancel := context.WithTimeout(ctx, ix.o.CallTimeout)
	defer cancel()
	resp, err := ix.o.Source.GetIndexDocument(cctx, &documentv1.GetIndexDocumentRequest{DocId: id})
	if err != nil && status.Code(err) != codes.NotFound {
		ix.log.Warn("OCR cache: could not check the document is still there after storing its text", "doc_id", id, "error", err)
		return
	}
	if err == nil && !resp.GetDeleted() && resp.GetDocument() != nil {
		return
	}
	if _, err := ix.o.OCRCache.Erase(cctx, []string{filehash}); err != nil {
		ix.log.Warn("OCR cache: could not erase the text of a document gone while OCR read it", "doc_id", id, "error", err)
		return
	}
	ix.log.Info("OCR cache: erased the text of a document gone while OCR read it", "doc_id", id)
}
