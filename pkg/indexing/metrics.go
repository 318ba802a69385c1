package indexing

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The indexer's metrics, registered once with the default registry and
// shared by every Indexer and consumer in the process.
var (
	metricLag = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "docrepo_indexer_lag_seconds",
		Help:    "Time from a document event's occurred_at to the engine write (or the finding that the engine is current) that acknowledges it.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 16), // 5 ms .. ~2.7 min
	})
	metricPending = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_pending",
		Help: "Document events not yet processed by the indexer consumer (pending plus awaiting acknowledgement), as last reported by JetStream.",
	})
	metricIndexed = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_indexed_total",
		Help: "Documents processed, by result: written, current (engine already up to date) or deleted.",
	}, []string{"result"})
	metricFailed = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_failed_total",
		Help: "Indexing failures, by reason: transient (retried), bad_event (parked as a dead letter), and content failures (too_large, download, extract, extract_limit, extract_timeout) after which the document is indexed without content.",
	}, []string{"reason"})
	metricOCRFailed = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_ocr_failed_total",
		Help: "Documents whose OCR failed for some or all pages, by reason: limit (pages, pixels), page_timeout, doc_timeout, language, malformed (image header), ocr (the programs failed). The document is indexed with the text that could be read.",
	}, []string{"reason"})
	metricDeadLettered = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_deadlettered_total",
		Help: "Events parked in the dead-letter stream (docrepoctl deadletter list), by reason: refused (the document service refuses the event) or max_deliveries (delivered DOCREPO_INDEX_MAX_DELIVER times without being handled).",
	}, []string{"reason"})
	metricRepaired = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_repaired_total",
		Help: "Documents the anti-entropy pass repaired, by kind: missing (the index lacked it), stale (older revision indexed), deleted (indexed but no longer a document), unread (indexed without its file's text, which could not be downloaded; read again).",
	}, []string{"kind"})
	metricOutage = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_paused",
		Help: "1 while indexing is paused because the document service, its database or the engine does not answer (events are held and tried again as soon as they do), else 0.",
	})
	metricDiverged = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_diverged",
		Help: "Documents the last anti-entropy pass found indexed at a newer revision than the documents of record (a restored backup): docrepoctl reindex -recreate rebuilds the index.",
	})
	metricVerified = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_verified_timestamp_seconds",
		Help: "When the last anti-entropy pass compared the whole index with the documents of record.",
	})
	metricWithheld = promauto.NewCounter(prometheus.CounterOpts{
		Name: "docrepo_indexer_vectors_withheld_total",
		Help: "Batches written without vectors because the index records another embedder than the indexer's (it is waiting for a rebuild: DOCREPO_EMBEDDER_CHANGE).",
	})
	metricVectorBacklog = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_vector_backlog",
		Help: "Documents written with their full text whose content vectors the embedding stage has yet to make (DOCREPO_EMBED_DEFER); they are no content neighbours of vector searches until then.",
	})
	metricReembedRunning = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_reembed_running",
		Help: "1 while the index is re-embedded with a new embedder (DOCREPO_EMBEDDER_CHANGE=rebuild), else 0; vector search answers 503 meanwhile.",
	})
	metricReembedDone = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_reembed_done",
		Help: "Documents the running (or last) re-embedding has processed.",
	})
	metricReembedTotal = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_reembed_total",
		Help: "Documents of record the running (or last) re-embedding processes.",
	})
	metricBatch = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "docrepo_indexer_batch_seconds",
		Help:    "Time to process one batch of events, from fetch to the last acknowledgement.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
)

func init() {
	for _, r := range []string{"limit", "page_timeout", "doc_timeout", "language", "malformed", "ocr"} {
		metricOCRFailed.WithLabelValues(r)
	}
	for _, r := range []string{"missing", "stale", "deleted", "unread"} {
		metricRepaired.WithLabelValues(r)
	}
	for _, r := range []string{"refused", "max_deliveries"} {
		metricDeadLettered.WithLabelValues(r)
	}
	for _, r := range []string{"written", "current", "deleted"} {
		metricIndexed.WithLabelValues(r)
	}
	for _, r := range []string{"transient", "bad_event", "too_large", "download", "extract", "extract_limit", "extract_timeout"} {
		metricFailed.WithLabelValues(r)
	}
}
