package diskstore_test

import (
	"fmt"
	"testing"

	"github.com/docrepo/docrepo/pkg/blob/blobtest"
)

// BenchmarkPut writes 32 MiB and 256 MiB objects (fsync included) into a
// directory under $TMPDIR; point TMPDIR at the disk you want to measure.
func BenchmarkPut(b *testing.B) {
	for _, size := range []int64{32 << 20, 256 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			blobtest.BenchmarkPut(b, newStore(b, b.TempDir()), size)
		})
	}
}
