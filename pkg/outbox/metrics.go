package outbox

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The relay's metrics, registered once with the default registry and shared
// by every Relay in the process.
var (
	metricBacklog = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_outbox_backlog",
		Help: "Outbox rows not yet published to JetStream, as last counted by a relay in this process.",
	})
	metricPublished = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_outbox_published_total",
		Help: "Outbox rows acknowledged by JetStream and marked published.",
	}, []string{"aggregate"})
	metricPublishErrors = promauto.NewCounter(prometheus.CounterOpts{
		Name: "docrepo_outbox_publish_errors_total",
		Help: "Publishes that failed or were not acknowledged in time; their rows are retried.",
	})
	metricDuplicates = promauto.NewCounter(prometheus.CounterOpts{
		Name: "docrepo_outbox_duplicates_total",
		Help: "Publishes JetStream acknowledged as duplicates: rows published again after a failure between publishing and marking them.",
	})
	metricDBErrors = promauto.NewCounter(prometheus.CounterOpts{
		Name: "docrepo_outbox_db_errors_total",
		Help: "Failed outbox database operations (claim, mark, commit, listen, cleanup); the relay retries them.",
	})
	metricLatency = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "docrepo_outbox_publish_latency_seconds",
		Help:    "Time from an outbox row's created_at (the start of the writing transaction) to its JetStream ack.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 17), // 1 ms .. ~65 s
	})
)

func init() {
	// Export both series from the start so rate() works before the first event.
	metricPublished.WithLabelValues(AggregateDocument)
	metricPublished.WithLabelValues(AggregateFolder)
}
