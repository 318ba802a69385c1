//go:build goexperiment.simd && amd64

package ann

import (
	"testing"

	"simd/archsimd"
)

// The AVX2 kernels are tested on any CPU with AVX2 and FMA, called
// directly: on an AVX-512 CPU they are not the ones installed, and
// would otherwise go untested where the tests run (make test's
// GOEXPERIMENT=simd run). TestDotTilesKernelsAgree, TestByVectorScansAgree,
// TestBlockKernelsAgree and TestCodeWidthsAgree run them with the
// others, and the benchmarks that compare kernels (kernelConfigs) time
// them side by side with the AVX-512 ones.
func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		moreTilesKernels = append(moreTilesKernels, namedTiles{"avx2", dotTilesAVX2, dotTiles2AVX2})
		moreKernelSets = append(moreKernelSets, avx2Kernels)
		moreKernelConfigs = append(moreKernelConfigs, kernelConfig{"avx2", avx2Kernels, dotTilesAVX2, dotTiles2AVX2, dotAVX2})
	}
}

// TestAVX2Kernels: the AVX2 kernels are installed exactly on a CPU with
// AVX2 and FMA but not AVX-512 (GODEBUG=cpu.avx512f=off simulates one),
// walks are on the codes with them as with the AVX-512 ones, and dotAVX2 gives the portable dot product to float32 rounding at
// every length (on an AVX-512 CPU it is not installed either).
func TestAVX2Kernels(t *testing.T) {
	if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
		t.Skip("this CPU has no AVX2 and FMA: the AVX2 kernels are not tested")
	}
	t.Logf("AVX-512 %v: scan kernels %q, dot kernel %q, walk on codes %v", archsimd.X86.AVX512(), kernelName, dotName, walkOnCodes)
	if want := !archsimd.X86.AVX512(); (kernelName == "avx2") != want || (dotName == "avx2") != want {
		t.Errorf("AVX-512 %v, but the scan kernels are %q and the dot kernel %q", archsimd.X86.AVX512(), kernelName, dotName)
	}
	if !walkOnCodes {
		t.Error("with SIMD tiles kernels installed, walks are not on the codes")
	}
	wantDotAgrees(t, "dotAVX2", dotAVX2, 5)
}
