// Package metrics is how docrepo's processes export Prometheus metrics.
//
// One style everywhere: a package declares its collectors (package-level,
// shared by every instance in the process) without registering them, and
// exports a RegisterMetrics(prometheus.Registerer) error that registers
// them. A process builds one registry with NewRegistry, registers the
// packages it runs on it, and serves that registry — never the global
// default one — so what /metrics shows is what the process was wired with.
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// LatencyBuckets are the histogram buckets, in seconds, of every request
// latency docrepo measures (REST, gRPC, search): 1 ms to 2 minutes.
var LatencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120}

// NewRegistry returns an empty registry with the Go runtime and process
// collectors every docrepo process exports.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Register registers cs on reg. A collector reg already holds is not an
// error: a package's RegisterMetrics may run twice for one registry when
// a process wires two components that share it.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var dup prometheus.AlreadyRegisteredError
			if errors.As(err, &dup) && dup.ExistingCollector == c {
				continue
			}
			return err
		}
	}
	return nil
}
