package ann

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestCodesAskForHugePages checks that a store's codes are backed by
// transparent huge pages where the kernel gives them on request (its
// default, "madvise"): a filtered scan's reads are scattered over the
// whole store, and with 4 KiB pages each is a TLB miss
// (BenchmarkCodesPrefetch). It runs in a fresh process, whose heap has
// not been touched by other tests (pages already faulted in stay small).
func TestCodesAskForHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("this kernel gives no transparent huge pages (%q, %v)", strings.TrimSpace(string(mode)), err)
	}
	if os.Getenv("DOCREPO_ANN_HUGE_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCodesAskForHugePages$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "DOCREPO_ANN_HUGE_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in a fresh process: %v\n%s", err, out)
		}
		t.Logf("in a fresh process:\n%s", out)
		return
	}
	// Vectors of 4,096 dimensions: a block of 1,024 of them is 4 MiB,
	// so each superblock holds whole 2 MiB pages.
	dim := 4096
	c := NewCodesLayout(dim, ByVector)
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(i%7) - 3
	}
	for range 4 * codeLanes {
		c.Append(v)
	}
	huge, total := 0, 0
	for _, b := range c.blocks {
		h, n := anonHugeOf(t, unsafe.Pointer(unsafe.SliceData(b.b)), len(b.b))
		huge, total = huge+h, total+n
	}
	t.Logf("%d of the codes' %d KiB in huge pages", huge>>10, total>>10)
	if huge == 0 {
		t.Fatal("no part of the codes is in huge pages")
	}
}

// anonHugeOf returns the bytes of anonymous huge pages and the size of
// the mappings (/proc/self/smaps) that hold [p, p+n).
func anonHugeOf(t *testing.T, p unsafe.Pointer, n int) (huge, size int) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	lo, hi := uint64(uintptr(p)), uint64(uintptr(p))+uint64(n)
	in := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 {
			continue
		}
		if a, b, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			start, err1 := strconv.ParseUint(a, 16, 64)
			end, err2 := strconv.ParseUint(b, 16, 64)
			in = err1 == nil && err2 == nil && start < hi && end > lo
			if in {
				size += int(end - start)
			}
			continue
		}
		if in && fields[0] == "AnonHugePages:" {
			kb, _ := strconv.Atoi(fields[1])
			huge += kb << 10
		}
	}
	return huge, size
}
