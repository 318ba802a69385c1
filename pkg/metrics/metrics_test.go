package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterTwiceIsNoErrorButAClashIs(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "docrepo_test_total", Help: "A test counter."})
	reg := NewRegistry()
	if err := Register(reg, c); err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, c); err != nil {
		t.Errorf("registering the same collector again: %v, want no error", err)
	}
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "docrepo_test_total", Help: "A test counter."})
	if err := Register(reg, other); err == nil {
		t.Error("a second collector with the same name was registered; want an error")
	}
}

func TestNewRegistryExportsTheProcess(t *testing.T) {
	mfs, err := NewRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if !names[want] {
			t.Errorf("%s missing from a new registry", want)
		}
	}
}

func TestLatencyBucketsAscend(t *testing.T) {
	for i := 1; i < len(LatencyBuckets); i++ {
		if LatencyBuckets[i] <= LatencyBuckets[i-1] {
			t.Fatalf("bucket %d (%v) does not exceed bucket %d (%v)", i, LatencyBuckets[i], i-1, LatencyBuckets[i-1])
		}
	}
}
