package uselite

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed/bert"
)

func randMatrix(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return v
}

// TestDense checks both layouts of a dense layer (packed panels, forced
// on in builds without the AVX2 kernel, and bert.MatMulT's) against a
// float64 product, with every epilogue, and that a row's outputs do not
// depend on the rows computed with it.
func TestDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	saved := current
	defer func() { current = saved }()
	for _, tc := range []struct {
		name    string
		m, k, n int
	}{
		{name: "one row", m: 1, k: 512, n: 512},
		{name: "two rows", m: 2, k: 100, n: 64},
		{name: "six rows", m: 6, k: 33, n: 96},
		{name: "rows not a multiple of 4", m: 67, k: 256, n: 768},
		{name: "wide", m: 9, k: 1536, n: 512},
		{name: "columns not a multiple of 16", m: 5, k: 40, n: 24},
	} {
		w := randMatrix(rng, tc.k*tc.n)
		bias := randMatrix(rng, tc.n)
		a := randMatrix(rng, tc.m*tc.k)
		prev := randMatrix(rng, tc.m*tc.n)
		for _, kern := range append([]string{"", "scalar"}, kernels()...) {
			if kern == "scalar" { // the portable packed kernels, in any build
				current = scalarKernel
			} else {
				setKernel(kern)
			}
			d := newDense(w, tc.k, tc.n, bias)
			for _, epi := range []int{epiStore, epiReLU, epiAdd} {
				t.Run(fmt.Sprintf("%s/kernel=%s/packed=%v/epi=%d", tc.name, kern, d.panels != nil, epi), func(t *testing.T) {
					dst := slices.Clone(prev)
					d.apply(dst, a, tc.m, epi, make([]float32, tc.m*tc.n))
					for i := range tc.m {
						for j := range tc.n {
							s := float64(bias[j])
							for p := range tc.k {
								s += float64(a[i*tc.k+p]) * float64(w[p*tc.n+j])
							}
							switch epi {
							case epiReLU:
								s = max(s, 0)
							case epiAdd:
								s += float64(prev[i*tc.n+j])
							}
							if got := float64(dst[i*tc.n+j]); math.Abs(got-s) > 1e-4*math.Sqrt(float64(tc.k)) {
								t.Fatalf("[%d,%d] = %g, want %g", i, j, got, s)
							}
						}
					}
					// The last row alone gives the same bits.
					last := slices.Clone(prev[(tc.m-1)*tc.n:])
					d.apply(last, a[(tc.m-1)*tc.k:], 1, epi, make([]float32, tc.n))
					if !slices.Equal(last, dst[(tc.m-1)*tc.n:]) {
						t.Fatalf("row %d differs when computed alone", tc.m-1)
					}
				})
			}
		}
	}
}

// BenchmarkDense compares the packed kernel with bert.MatMulT on the
// model's largest product (2,048 rows: 16 passages of 128 ids).
func BenchmarkDense(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const m, k, n = 2048, 512, 1536
	w, bias, a := randMatrix(rng, k*n), randMatrix(rng, n), randMatrix(rng, m*k)
	dst := make([]float32, m*n)
	wt := transpose(w, k, n)
	b.Run("bert.MatMulT/kernel="+bert.Kernel(), func(b *testing.B) {
		cpu0 := cpuTime()
		for b.Loop() {
			bert.MatMulT(dst, a, wt, m, n, k, bias)
		}
		b.ReportMetric(2*m*n*k*float64(b.N)/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
	})
	saved := current
	defer func() { current = saved }()
	for _, kern := range kernels() {
		setKernel(kern)
		d := newDense(w, k, n, bias)
		b.Run("packed/kernel="+kern, func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				d.apply(dst, a, m, epiStore, nil)
			}
			b.ReportMetric(2*m*n*k*float64(b.N)/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
		})
	}
}
