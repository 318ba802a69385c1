package ann

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of an x86-64 (and arm64 4 KiB-granule)
// transparent huge page.
const hugePage = 2 << 20

// adviseHuge asks the kernel to back b's whole 2 MiB pages with
// transparent huge pages (madvise MADV_HUGEPAGE), which it does at their
// first touch under the kernels' default setting ("madvise"; with
// "always" it would anyway, with "never" it does not). A filtered scan
// reads a few lines of each eligible vector in each of a short query's
// five tiles, 128 KiB apart, over the whole store: with 4 KiB pages
// nearly every line is a TLB miss, and in a virtual machine a TLB miss
// is a two-level page walk (issue 23: a 10 % scan of 1 M vectors cost
// 36-37 ms of CPU with prefetching, 32 with huge pages;
// BenchmarkCodesPrefetch). Best effort: an error leaves the pages as
// they are.
func adviseHuge(b []int8) {
	if len(b) < hugePage || !hugeCodes {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	hi := (p + uintptr(len(b))) &^ (hugePage - 1)
	if hi <= lo {
		return
	}
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Pointer(&b[lo-p])), hi-lo), syscall.MADV_HUGEPAGE)
}
