package indexing

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/docrepo/docrepo/pkg/metrics"
)

// The indexer's metrics (RegisterMetrics), shared by every Indexer and
// consumer in the process.
var (
	metricLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "docrepo_indexer_lag_seconds",
		Help:    "Time from a document event's occurred_at to the engine write (or the finding that the engine is current) that acknowledges it.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 16), // 5 ms .. ~2.7 min
	})
	metricPending = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_pending",
		Help: "Document events not yet processed by the indexer consumer (pending plus awaiting acknowledgement), as last reported by JetStream.",
	})
	metricIndexed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_indexed_total",
		Help: "Documents processed by the event consumer, reindex and the anti-entropy pass (its repairs), by result: written, current (engine already up to date) or deleted. After a restart with a backlog, the pass at start-up writes documents whose events the consumer then finds current.",
	}, []string{"result"})
	metricFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_failed_total",
		Help: "Indexing failures, by reason: transient (retried), bad_event (parked as a dead letter), and content failures (too_large, download, extract, extract_limit, extract_timeout) after which the document is indexed without content.",
	}, []string{"reason"})
	metricOCRFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_ocr_failed_total",
		Help: "Documents whose OCR failed for some or all pages, by reason: limit (pages, pixels), page_timeout, doc_timeout, language, malformed (image header), ocr (the programs failed). The document is indexed with the text that could be read.",
	}, []string{"reason"})
	metricConsumerRecreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "docrepo_indexer_consumer_recreated_total",
		Help: "Times the indexer found its event stream or consumer gone (a NATS server that lost its store) and created them again; each is followed by an anti-entropy pass.",
	})
	metricOCRJobs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_ocr_jobs_total",
		Help: "OCR jobs, by event: enqueued (a document's text layer was written and its OCR queued), done, retried (a transient failure; tried again later), dropped (refused, or failed too often: the document keeps its text layer).",
	}, []string{"event"})
	metricOCRQueue = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "docrepo_indexer_ocr_jobs",
		Help: "OCR jobs of this engine's queue, by state: queued or running, as last seen by the OCR stage.",
	}, []string{"state"})
	metricOCRCache = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_ocr_cache_total",
		Help: "Lookups of OCR text by file SHA-256 and OCR settings, by result: hit (no OCR run) or miss.",
	}, []string{"result"})
	metricDeadLettered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_deadlettered_total",
		Help: "Events parked in the dead-letter stream (docrepoctl deadletter list), by reason: refused (the document service refuses the event) or max_deliveries (delivered DOCREPO_INDEX_MAX_DELIVER times without being handled).",
	}, []string{"reason"})
	metricRepaired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_indexer_repaired_total",
		Help: "Documents the anti-entropy pass repaired, by kind: missing (the index lacked it), stale (older revision indexed), deleted (indexed but no longer a document), unread (indexed without its file's text, which could not be downloaded; read again).",
	}, []string{"kind"})
	metricOutage = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_paused",
		Help: "1 while indexing is paused because the document service, its database or the engine does not answer (events are held and tried again as soon as they do), else 0.",
	})
	metricDiverged = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_diverged",
		Help: "Documents the last anti-entropy pass found indexed at a newer revision than the documents of record (a restored backup): docrepoctl reindex -recreate rebuilds the index.",
	})
	metricVerified = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_verified_timestamp_seconds",
		Help: "When the last anti-entropy pass compared the whole index with the documents of record.",
	})
	metricWithheld = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "docrepo_indexer_vectors_withheld_total",
		Help: "Batches written without vectors because the index records another embedder than the indexer's (it is waiting for a rebuild: DOCREPO_EMBEDDER_CHANGE).",
	})
	metricVectorBacklog = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_vector_backlog",
		Help: "Documents written with their full text whose content vectors the embedding stage has yet to make (DOCREPO_EMBED_DEFER); they are no content neighbours of vector searches until then.",
	})
	metricReembedRunning = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_reembed_running",
		Help: "1 while the index is re-embedded with a new embedder (DOCREPO_EMBEDDER_CHANGE=rebuild), else 0; vector search meanwhile embeds queries with the old embedder where it can be built, else answers 503.",
	})
	metricReembedDone = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_reembed_done",
		Help: "Documents the running (or last) re-embedding has processed.",
	})
	metricReembedTotal = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_reembed_total",
		Help: "Documents of record the running (or last) re-embedding processes.",
	})
	metricReembedKept = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_indexer_reembed_kept",
		Help: "Of docrepo_indexer_reembed_done, the documents the new index already held at their current revision and so were not embedded again: a re-embedding resumed after a restart continues the unfinished generation.",
	})
	metricPassages = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "docrepo_indexer_passages_embedded_total",
		Help: "Content passages embedded (one vector each) by this process's indexer, rebuilds and re-embeddings included: with docrepo_indexer_reembed_done, the passages per second of a re-embedding.",
	})
	metricBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
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
	for _, r := range []string{"enqueued", "done", "retried", "dropped"} {
		metricOCRJobs.WithLabelValues(r)
	}
	for _, r := range []string{"queued", "running"} {
		metricOCRQueue.WithLabelValues(r)
	}
	for _, r := range []string{"hit", "miss"} {
		metricOCRCache.WithLabelValues(r)
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

// RegisterMetrics registers the indexing metrics on reg (pkg/metrics).
func RegisterMetrics(reg prometheus.Registerer) error {
	return metrics.Register(reg,
		metricLag,
		metricPending,
		metricIndexed,
		metricFailed,
		metricOCRFailed,
		metricConsumerRecreated,
		metricOCRJobs,
		metricOCRQueue,
		metricOCRCache,
		metricDeadLettered,
		metricRepaired,
		metricOutage,
		metricDiverged,
		metricVerified,
		metricWithheld,
		metricVectorBacklog,
		metricReembedRunning,
		metricReembedDone,
		metricReembedTotal,
		metricReembedKept,
		metricPassages,
		metricBatch,
	)
}
