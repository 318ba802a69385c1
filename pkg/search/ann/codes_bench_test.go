package ann

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCodesScan: one sparse (36 non-zero components) and one dense
// query scanned over 100,000 random 768-dimension vectors, one part, by
// each kernel set this build has (go; with GOEXPERIMENT=simd avx512 on a
// CPU with AVX-512 and avx2 on one with AVX2), with code blocks of 64 vectors (as before issue
// 23's latency work) and of codeLanes, side by side; "1%" scans the
// vectors of an eligibility bitset admitting every 100th:
//
//	GOEXPERIMENT=simd go test ./search/ann -run XXX -bench CodesScan
func BenchmarkCodesScan(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	n := 100000
	vecs := make([][]float32, n)
	for j := range vecs {
		v := make([]float32, 768)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		vecs[j] = v
	}
	widths := []int{64, codeLanes}
	stores := map[int]*Codes{}
	for _, w := range widths {
		stores[w] = codesOfWidth(w, vecs)
	}
	elig := make([]uint64, (n+63)/64)
	for i := 0; i < n; i += 100 {
		elig[i/64] |= 1 << (i % 64)
	}
	sparse := make([]float32, 768)
	for range 36 {
		sparse[r.IntN(768)] = float32(r.NormFloat64())
	}
	dense := make([]float32, 768)
	for i := range dense {
		dense[i] = float32(r.NormFloat64())
	}
	for _, q := range []struct {
		name string
		v    []float32
		elig []uint64
	}{{"sparse", sparse, nil}, {"sparse-1%", sparse, elig}, {"dense", dense, nil}} {
		pq := NewQuery(q.v)
		for _, k := range kernelSets() {
			for _, w := range widths {
				b.Run(fmt.Sprintf("%s/kernel=%s/lanes=%d", q.name, k.name, w), func(b *testing.B) {
					defer useKernels(k)()
					c0 := cpuTime()
					for b.Loop() {
						if q.elig != nil {
							stores[w].ScanEligible(pq, 232, q.elig, 0, 1)
						} else {
							stores[w].Scan(pq, 232, nil, nil)
						}
					}
					// The machine is shared: CPU time is the figure.
					b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
				})
			}
		}
	}
}

// codesOfWidth returns a store of the vectors in blocks of lanes vectors.
func codesOfWidth(lanes int, vecs [][]float32) *Codes {
	return codesOfLayout(lanes, superBlocks, vecs)
}

// codesOfLayout returns a store of the vectors appended one at a time in
// blocks of lanes vectors and superblocks of up to supers blocks.
func codesOfLayout(lanes, supers int, vecs [][]float32) *Codes {
	oldL, oldS := codeLanes, superBlocks
	codeLanes, superBlocks = lanes, supers
	defer func() { codeLanes, superBlocks = oldL, oldS }()
	c := NewCodes(len(vecs[0]))
	for _, v := range vecs {
		c.Append(v)
	}
	return c
}

// codeOf returns vector id's codes (tests).
func (c *Codes) codeOf(id int32) []int8 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	b, lane := c.blocks[int(id)/c.lanes], int(id)%c.lanes
	out := make([]int8, c.dim)
	for d := range out {
		out[d] = b.b[b.at(d, lane)]
	}
	return out
}

// moreKernelSets are ByDimension kernels this build and CPU can run
// besides the ones installed: codes_avx2_test.go adds the AVX2 ones on
// any CPU with AVX2, so that an AVX-512 CPU tests them too.
var moreKernelSets []kernelSet

// kernelSets returns the portable kernels, the ones this build and CPU
// use when different, and moreKernelSets.
func kernelSets() []kernelSet {
	out := []kernelSet{portableKernels}
	if kern.name != portableKernels.name {
		out = append(out, kern)
	}
	for _, k := range moreKernelSets {
		if k.name != kern.name {
			out = append(out, k)
		}
	}
	return out
}

// useKernels makes k the scans' kernels and returns the function that
// restores the previous ones.
func useKernels(k kernelSet) func() {
	old := kern
	kern = k
	return func() { kern = old }
}

