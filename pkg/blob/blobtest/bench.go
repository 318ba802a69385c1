package blobtest

import (
	"fmt"
	"testing"

	"github.com/docrepo/docrepo/pkg/blob"
)

// BenchmarkPut measures Put of size pseudo-random bytes, streamed from a
// generator so the source holds no payload in memory. Besides the usual
// MB/s it reports, over all iterations:
//
//   - peak-heap-MiB: the highest heap in use (runtime MemStats.HeapInuse)
//     seen during any Put, sampled every millisecond;
//   - heap-growth-MiB: the largest rise of live-and-unswept heap objects
//     above the post-GC baseline taken just before each Put.
//
// Each object is deleted outside the timed region.
func BenchmarkPut(b *testing.B, s blob.Store, size int64) {
	ctx := b.Context()
	b.SetBytes(size)
	var peakInuse, maxGrowth uint64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		key := fmt.Sprintf("bench/%d.bin", i)
		body := newGenReader(uint64(i), size)
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
		if err := s.Delete(ctx, key); err != nil {
			b.Fatalf("Delete: %v", err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(peakInuse)/mib, "peak-heap-MiB")
	b.ReportMetric(float64(maxGrowth)/mib, "heap-growth-MiB")
}
