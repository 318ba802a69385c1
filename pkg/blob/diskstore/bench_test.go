package diskstore_test

import (
	"testing"

	"github.com/docrepo/docrepo/pkg/blob/blobtest"
)

// BenchmarkPut writes 256 MiB per iteration (fsync included) into a
// directory under $TMPDIR; point TMPDIR at the disk you want to measure.
func BenchmarkPut(b *testing.B) {
	blobtest.BenchmarkPut(b, newStore(b, b.TempDir()), 256<<20)
}
