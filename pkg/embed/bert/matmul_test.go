package bert

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = rng.Float32()*2 - 1
	}
	return s
}

// withKernels runs f once with each kernel the binary has.
func withKernels(t *testing.T, f func(t *testing.T)) {
	for name, k := range tileKernels {
		t.Run(name, func(t *testing.T) {
			prev := tileKernel
			tileKernel = k
			defer func() { tileKernel = prev }()
			f(t)
		})
	}
}

func TestMatMulT(t *testing.T) { withKernels(t, testMatMulT) }

func testMatMulT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	tests := []struct{ m, n, k int }{
		{1, 1, 1}, {1, 7, 3}, {5, 3, 8}, {4, 2, 16}, {65, 130, 33}, {128, 64, 384}, {3, 200, 5},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%dx%dx%d", tc.m, tc.n, tc.k), func(t *testing.T) {
			a, b := randSlice(rng, tc.m*tc.k), randSlice(rng, tc.n*tc.k)
			bias := randSlice(rng, tc.n)
			for _, withBias := range []bool{false, true} {
				dst := make([]float32, tc.m*tc.n)
				var bb []float32
				if withBias {
					bb = bias
				}
				matMulT(dst, a, b, tc.m, tc.n, tc.k, bb)
				for i := range tc.m {
					for j := range tc.n {
						var want float64
						for p := range tc.k {
							want += float64(a[i*tc.k+p]) * float64(b[j*tc.k+p])
						}
						if withBias {
							want += float64(bias[j])
						}
						if d := math.Abs(float64(dst[i*tc.n+j]) - want); d > 1e-4*math.Sqrt(float64(tc.k)) {
							t.Fatalf("bias %v: [%d,%d] = %v, want %v", withBias, i, j, dst[i*tc.n+j], want)
						}
					}
				}
			}
		})
	}
}

// TestMatMulTRowIndependent checks that a row's result does not depend on
// which other rows are in the product (the basis of padding invariance).
func TestMatMulTRowIndependent(t *testing.T) { withKernels(t, testMatMulTRowIndependent) }

func testMatMulTRowIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	const n, k = 70, 97
	b := randSlice(rng, n*k)
	row := randSlice(rng, k)
	alone := make([]float32, n)
	matMulT(alone, row, b, 1, n, k, nil)
	for _, m := range []int{1, 2, 3, 4, 5, 67, 130} {
		for _, at := range []int{0, m / 2, m - 1} {
			a := randSlice(rng, m*k)
			copy(a[at*k:], row)
			dst := make([]float32, m*n)
			matMulT(dst, a, b, m, n, k, nil)
			for j := range n {
				if dst[at*n+j] != alone[j] {
					t.Fatalf("m=%d row %d col %d: %v alone, %v in a batch", m, at, j, alone[j], dst[at*n+j])
				}
			}
		}
	}
}

func BenchmarkMatMulT(b *testing.B) {
	shapes := []struct {
		name    string
		m, n, k int
	}{
		{"qkv-128tok", 128, 3 * 384, 384},
		{"ffn-in-128tok", 128, 1536, 384},
		{"ffn-out-128tok", 128, 384, 1536},
		{"ffn-in-2048tok", 2048, 1536, 384},
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			x, w := randSlice(rng, s.m*s.k), randSlice(rng, s.n*s.k)
			dst := make([]float32, s.m*s.n)
			for b.Loop() {
				matMulT(dst, x, w, s.m, s.n, s.k, nil)
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
