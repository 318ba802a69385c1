package ocr

import (
	"context"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// OCR metrics, registered once with the default registry.
var (
	metricDocsQueued = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_ocr_documents_queued",
		Help: "Documents that need OCR and wait for a slot (the event consumer holds their events in progress meanwhile).",
	})
	metricDocsInProgress = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_ocr_documents_in_progress",
		Help: "Documents whose pages are being read or queued in the OCR pool.",
	})
	metricPagesQueued = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_ocr_pages_queued",
		Help: "Pages waiting for an OCR worker.",
	})
	metricPagesInProgress = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_ocr_pages_in_progress",
		Help: "Pages being rendered and read.",
	})
	metricPages = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_ocr_pages_total",
		Help: "Pages read, by result: ok (text found), empty (no text found), failed.",
	}, []string{"result"})
	metricFailures = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_ocr_failures_total",
		Help: "OCR failures by reason: page_timeout, doc_timeout, render (pdftoppm), recognise (tesseract), canceled. Limits refused before OCR are counted by the indexer (docrepo_indexer_ocr_refused_total).",
	}, []string{"reason"})
	metricPageSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "docrepo_ocr_page_seconds",
		Help:    "Time to render and read one page.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 12), // 50 ms .. ~100 s
	})
)

func init() {
	for _, r := range []string{"ok", "empty", "failed"} {
		metricPages.WithLabelValues(r)
	}
	for _, r := range []string{"page_timeout", "doc_timeout", "render", "recognise", "canceled"} {
		metricFailures.WithLabelValues(r)
	}
}

// Status is a snapshot of the engine's work.
type Status struct {
	Workers int
	Langs   string
	// DocumentsQueued wait in Acquire; DocumentsInProgress have pages in
	// the pool.
	DocumentsQueued, DocumentsInProgress int
	PagesQueued, PagesInProgress         int
	// PagesDone and PagesFailed count pages since the engine started.
	PagesDone, PagesFailed int64
	// Documents are the documents in progress, oldest first.
	Documents []DocumentStatus
}

// DocumentStatus is one document in progress.
type DocumentStatus struct {
	DocID       int64
	Pages, Done int
	Started     time.Time
}

// Status returns what the engine is doing.
func (e *Engine) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Documents = nil
	for r := range e.active {
		done := r.queued - r.running
		s.Documents = append(s.Documents, DocumentStatus{DocID: r.file.docID, Pages: len(r.pages), Done: done, Started: r.started})
	}
	sort.Slice(s.Documents, func(i, j int) bool { return s.Documents[i].Started.Before(s.Documents[j].Started) })
	return s
}

// Acquire waits for one of Config.Documents slots for a document about to be
// downloaded and read, so that a flood of scans does not download every
// file at once; release frees the slot. Waiting documents are counted as
// queued.
func (e *Engine) Acquire(ctx context.Context) (release func(), err error) {
	e.mu.Lock()
	e.stats.DocumentsQueued++
	e.mu.Unlock()
	metricDocsQueued.Inc()
	defer func() {
		e.mu.Lock()
		e.stats.DocumentsQueued--
		e.mu.Unlock()
		metricDocsQueued.Dec()
	}()
	select {
	case e.slots <- struct{}{}:
		return func() { <-e.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
