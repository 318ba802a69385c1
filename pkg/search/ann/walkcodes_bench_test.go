package ann

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"unsafe"
)

// BenchmarkWalkOnCodes measures a graph walk of Ef 400 (the engine's
// breadth for a 100-result search) computing its distances from the
// full-precision vectors, read from a memory-mapped file as the engine
// reads them, against one computing them from the int8 codes
// (SearchOptions.Codes, ByVector), for each kernel configuration this
// build and CPU can run (kernelConfigs: the walk on floats with its dot
// kernel, the walk on codes with its tiles kernel), alternately in three
// rounds, for short queries (the first 612 of 1,380 components, as the
// use blend's) and whole ones. The set is DOCREPO_ANN_WALK_N vectors
// (default 100,000) of 1,380 dimensions drawn around 1,000 random
// centres, the queries near random vectors of it; the vectors' file and
// the graph are kept in $TMPDIR for the next runs (the graph's build is
// most of a first run). It reports the CPU per search, the distances
// computed, and the CPU per distance:
//
//	GOEXPERIMENT=simd go test ./search/ann -run XXX -bench WalkOnCodes -benchtime 200x
//	GODEBUG=cpu.avx512f=off GOEXPERIMENT=simd go test ... (as a CPU without AVX-512)
func BenchmarkWalkOnCodes(b *testing.B) {
	n, dim := 100000, 1380
	if s := os.Getenv("DOCREPO_ANN_WALK_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	base := filepath.Join(os.TempDir(), fmt.Sprintf("ann-walk-bench-%d-%d", n, dim))
	flat := walkBenchVectors(b, base+".f32", n, dim)
	docs := make([][]float32, n)
	for i := range docs {
		docs[i] = flat[i*dim : (i+1)*dim : (i+1)*dim]
	}
	vec := func(id int32) []float32 { return docs[id] }
	g := walkBenchGraph(b, base+".graph", dim, n, vec)
	codes := NewCodesLayout(dim, ByVector)
	codes.AppendFrom(n, vec, runtime.GOMAXPROCS(0))
	r := rand.New(rand.NewPCG(7, 7))
	queries := map[string][]*Query{}
	for range 64 {
		d := docs[r.IntN(n)]
		q := make([]float32, dim)
		for i := range q {
			q[i] = d[i] + 0.5*float32(r.NormFloat64())
		}
		short := make([]float32, dim)
		copy(short[:612], q)
		queries["whole"] = append(queries["whole"], NewQuery(q))
		queries["short"] = append(queries["short"], NewQuery(short))
	}
	defer func(on bool) { walkOnCodes = on }(walkOnCodes)
	walkOnCodes = true
	kernels := kernelConfigs()
	for round := range 3 {
		for _, qn := range []string{"short", "whole"} {
			qs := queries[qn]
			for _, k := range kernels {
				restore := k.use()
				for _, on := range []string{"floats", "codes"} {
					o := SearchOptions{Ef: 400}
					if on == "codes" {
						o.Codes = codes
					}
					if round == 0 {
						// Each walk's top 10 after re-ranking against the
						// floats': the codes walk finds the same.
						var same float64
						for _, q := range qs {
							rv, _ := g.Search(q, SearchOptions{Ef: 400})
							rc, _ := g.Search(q, o)
							same += recall(rerank(docs, q.v, rc, 10), rerank(docs, q.v, rv, 10))
						}
						b.Logf("query %s kernel %s walk on %s: %.3f of the walk on floats' top 10 after re-ranking", qn, k.name, on, same/float64(len(qs)))
					}
					b.Run(fmt.Sprintf("round=%d/query=%s/kernel=%s/walk=%s", round, qn, k.name, on), func(b *testing.B) {
						visits, i := 0, 0
						c0 := cpuTime()
						for b.Loop() {
							_, v := g.Search(qs[i%len(qs)], o)
							visits += v
							i++
						}
						cpu := cpuTime() - c0
						b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
						b.ReportMetric(float64(visits)/float64(b.N), "dists/op")
						b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(1, visits)), "cpu-ns/dist")
					})
				}
				restore()
			}
		}
	}
}

// walkBenchVectors returns BenchmarkWalkOnCodes' n vectors of dim values
// (little-endian float32, one after another) memory-mapped from path,
// written there first when the file is not of their size.
func walkBenchVectors(b *testing.B, path string, n, dim int) []float32 {
	size := int64(n) * int64(dim) * 4
	if st, err := os.Stat(path); err != nil || st.Size() != size {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 1))
		centres := make([][]float32, 1000)
		for i := range centres {
			centres[i] = make([]float32, dim)
			for j := range centres[i] {
				centres[i][j] = float32(r.NormFloat64())
			}
		}
		buf := make([]byte, dim*4)
		for range n {
			c := centres[r.IntN(len(centres))]
			for j := range dim {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(c[j]+float32(r.NormFloat64())))
			}
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { syscall.Munmap(m) })
	return unsafe.Slice((*float32)(unsafe.Pointer(&m[0])), n*dim)
}

// walkBenchGraph returns the graph of BenchmarkWalkOnCodes' vectors
// (default Config, seed 1), read from path or built and written there.
func walkBenchGraph(b *testing.B, path string, dim, n int, vec func(int32) []float32) *Graph {
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		g, err := ReadGraph(f, vec, Config{Seed: 1})
		if err == nil && g.Len() == n {
			return g
		}
		b.Logf("%s: %v; building the graph again", path, err)
	}
	g := Build(dim, n, vec, Config{Seed: 1}, runtime.GOMAXPROCS(0))
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := g.WriteTo(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return g
}
