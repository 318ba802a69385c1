package ocr

import (
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/docrepo/docrepo/pkg/metrics"
)

// OCR metrics (RegisterMetrics), shared by every engine in the process.
var (
	metricDocsInProgress = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_ocr_documents_in_progress",
		Help: "Documents whose pages are being read or queued in the OCR pool.",
	})
	metricPagesQueued = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_ocr_pages_queued",
		Help: "Pages waiting for an OCR worker.",
	})
	metricPagesInProgress = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_ocr_pages_in_progress",
		Help: "Pages being rendered and read.",
	})
	metricPages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_ocr_pages_total",
		Help: "Pages read, by result: ok (text found), empty (no text found), failed.",
	}, []string{"result"})
	metricFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_ocr_failures_total",
		Help: "OCR failures by reason: page_timeout, doc_timeout, render (pdftoppm), recognise (tesseract), canceled. Limits refused before OCR are counted by the indexer (docrepo_indexer_ocr_refused_total).",
	}, []string{"reason"})
	metricPageSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
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
	// DocumentsInProgress have pages in the pool (documents waiting for
	// OCR are jobs of the indexer's queue, pkg/ocrjobs).
	DocumentsInProgress          int
	PagesQueued, PagesInProgress int
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

// Documents is how many documents may be read at once (Config.Documents):
// the indexer's OCR stage runs that many jobs.
func (e *Engine) Documents() int { return e.cfg.Documents }

// RegisterMetrics registers the ocr metrics on reg (pkg/metrics).
func RegisterMetrics(reg prometheus.Registerer) error {
	return metrics.Register(reg,
		metricDocsInProgress,
		metricPagesQueued,
		metricPagesInProgress,
		metricPages,
		metricFailures,
		metricPageSeconds,
	)
}
