package documentsvc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/docrepo/docrepo/pkg/apierr"
)

// chunks serves b in pieces of the given sizes (cycled), then io.EOF.
func chunks(b []byte, sizes ...int) chunkSource {
	i := 0
	return func() ([]byte, error) {
		if len(b) == 0 {
			return nil, io.EOF
		}
		n := min(sizes[i%len(sizes)], len(b))
		i++
		c := b[:n]
		b = b[n:]
		return c, nil
	}
}

func TestFileReader(t *testing.T) {
	data := make([]byte, 1<<20+17)
	for i := range data {
		data[i] = byte(i * 7)
	}
	sum := sha256.Sum256(data)
	tests := []struct {
		name    string
		sizes   []int
		max     int64
		tooBig  bool
		readBuf int
	}{
		{name: "one chunk", sizes: []int{len(data)}, readBuf: 32 << 10},
		{name: "small uneven chunks", sizes: []int{1, 100, 4096, 3}, readBuf: 1000},
		{name: "empty chunks in between", sizes: []int{0, 65536}, readBuf: 256 << 10},
		{name: "exactly at the limit", sizes: []int{65536}, max: int64(len(data)), readBuf: 4096},
		{name: "one byte over the limit", sizes: []int{65536}, max: int64(len(data)) - 1, tooBig: true, readBuf: 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFileReader(chunks(data, tt.sizes...), tt.max)
			var out bytes.Buffer
			_, err := io.CopyBuffer(&out, struct{ io.Reader }{r}, make([]byte, tt.readBuf))
			if tt.tooBig {
				if !apierr.IsKind(err, apierr.KindTooLarge) || !apierr.IsKind(r.err, apierr.KindTooLarge) {
					t.Fatalf("err = %v, want 413", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), data) || r.n != int64(len(data)) {
				t.Fatalf("read %d bytes, counted %d, want %d", out.Len(), r.n, len(data))
			}
			if got := hex.EncodeToString(r.hash.Sum(nil)); got != hex.EncodeToString(sum[:]) {
				t.Fatalf("hash %s", got)
			}
			if !bytes.Equal(r.head, data[:sniffLen]) {
				t.Fatalf("head is not the first %d bytes", sniffLen)
			}
		})
	}
	// A failing stream fails the reader and keeps the cause.
	boom := errors.New("stream broke")
	calls := 0
	r := newFileReader(func() ([]byte, error) {
		calls++
		if calls > 2 {
			return nil, boom
		}
		return []byte("abc"), nil
	}, 0)
	if _, err := io.ReadAll(r); !errors.Is(err, boom) || !errors.Is(r.err, boom) {
		t.Fatalf("err = %v", err)
	}
}

func TestBlockCache(t *testing.T) {
	data := make([]byte, 300_001)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	src := &countingReaderAt{r: bytes.NewReader(data)}
	c := newBlockCache(src, 4096, 8)
	for range 2000 {
		off := rng.Int64N(int64(len(data)) + 100)
		n := rng.IntN(10_000)
		got := make([]byte, n)
		k, err := c.ReadAt(got, off)
		wantN := max(0, min(n, len(data)-int(min(off, int64(len(data))))))
		if k != wantN {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, want %d (err %v)", n, off, k, wantN, err)
		}
		if k < n && !errors.Is(err, io.EOF) {
			t.Fatalf("short read without io.EOF: %v", err)
		}
		if k == n && err != nil {
			t.Fatalf("full read with error %v", err)
		}
		if !bytes.Equal(got[:k], data[off:off+int64(k)]) {
			t.Fatalf("ReadAt(%d bytes at %d) returned other bytes", n, off)
		}
		if len(c.blocks) > 8 || len(c.order) != len(c.blocks) {
			t.Fatalf("cache holds %d blocks (%d in order)", len(c.blocks), len(c.order))
		}
	}
	// Repeated small reads in one block cost one read of the source.
	c = newBlockCache(src, 4096, 8)
	src.calls = 0
	for i := range 100 {
		if _, err := c.ReadAt(make([]byte, 10), int64(8192+i*10)); err != nil {
			t.Fatal(err)
		}
	}
	if src.calls != 1 {
		t.Fatalf("%d source reads for one block", src.calls)
	}
	if _, err := c.ReadAt(make([]byte, 1), -1); err == nil {
		t.Fatal("negative offset accepted")
	}
}

type countingReaderAt struct {
	r     io.ReaderAt
	calls int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.calls++
	return c.r.ReadAt(p, off)
}