// cpuTime returns the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCodesLayout: a sparse query (36 non-zero components) scanned
// over DOCREPO_ANN_CODES_N random 768-dimension vectors (default 300,000),
// one part, with each block its own allocation (superblocks of 1, as
// before) and in superblocks of up to superBlocks blocks, in three rounds
// alternating the two (the machine is shared and noisy: compare rounds):
//
//	GOEXPERIMENT=simd go test ./search/ann -run XXX -bench CodesLayout -benchtime 30x
func BenchmarkCodesLayout(b *testing.B) {
	n := 300000
	if s := os.Getenv("DOCREPO_ANN_CODES_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	r := rand.New(rand.NewPCG(1, 1))
	base := NewCodes(768)
	v := make([]float32, 768)
	for range n {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		base.Append(v)
	}
	sparse := make([]float32, 768)
	for range 36 {
		sparse[r.IntN(768)] = float32(r.NormFloat64())
	}
	pq := NewQuery(sparse)
	stores := []*Codes{base.WithLayout(codeLanes, 1), base}
	want := stores[0].Scan(pq, 232, nil, nil)
	for round := range 3 {
		for _, c := range stores {
			if got := c.Scan(pq, 232, nil, nil); !slices.Equal(got, want) {
				b.Fatal("the layouts' scans differ")
			}
			name := "separate"
			if c != stores[0] {
				name = fmt.Sprintf("superblocks=%d", superBlocks)
			}
			b.Run(fmt.Sprintf("round=%d/%s", round, name), func(b *testing.B) {
				c0 := cpuTime()
				for b.Loop() {
					c.Scan(pq, 232, nil, nil)
				}
				b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// BenchmarkCodesDenseLayout: a dense query (every component non-zero, as
// the use embedder's long ones: "dense"; or the first 612 only, as its
// short ones, without their lexical part: "short") scanned over DOCREPO_ANN_CODES_N random vectors of
// DOCREPO_ANN_CODES_DIM dimensions (defaults 100,000 and 1,380: today's
// blend), one part, unfiltered and through eligibility bitsets admitting
// a random 10 % and 1 %, with the codes laid out by dimension (before) and
// by vector, with each kernel configuration this build and CPU can run
// (kernelConfigs: the portable kernels, the installed ones, and the AVX2
// ones on an AVX-512 CPU; DOCREPO_ANN_KERNELS lists the names to run),
// alternately in three rounds, each scan checked against the other
// layout's:
//
//	GOEXPERIMENT=simd go test ./search/ann -run XXX -bench CodesDenseLayout -benchtime 20x
func BenchmarkCodesDenseLayout(b *testing.B) {
	n, dim := 100000, 1380
	if s := os.Getenv("DOCREPO_ANN_CODES_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("DOCREPO_ANN_CODES_DIM"); s != "" {
		dim, _ = strconv.Atoi(s)
	}
	r := rand.New(rand.NewPCG(1, 1))
	byDim := NewCodes(dim)
	v := make([]float32, dim)
	for range n {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		byDim.Append(v)
	}
	stores := []*Codes{byDim, byDim.AsLayout(ByVector)}
	q := make([]float32, dim)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	short := slices.Clone(q)
	clear(short[min(612, dim):])
	filters := []struct {
		name string
		elig []uint64
	}{{"none", nil}}
	for _, share := range []int{10, 100} {
		e := make([]uint64, (n+63)/64)
		for i := range n {
			if r.IntN(share) == 0 {
				e[i/64] |= 1 << (i % 64)
			}
		}
		filters = append(filters, struct {
			name string
			elig []uint64
		}{fmt.Sprintf("%d%%", 100/share), e})
	}
	scan := func(c *Codes, pq *Query, elig []uint64) []Result {
		if elig != nil {
			return c.ScanEligible(pq, 232, elig, 0, 1)
		}
		return c.Scan(pq, 232, nil, nil)
	}
	kernels := kernelConfigs()
	if s := os.Getenv("DOCREPO_ANN_KERNELS"); s != "" {
		kernels = slices.DeleteFunc(kernels, func(k kernelConfig) bool { return !slices.Contains(strings.Split(s, ","), k.name) })
	}
	for round := range 3 {
		for qn, qv := range map[string][]float32{"dense": q, "short": short} {
			pq := NewQuery(qv)
			for _, f := range filters {
				if round == 0 {
					if err := sameScan(scan(stores[1], pq, f.elig), scan(stores[0], pq, f.elig)); err != nil {
						b.Fatalf("query %s filter %s: the layouts' scans differ: %v", qn, f.name, err)
					}
				}
				for _, k := range kernels {
					restore := k.use()
					for _, c := range stores {
						b.Run(fmt.Sprintf("round=%d/query=%s/filter=%s/layout=%v/kernel=%s", round, qn, f.name, c.Layout(), k.name), func(b *testing.B) {
							c0 := cpuTime()
							for b.Loop() {
								scan(c, pq, f.elig)
							}
							b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
						})
					}
					restore()
				}
			}
		}
	}
}

// BenchmarkCodesPairs measures a filtered by-vector scan of a short
// query (the first 612 of 1,380 components) scoring the eligible vectors
// two at a time (dotTiles2Kernel) against one at a time, alternately in
// five rounds in one process, over DOCREPO_ANN_CODES_N random vectors
// (default 300,000) through bitsets admitting a random 10 % and 1 %:
//
//	GOEXPERIMENT=simd go test ./search/ann -run XXX -bench CodesPairs -benchtime 20x
func BenchmarkCodesPairs(b *testing.B) {
	if dotTiles2Kernel == nil {
		b.Skip("no two-vector kernel in this build or on this CPU")
	}
	c, pq, r := pairsStore(b)
	n := len(c.scale)
	pairs := dotTiles2Kernel
	defer func() { dotTiles2Kernel = pairs }()
	for _, share := range []int{10, 100} {
		e := randomElig(r, n, share)
		dotTiles2Kernel = nil
		want := c.ScanEligible(pq, 232, e, 0, 1)
		dotTiles2Kernel = pairs
		if got := c.ScanEligible(pq, 232, e, 0, 1); !slices.Equal(got, want) {
			b.Fatalf("1/%d: the scans differ", share)
		}
		for round := range 5 {
			for _, two := range []bool{false, true} {
				dotTiles2Kernel = nil
				if two {
					dotTiles2Kernel = pairs
				}
				b.Run(fmt.Sprintf("filter=1-in-%d/round=%d/pairs=%v", share, round, two), func(b *testing.B) {
					benchScanEligible(b, c, pq, e)
				})
			}
		}
	}
}

// BenchmarkCodesPrefetch measures a filtered dense scan of a ByVector
// store (pairsStore's) with the lines of the vector prefetchAhead
// eligible vectors on prefetched, for several distances (0: none), on a
// store in transparent huge pages (hugeCodes) and one not, alternating in
// rounds, with random filters of 10 % and 1 % and one of runs of 10 in
// every 100 (as the engine's groups of consecutive documents).
// DOCREPO_ANN_PREFETCH lists the distances, DOCREPO_ANN_HUGE (true,
// false or both) the stores.
func BenchmarkCodesPrefetch(b *testing.B) {
	defer func(d int, h bool) { prefetchAhead, hugeCodes = d, h }(prefetchAhead, hugeCodes)
	dists := []int{0, 4, 8, 16}
	if s := os.Getenv("DOCREPO_ANN_PREFETCH"); s != "" {
		dists = nil
		for _, f := range strings.Split(s, ",") {
			d, err := strconv.Atoi(f)
			if err != nil || d < 0 {
				b.Fatalf("DOCREPO_ANN_PREFETCH: %q is not a distance", f)
			}
			dists = append(dists, d)
		}
	}
	huge := []bool{false, true}
	switch s := os.Getenv("DOCREPO_ANN_HUGE"); s {
	case "", "both":
	case "true", "false":
		huge = []bool{s == "true"}
	default:
		b.Fatalf("DOCREPO_ANN_HUGE: %q is not true, false or both", s)
	}
	stores := map[bool]*Codes{}
	var pq *Query
	var r *rand.Rand
	for _, h := range huge {
		hugeCodes = h
		before := anonHuge(b)
		stores[h], pq, r = pairsStore(b)
		b.Logf("store with hugeCodes=%v: %d MiB of codes, the process's anonymous huge pages grew by %d MiB",
			h, stores[h].Bytes()>>20, (anonHuge(b)-before)>>20)
	}
	n := len(stores[huge[0]].scale)
	runs := make([]uint64, (n+63)/64)
	for i := range n {
		if i%100 < 10 {
			runs[i/64] |= 1 << (i % 64)
		}
	}
	filters := []struct {
		name string
		elig []uint64
	}{{"random-10pct", randomElig(r, n, 10)}, {"runs-10pct", runs}, {"random-1pct", randomElig(r, n, 100)}}
	for _, f := range filters {
		prefetchAhead = 0
		want := stores[huge[0]].ScanEligible(pq, 232, f.elig, 0, 1)
		for round := range 3 {
			for _, h := range huge {
				c := stores[h]
				for _, d := range dists {
					prefetchAhead = d
					if round == 0 {
						if got := c.ScanEligible(pq, 232, f.elig, 0, 1); !slices.Equal(got, want) {
							b.Fatalf("%s, huge %v, prefetching %d ahead: the scans differ", f.name, h, d)
						}
					}
					b.Run(fmt.Sprintf("filter=%s/round=%d/huge=%v/ahead=%d", f.name, round, h, d), func(b *testing.B) {
						benchScanEligible(b, c, pq, f.elig)
					})
				}
			}
		}
	}
}

// anonHuge returns the process's anonymous memory in transparent huge
// pages (/proc/self/smaps_rollup), 0 where there is none to read.
func anonHuge(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "AnonHugePages:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// pairsStore is a ByVector store of DOCREPO_ANN_CODES_N (300,000) random
// vectors of the blend's 1,380 dimensions and a short query's (the first
// 612 components), with the generator that drew them.
func pairsStore(b *testing.B) (*Codes, *Query, *rand.Rand) {
	n, dim := 300000, 1380
	if s := os.Getenv("DOCREPO_ANN_CODES_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	r := rand.New(rand.NewPCG(1, 1))
	c := NewCodesLayout(dim, ByVector)
	v := make([]float32, dim)
	for range n {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		c.Append(v)
	}
	q := make([]float32, dim)
	for i := range q[:612] {
		q[i] = float32(r.NormFloat64())
	}
	return c, NewQuery(q), r
}

// randomElig admits each of n vectors with chance 1/share.
func randomElig(r *rand.Rand, n, share int) []uint64 {
	e := make([]uint64, (n+63)/64)
	for i := range n {
		if r.IntN(share) == 0 {
			e[i/64] |= 1 << (i % 64)
		}
	}
	return e
}

// benchScanEligible times ScanEligible of k = 232 (a 100-result search's
// candidates), reporting the CPU per scan.
func benchScanEligible(b *testing.B, c *Codes, q *Query, elig []uint64) {
	c0 := cpuTime()
	for b.Loop() {
		c.ScanEligible(q, 232, elig, 0, 1)
	}
	b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// kernelConfig is every kernel a scan or walk uses, by name, for
// benchmarks to compare in one process: the ByDimension kernel set, the
// ByVector tiles kernels and the graph's dense dot product.
type kernelConfig struct {
	name string
	set  kernelSet
	one  tilesKernel
	two  tiles2Kernel
	dot  func(a, b []float32) float32
}

// moreKernelConfigs are kernel configurations this build and CPU can run
// besides the installed one (codes_avx2_test.go adds the AVX2 ones on any
// CPU with AVX2: an AVX-512 CPU runs them side by side with its own).
var moreKernelConfigs []kernelConfig

// kernelConfigs returns the portable kernels ("go"), the ones installed
// when different, and moreKernelConfigs, each once.
func kernelConfigs() []kernelConfig {
	out := []kernelConfig{{"go", portableKernels, dotTilesPortable, nil, dotPortable}}
	if kernelName != "go" {
		out = append(out, kernelConfig{kernelName, kern, dotTilesKernel, dotTiles2Kernel, dotKernel})
	}
	for _, k := range moreKernelConfigs {
		if k.name != kernelName {
			out = append(out, k)
		}
	}
	return out
}

// use installs k's kernels and returns the function that restores the
// previous ones.
func (k kernelConfig) use() func() {
	set, one, two, dot := kern, dotTilesKernel, dotTiles2Kernel, dotKernel
	kern, dotTilesKernel, dotTiles2Kernel, dotKernel = k.set, k.one, k.two, k.dot
	return func() { kern, dotTilesKernel, dotTiles2Kernel, dotKernel = set, one, two, dot }
}
