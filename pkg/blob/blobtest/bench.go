package blobtest

import (
	"fmt"
	"testing"

	"github.com/docrepo/docrepo/pkg/blob"
)

// BenchmarkPut measures Put of size bytes of incompressible data, streamed
// from a generator so the source holds no payload in memory. Besides the
// usual MB/s it reports, as the maximum over all iterations:
//
//   - peak-heap-MiB: the highest heap in use (runtime MemStats.HeapInuse)
//     seen during a Put, sampled every millisecond;
//   - heap-growth-MiB: the largest rise of heap objects (live and garbage not
//     yet swept) above the post-GC baseline taken just before the Put; with
//     the default GOGC this is up to about twice what Put really retains;
//   - live-growth-MiB: the largest rise of the heap marked live by a GC
//     during the Put: what Put retains (0 when no GC ran during the Put).
//
// Run it at two sizes to see that memory does not grow with the object.
// Each object is deleted outside the timed region.
func BenchmarkPut(b *testing.B, s blob.Store, size int64) {
	ctx := b.Context()
	b.SetBytes(size)
	var peakInuse, maxGrowth, maxLive uint64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		key := fmt.Sprintf("bench/%d.bin", i)
		body := newPatternReader(size)
		w := watchHeap()
		b.StartTimer()

		n, err := s.Put(ctx, key, body)

		b.StopTimer()
		base, peak := w.Stop()
		if err != nil {
			b.Fatalf("Put: %v", err)
		}
		if n != size {
			b.Fatalf("Put returned size %d, want %d", n, size)
		}
		peakInuse = max(peakInuse, peak.inuse)
		maxGrowth = max(maxGrowth, peak.objects-base.objects)
		maxLive = max(maxLive, peak.live-base.live)
		if err := s.Delete(ctx, key); err != nil {
			b.Fatalf("Delete: %v", err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(peakInuse)/mib, "peak-heap-MiB")
	b.ReportMetric(float64(maxGrowth)/mib, "heap-growth-MiB")
	b.ReportMetric(float64(maxLive)/mib, "live-growth-MiB")
}
