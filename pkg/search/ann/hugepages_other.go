//go:build !linux

package ann

// adviseHuge does nothing where madvise's transparent huge pages are not
// (hugepages_linux.go).
func adviseHuge(b []int8) {}
