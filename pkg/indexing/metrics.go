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
		Help: "Indexing failures, by reason: transient (retried), bad_event (dropped), and content failures (too_large, download, extract, extract_limit, extract_timeout) after which the document is indexed without content.",
	}, []string{"reason"})
	metricBatch = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "docrepo_indexer_batch_seconds",
		Help:    "Time to process one batch of events, from fetch to the last acknowledgement.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
)

func init() {
	for _, r := range []string{"written", "current", "deleted"} {
		metricIndexed.WithLabelValues(r)
	}
	for _, r := range []string{"transient", "bad_event", "too_large", "download", "extract", "extract_limit", "extract_timeout"} {
		metricFailed.WithLabelValues(r)
	}
}
