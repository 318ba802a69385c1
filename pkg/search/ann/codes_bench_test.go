package ann

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkCodesScan: one sparse (36 non-zero components) and one dense
// query scanned over 100,000 random 768-dimension vectors, one part, by
// each block kernel this build has (go, and avx512 with GOEXPERIMENT=simd
// on a CPU with AVX-512), side by side:
//
//	GOEXPERIMENT=simd go test ./search/ann -run XXX -bench CodesScan
func BenchmarkCodesScan(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	c := NewCodes(768)
	v := make([]float32, 768)
	for range 100000 {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		c.Append(v)
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
	}{{"sparse", sparse}, {"dense", dense}} {
		pq := NewQuery(q.v)
		for _, k := range kernels() {
			b.Run(q.name+"/kernel="+k.name, func(b *testing.B) {
				defer useKernel(k.fn)()
				for b.Loop() {
					c.Scan(pq, 232, nil, nil)
				}
			})
		}
	}
}

type namedKernel struct {
	name string
	fn   func(*[blockSize]float32, []int8, []int32, []float32, []float32, []float32, float32, float32) uint64
}

// kernels returns the portable block kernel and, when different, the
// one this build and CPU use.
func kernels() []namedKernel {
	out := []namedKernel{{"go", blockDistances}}
	if kernelName != "go" {
		out = append(out, namedKernel{kernelName, blockKernel})
	}
	return out
}

// useKernel makes fn the block kernel and returns the function that
// restores the previous one.
func useKernel(fn func(*[blockSize]float32, []int8, []int32, []float32, []float32, []float32, float32, float32) uint64) func() {
	old := blockKernel
	blockKernel = fn
	return func() { blockKernel = old }
}
