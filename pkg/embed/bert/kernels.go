package bert

import "math"

// The matrix product, the parallel loops and the fast exponential are
// exported for the other encoders of pkg/embed (package uselite runs
// Universal Sentence Encoder Lite on them), so every encoder gets the
// same kernels, and the AVX2/FMA one where the build allows.

// MatMulT computes dst = a · bᵀ (+ bias) on all cores: a is m×k, b is
// n×k, dst m×n, all row-major; bias, if not nil, has n values added to
// every row. Results do not depend on m or the number of cores.
func MatMulT(dst, a, b []float32, m, n, k int, bias []float32) {
	matMulT(dst, a, b, m, n, k, bias)
}

// MatMulTile computes rows i0..i1 and columns j0..j1 of dst = a · bᵀ
// (+ bias) on the calling goroutine (dst has row stride n, a and b row
// length k), with the kernel MatMulT uses; for callers that parallelise
// at a coarser grain (one attention head each, say).
func MatMulTile(dst, a, b []float32, n, k, i0, i1, j0, j1 int, bias []float32) {
	tileKernel(dst, a, b, n, k, i0, i1, j0, j1, bias)
}

// Parallel runs f(0), …, f(tasks-1) on up to GOMAXPROCS goroutines and
// returns when all have.
func Parallel(tasks int, f func(int)) { parallel(tasks, f) }

// ParallelRows splits rows into about two chunks per core and runs f on
// each chunk in parallel.
func ParallelRows(rows int, f func(r0, r1 int)) { parallelRows(rows, f) }

// Exp is eˣ to float32 precision, without package math's assembly (see
// fastmath.go for why).
func Exp(x float64) float64 { return exp(x) }

// Tanh is the hyperbolic tangent through Exp.
func Tanh(x float64) float64 { return tanh(x) }

// LayerNorm writes to dst the layer norm of src (dst may be src): mean 0
// and variance 1 (biased, statistics in float64, eps inside the square
// root), times w plus b.
func LayerNorm(dst, src, w, b []float32, eps float64) {
	var mean float64
	for _, v := range src {
		mean += float64(v)
	}
	mean /= float64(len(src))
	var variance float64
	for _, v := range src {
		d := float64(v) - mean
		variance += d * d
	}
	variance /= float64(len(src))
	inv := 1 / math.Sqrt(variance+eps)
	for j, v := range src {
		dst[j] = float32((float64(v)-mean)*inv)*w[j] + b[j]
	}
}
