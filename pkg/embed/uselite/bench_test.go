package uselite

import (
	"context"
	"math"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkEncoder measures the encoder on the real weights (skipped
// without them): passages/s for batches of 16 passages of 128 ids (the
// reference passages' ids), the latency of one short query (p50 and
// p99), and the heap the loaded model holds, for every matrix kernel the
// build and CPU can run (named: avx512 and avx2 in a GOEXPERIMENT=simd
// build, and bert's kernel, go-scalar or avx2-fma).
//
//	cd pkg && GOEXPERIMENT=simd go test -run '^$' -bench Encoder -benchtime 5s -cpu 2 ./embed/uselite/
func BenchmarkEncoder(b *testing.B) {
	dir := modelDir(b)
	ref := readReference(b)
	byName := map[string][]int32{}
	for _, c := range ref.Cases {
		byName[c.Name] = c.IDs
	}
	var pool []int32
	for _, name := range []string{"passage-256", "passage-128-upper", "passage-mixed", "passage-long-words"} {
		pool = append(pool, byName[name]...)
	}
	passages := make([][]int32, 16)
	for i := range passages {
		off := (i * 61) % (len(pool) - 128)
		passages[i] = pool[off : off+128]
	}
	query := byName["query-how"]
	ctx := context.Background()

	saved := current
	defer func() { current = saved }()
	heapMB := math.NaN()
	for i, kernel := range append(kernels(), "") {
		setKernel(kernel)
		var before, loaded runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m, err := Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&loaded)
		if i == 0 { // later models replace the one before, which muddles the figure
			heapMB = float64(int64(loaded.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
		}
		prefix := "kernel=" + Kernel()

		b.Run(prefix+"/passages-128", func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := m.Embed(ctx, passages); err != nil {
					b.Fatal(err)
				}
			}
			if i == 0 {
				b.ReportMetric(heapMB, "model-heap-MB")
			}
			b.ReportMetric(float64(m.WeightBytes())/(1<<20), "weights-MB")
			n := float64(len(passages) * b.N)
			b.ReportMetric(n/b.Elapsed().Seconds(), "passages/s")
			// On a shared machine the wall clock mostly measures the other
			// processes; CPU time per passage, and what two otherwise idle
			// cores would make of it, do not.
			cpu := (cpuTime() - cpu0).Seconds()
			b.ReportMetric(1000*cpu/n, "cpu-ms/passage")
			b.ReportMetric(2*n/cpu, "passages/s-2-idle-cores")
		})
		b.Run(prefix+"/query", func(b *testing.B) {
			var lat []time.Duration
			cpu0 := cpuTime()
			for b.Loop() {
				start := time.Now()
				if _, err := m.Embed(ctx, [][]int32{query}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(len(query)), "ids")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/query")
		})
	}
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
