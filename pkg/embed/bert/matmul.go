package bert

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Tile sizes of the parallel matrix product: each task computes a block
// of tileRows × tileCols outputs, small enough that the tileCols rows of
// b it reads stay in L2 cache while the rows of a stream past them.
const (
	tileRows = 64
	tileCols = 64
)

// tileFunc computes dst[i0:i1, j0:j1] of a · bᵀ (+ bias); see matMulTile.
type tileFunc func(dst, a, b []float32, n, k, i0, i1, j0, j1 int, bias []float32)

// tileKernel computes one tile; matMulTileSIMD replaces the portable
// matMulTile where the build and the CPU allow (see matmul_simd.go).
var tileKernel tileFunc = matMulTile

// tileKernels are the kernels this binary can run, by name, for tests.
var tileKernels = map[string]tileFunc{"go-scalar": matMulTile}

// kernelName names tileKernel, for benchmarks and logs.
var kernelName = "go-scalar"

// Kernel names the matrix-product kernel in use: "go-scalar", or
// "avx2-fma" when built with GOEXPERIMENT=simd on a CPU that has them.
func Kernel() string { return kernelName }

// matMulT computes dst = a · bᵀ (+ bias): a is m×k, b is n×k (both
// row-major, so b is the transposed right operand, which is how
// PyTorch stores a Linear layer's weight), dst is m×n; bias, if not nil,
// has n values added to every row. Tiles are spread over all cores.
//
// Every output is the sum over k in index order, whatever the tile and
// the position in it, so results do not depend on m, on the tiling or on
// the number of cores: a sequence gets the same vector alone or in a
// batch.
func matMulT(dst, a, b []float32, m, n, k int, bias []float32) {
	rowTiles := (m + tileRows - 1) / tileRows
	colTiles := (n + tileCols - 1) / tileCols
	tasks := rowTiles * colTiles
	parallel(tasks, func(t int) {
		i0 := (t / colTiles) * tileRows
		j0 := (t % colTiles) * tileCols
		tileKernel(dst, a, b, n, k, i0, min(i0+tileRows, m), j0, min(j0+tileCols, n), bias)
	})
}

// matMulTile computes dst[i0:i1, j0:j1] (row stride n).
func matMulTile(dst, a, b []float32, n, k, i0, i1, j0, j1 int, bias []float32) {
	i := i0
	for ; i+4 <= i1; i += 4 {
		a0 := a[i*k : i*k+k]
		a1 := a[(i+1)*k : (i+1)*k+k]
		a2 := a[(i+2)*k : (i+2)*k+k]
		a3 := a[(i+3)*k : (i+3)*k+k]
		j := j0
		for ; j+2 <= j1; j += 2 {
			b0 := b[j*k : j*k+k]
			b1 := b[(j+1)*k : (j+1)*k+k]
			var c00, c01, c10, c11, c20, c21, c30, c31 float32
			for p := range b0 {
				x0, x1 := b0[p], b1[p]
				c00 += a0[p] * x0
				c01 += a0[p] * x1
				c10 += a1[p] * x0
				c11 += a1[p] * x1
				c20 += a2[p] * x0
				c21 += a2[p] * x1
				c30 += a3[p] * x0
				c31 += a3[p] * x1
			}
			if bias != nil {
				c00, c10, c20, c30 = c00+bias[j], c10+bias[j], c20+bias[j], c30+bias[j]
				c01, c11, c21, c31 = c01+bias[j+1], c11+bias[j+1], c21+bias[j+1], c31+bias[j+1]
			}
			dst[i*n+j], dst[i*n+j+1] = c00, c01
			dst[(i+1)*n+j], dst[(i+1)*n+j+1] = c10, c11
			dst[(i+2)*n+j], dst[(i+2)*n+j+1] = c20, c21
			dst[(i+3)*n+j], dst[(i+3)*n+j+1] = c30, c31
		}
		for ; j < j1; j++ {
			for r := i; r < i+4; r++ {
				dst[r*n+j] = dotBias(a[r*k:r*k+k], b[j*k:j*k+k], bias, j)
			}
		}
	}
	for ; i < i1; i++ {
		ai := a[i*k : i*k+k]
		for j := j0; j < j1; j++ {
			dst[i*n+j] = dotBias(ai, b[j*k:j*k+k], bias, j)
		}
	}
}

// dotBias is one output of matMulTile, summed in the same order as the
// blocked kernel.
func dotBias(x, y, bias []float32, j int) float32 {
	y = y[:len(x)]
	var s float32
	for p := range x {
		s += x[p] * y[p]
	}
	if bias != nil {
		s += bias[j]
	}
	return s
}

// parallel runs f(0..tasks-1) on up to GOMAXPROCS goroutines.
//
// Workers yield to the scheduler after every task (a tile or an attention
// head: well under a millisecond). A goroutine that runs for 10 ms without
// doing so is preempted by a signal, and in a GOEXPERIMENT=simd binary
// that preemption (the runtime saving vector registers with SSE
// instructions while the AVX state is dirty) took a fifth of an encoder's
// CPU time on the development machine.
func parallel(tasks int, f func(int)) {
	workers := min(maxWorkers(), tasks)
	if workers <= 1 {
		for t := range tasks {
			f(t)
			runtime.Gosched()
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t := int(next.Add(1) - 1)
				if t >= tasks {
					return
				}
				f(t)
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
}

// maxWorkers is the number of goroutines a parallel step uses.
func maxWorkers() int { return runtime.GOMAXPROCS(0) }
