package ann

import (
	"fmt"
	"runtime"
	"testing"
)

func TestExpRules(t *testing.T) {
	n := benchDocs(3000)
	const dim = 768
	docs, queries := hashCorpus(t, n, 50, dim, true)
	vec := func(id int32) []float32 { return docs[id] }
	for _, r := range []string{"reselect", "all", "lucene", "reselect", "all", "lucene"} {
		runtime.LockOSThread()
		ShrinkAll = r == "all"
		pairHit, pairMiss = 0, 0
		g := New(dim, vec, Config{Seed: 1, Reselect: r == "reselect"})
		c := threadCPU()
		for _, v := range docs {
			g.Add(v)
		}
		cpu := threadCPU() - c
		var r10 float64
		for _, q := range queries {
			rs, _ := g.Search(NewQuery(q), SearchOptions{Ef: 100})
			r10 += recall(rerank(docs, q, rs, 10), exactTop(docs, q, 10, nil))
		}
		fmt.Printf("%-9s %6.0f µs/add  hits %d misses %d (%.0f%%)  recall@10 %.3f\n", r, float64(cpu.Microseconds())/float64(n), pairHit, pairMiss, 100*float64(pairHit)/float64(pairHit+pairMiss), r10/float64(len(queries)))
	}
}
