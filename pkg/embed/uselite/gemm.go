package uselite

import (
	"sync"

	"github.com/docrepo/docrepo/pkg/embed/bert"
)

// dense is a weight matrix W (k inputs × n outputs, as TensorFlow stores
// it) with its bias, laid out for the matrix kernel chosen when it was
// built: in panels of the kernel's width for a packed kernel (see
// gemm_simd.go), or transposed (n × k) for bert.MatMulT.
type dense struct {
	k, n   int
	kern   kernel    // the packed kernel, or the zero kernel
	t      []float32 // n × k, for bert.MatMulT; nil when panels is set
	panels []float32 // n/width panels of k × width values
	bias   []float32
}

// Epilogues applied as the outputs are stored.
const (
	epiStore = iota // dst = a·W + b
	epiReLU         // dst = max(a·W + b, 0)
	epiAdd          // dst += a·W + b (a residual connection)
)

// kernel is a packed matrix kernel: k4 and k1 compute 4 rows (1 row) ×
// width columns of a · W + bias, W a panel of k × width values (k =
// len(panel)/width), dst and a rows ldd and lda apart. The zero kernel
// (name "") means none: bert.MatMulT.
type kernel struct {
	name  string
	width int
	k4    func(dst []float32, ldd int, a []float32, lda int, panel, bias []float32, epi int)
	k1    func(dst []float32, a []float32, panel, bias []float32, epi int)
}

// current is the kernel models loaded from now on use; gemm_simd.go sets
// it at start-up when the build and the CPU allow.
var current kernel

// scalarKernel is the portable version of the packed kernels, for tests.
var scalarKernel = kernel{name: "scalar", width: 16, k4: kernel4Scalar, k1: kernel1Scalar}

// Kernel names the matrix kernel the dense layers run on: "avx512" or
// "avx2" (a GOEXPERIMENT=simd build on a CPU with them), else bert's
// ("go-scalar").
func Kernel() string {
	if current.name != "" {
		return current.name
	}
	return bert.Kernel()
}

func newDense(w []float32, k, n int, bias []float32) *dense {
	d := &dense{k: k, n: n, bias: bias}
	if pw := current.width; current.name != "" && n%pw == 0 {
		d.kern = current
		d.panels = make([]float32, k*n)
		for jb := range n / pw {
			panel := d.panels[jb*pw*k : (jb+1)*pw*k]
			for p := range k {
				copy(panel[p*pw:(p+1)*pw], w[p*n+jb*pw:p*n+(jb+1)*pw])
			}
		}
		return d
	}
	d.t = transpose(w, k, n)
	return d
}

// weights returns the matrix's storage, for accounting.
func (d *dense) weights() []float32 {
	if d.panels != nil {
		return d.panels
	}
	return d.t
}

// apply computes dst (m × n) from a (m × k) with the epilogue epi; tmp
// (m × n) is scratch for epiAdd on the portable path.
func (d *dense) apply(dst, a []float32, m, epi int, tmp []float32) {
	if d.panels != nil {
		d.gemmPacked(dst, a, m, epi)
		return
	}
	out := dst
	if epi == epiAdd {
		out = tmp[:m*d.n]
	}
	bert.MatMulT(out, a, d.t, m, d.n, d.k, d.bias)
	switch epi {
	case epiReLU:
		bert.ParallelRows(m, func(r0, r1 int) {
			for i := r0 * d.n; i < r1*d.n; i++ {
				dst[i] = max(dst[i], 0)
			}
		})
	case epiAdd:
		bert.ParallelRows(m, func(r0, r1 int) {
			for i := r0 * d.n; i < r1*d.n; i++ {
				dst[i] += out[i]
			}
		})
	}
}

// Tiles of the packed kernel's parallel loop: rows × panels.
const (
	gemmTileRows   = 64
	gemmTilePanels = 4
)

// gemmPacked is apply with the packed kernel, tiles spread over all cores.
// Every output is one fused multiply-add chain over k in index order,
// started from zero, whatever tile or row block computes it, so results
// do not depend on m, the tiling or the number of cores.
func (d *dense) gemmPacked(dst, a []float32, m, epi int) {
	k, n := d.k, d.n
	panels := n / d.kern.width
	rowTiles := (m + gemmTileRows - 1) / gemmTileRows
	panelTiles := (panels + gemmTilePanels - 1) / gemmTilePanels
	bert.Parallel(rowTiles*panelTiles, func(t int) {
		i0 := (t / panelTiles) * gemmTileRows
		p0 := (t % panelTiles) * gemmTilePanels
		d.kern.tile(dst[i0*n:], n, a[i0*k:], k, min(gemmTileRows, m-i0), k,
			d.panels, p0, min(p0+gemmTilePanels, panels), d.bias, epi)
	})
}

// tile computes rows × panels p0..p1 of dst = a · W + bias on the calling
// goroutine: a rows of k values lda apart, dst rows ldd apart, W in
// panels of k × width.
func (kn kernel) tile(dst []float32, ldd int, a []float32, lda, rows, k int, panels []float32, p0, p1 int, bias []float32, epi int) {
	pw := kn.width
	for jb := p0; jb < p1; jb++ {
		panel := panels[jb*pw*k : (jb+1)*pw*k]
		b := bias[jb*pw : (jb+1)*pw]
		j := jb * pw
		i := 0
		for ; i+4 <= rows; i += 4 {
			kn.k4(dst[i*ldd+j:], ldd, a[i*lda:], lda, panel, b, epi)
		}
		if i < rows {
			kn.tail(dst[i*ldd+j:], ldd, a[i*lda:], lda, rows-i, k, panel, b, epi)
		}
	}
}

// tailScratch holds the 4 input and output rows tail runs k4 on.
type tailScratch struct{ a, dst []float32 }

var tailPool sync.Pool

// tail computes the last rows (fewer than 4) of a tile: one row with k1,
// two or three by copying them into 4 zero-padded rows for k4, which
// costs less than a pass over the panel per row. Every output is the same
// multiply-add chain either way.
func (kn kernel) tail(dst []float32, ldd int, a []float32, lda, rows, k int, panel, bias []float32, epi int) {
	w := kn.width
	if rows == 1 {
		kn.k1(dst, a[:k], panel, bias, epi)
		return
	}
	sc, _ := tailPool.Get().(*tailScratch)
	if sc == nil {
		sc = new(tailScratch)
	}
	defer tailPool.Put(sc)
	sc.a, sc.dst = grow(sc.a, 4*k), grow(sc.dst, 4*w)
	clear(sc.a[rows*k:])
	for r := range rows {
		copy(sc.a[r*k:(r+1)*k], a[r*lda:r*lda+k])
		copy(sc.dst[r*w:(r+1)*w], dst[r*ldd:r*ldd+w])
	}
	kn.k4(sc.dst, w, sc.a, k, panel, bias, epi)
	for r := range rows {
		copy(dst[r*ldd:r*ldd+w], sc.dst[r*w:(r+1)*w])
	}
}
