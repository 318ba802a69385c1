package diskstore_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/docrepo/docrepo/pkg/blob/blobtest"
	"github.com/docrepo/docrepo/pkg/blob/diskstore"
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

// BenchmarkPutSmall stores 1 KB objects spread over 256 directories, as
// the document service stores small uploads (files/xx/uuid.ext): per Put,
// the directory handling, the temporary file, two fsyncs and the rename.
func BenchmarkPutSmall(b *testing.B) {
	s, err := diskstore.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := bytes.Repeat([]byte("x"), 1024)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		key := fmt.Sprintf("files/%02x/%08d.txt", i%256, i)
		if _, err := s.Put(ctx, key, bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
	}
}
