package ann

import (
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/coder/hnsw"
)

// BenchmarkCompare sets this package's graph against github.com/coder/hnsw
// (pure Go, float32 vectors in its nodes) on the same hash vectors
// (DOCREPO_ANN_DOCS documents, default 10,000, 768 dimensions): build
// time, heap held, search latency and recall@10 (after exact re-ranking)
// for document-like queries (dense) and three-word queries (sparse),
// latency of the walk alone (both return exact float32 distances); and
// the two quantisations considered for the in-memory codes (int8 with a
// scale per vector, float16): memory per vector and recall@10 of a scan
// of the codes, without and with re-ranking 2k+32 candidates from the
// full-precision vectors.
//
//	go test ./search/ann -run XXX -bench Compare -benchtime 1x
func BenchmarkCompare(b *testing.B) {
	n := benchDocs(10000)
	const dim = 768
	docs, long := hashCorpus(b, n, 100, dim, true)
	_, short := hashCorpus(b, 0, 100, dim, false)
	for b.Loop() {
		heap0 := heapInUse()
		t0 := time.Now()
		g := New(dim, func(id int32) []float32 { return docs[id] }, Config{Seed: 1})
		for _, v := range docs {
			g.Add(v)
		}
		ownBuild, ownHeap := time.Since(t0), heapInUse()-heap0
		heap0 = heapInUse()
		t0 = time.Now()
		cg := hnsw.NewGraph[int32]()
		cg.M, cg.EfSearch, cg.Distance = 16, 128, hnsw.EuclideanDistance
		for i, v := range docs {
			cg.Add(hnsw.MakeNode(int32(i), v))
		}
		theirBuild, theirHeap := time.Since(t0), heapInUse()-heap0
		b.Logf("%d documents, %d dimensions: build own %v (graph %.0f B/doc; vectors stay in the caller's file), coder/hnsw %v (%.0f B/doc with its float32 copies)",
			n, dim, ownBuild.Round(time.Millisecond), float64(ownHeap)/float64(n), theirBuild.Round(time.Millisecond), float64(theirHeap)/float64(n))
		for _, qs := range []struct {
			name    string
			queries [][]float32
		}{{"document-like (dense)", long}, {"three words (sparse)", short}} {
			var ownR, theirR float64
			var ownLat, theirLat []time.Duration
			for _, q := range qs.queries {
				want := exactTop(docs, q, 10, nil)
				t0 := time.Now()
				rs, _ := g.Search(NewQuery(q), SearchOptions{Ef: 128})
				ownLat = append(ownLat, time.Since(t0))
				ownR += recall(rerank(docs, q, rs, 10), want)
				t0 = time.Now()
				nodes := cg.Search(q, 128)
				theirLat = append(theirLat, time.Since(t0))
				ids := make([]Result, len(nodes))
				for i, nd := range nodes {
					ids[i] = Result{ID: nd.Key}
				}
				theirR += recall(rerank(docs, q, ids, 10), want)
			}
			nq := float64(len(qs.queries))
			b.Logf("  %-22s ef 128: own recall@10 %.3f p50 %v; coder/hnsw recall@10 %.3f p50 %v",
				qs.name, ownR/nq, median(ownLat), theirR/nq, median(theirLat))
		}
	}
	b.StopTimer()
	int8c := NewCodes(dim)
	f16 := make([][]float32, len(docs)) // float16 values, decoded
	for i, v := range docs {
		int8c.Append(v)
		f16[i] = make([]float32, dim)
		for j, x := range v {
			f16[i][j] = fromHalf(toHalf(x))
		}
	}
	for _, qs := range []struct {
		name    string
		queries [][]float32
	}{{"three words (sparse)", short}, {"document-like (dense)", long}} {
		var i8raw, i8re, h16raw, h16re float64
		for _, q := range qs.queries {
			want := exactTop(docs, q, 10, nil)
			rs := int8c.Scan(NewQuery(q), 52, nil, nil)
			i8re += recall(rerank(docs, q, rs, 10), want)
			raw := make([]int32, 0, 10)
			for _, r := range rs[:10] {
				raw = append(raw, r.ID)
			}
			i8raw += recall(raw, want)
			top := exactTop(f16, q, 52, nil)
			h16raw += recall(top[:10], want)
			hs := make([]Result, len(top))
			for i, id := range top {
				hs[i] = Result{ID: id}
			}
			h16re += recall(rerank(docs, q, hs, 10), want)
		}
		nq := float64(len(qs.queries))
		b.Logf("codes, %-22s int8 (%d B/vector) recall@10 %.3f raw, %.3f re-ranked; float16 (%d B/vector) %.3f raw, %.3f re-ranked",
			qs.name, dim+8, i8raw/nq, i8re/nq, 2*dim, h16raw/nq, h16re/nq)
	}
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Microsecond)
}

// toHalf converts to IEEE 754 binary16 (round to nearest even; the hash
// vectors' values are far from its range limits).
func toHalf(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int32(bits>>23&0xff) - 127 + 15
	mant := bits & 0x7fffff
	switch {
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		h := mant >> shift
		if mant>>(shift-1)&1 == 1 && (mant&(1<<(shift-1)-1) != 0 || h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	case exp >= 31:
		return sign | 0x7c00
	}
	h := uint32(exp)<<10 | mant>>13
	if mant&0x1000 != 0 && (mant&0xfff != 0 || h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

func fromHalf(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h >> 10 & 0x1f)
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		return float32(math.Copysign(float64(mant)*math.Pow(2, -24), float64(int32(sign)|1)))
	case exp == 31:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
}
