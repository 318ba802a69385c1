package outbox

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/docrepo/docrepo/pkg/metrics"
)

// The relay's metrics (RegisterMetrics), shared by every Relay in the
// process.
var (
	metricBacklog = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "docrepo_outbox_backlog",
		Help: "Outbox rows not yet published to JetStream, as last counted by a relay in this process.",
	})
	metricPublished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_outbox_published_total",
		Help: "Outbox rows acknowledged by JetStream and marked published.",
	}, []string{"aggregate"})
	metricPublishErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "docrepo_outbox_publish_errors_total",
		Help: "Publishes that failed or were not acknowledged in time; their rows are retried.",
	})
	metricDuplicates = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "docrepo_outbox_duplicates_total",
		Help: "Publishes JetStream acknowledged as duplicates: rows published again after a failure between publishing and marking them.",
	})
	metricDBErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "docrepo_outbox_db_errors_total",
		Help: "Failed outbox database operations (claim, mark, commit, cleanup); the relay retries them.",
	})
	metricLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
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

// RegisterMetrics registers the outbox metrics on reg (pkg/metrics).
func RegisterMetrics(reg prometheus.Registerer) error {
	return metrics.Register(reg,
		metricBacklog,
		metricPublished,
		metricPublishErrors,
		metricDuplicates,
		metricDBErrors,
		metricLatency,
	)
}
