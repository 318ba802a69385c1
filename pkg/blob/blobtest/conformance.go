package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/blob"
)

const mib = 1 << 20

// Options tunes [Run] for an implementation.
type Options struct {
	// BigSize is the size of the largest in-memory payload that must round
	// trip exactly. It should span several of the store's internal chunks
	// (e.g. multipart parts). Default: 11 MiB + 7 bytes.
	BigSize int

	// StreamSize is how many bytes the streaming check puts through Put
	// while watching the heap. Default: 64 MiB.
	StreamSize int64

	// MaxHeapGrowth is how far the heap may grow above its post-GC baseline
	// while StreamSize bytes go through Put. Default: StreamSize / 4, which a
	// store that buffers the whole object cannot meet.
	MaxHeapGrowth uint64
}

func (o Options) withDefaults() Options {
	if o.BigSize == 0 {
		o.BigSize = 11*mib + 7
	}
	if o.StreamSize == 0 {
		o.StreamSize = 64 * mib
	}
	if o.MaxHeapGrowth == 0 {
		o.MaxHeapGrowth = uint64(o.StreamSize / 4)
	}
	return o
}

// Run checks that the stores newStore returns behave as [blob.Store]
// promises. newStore is called once per case and must return an empty store
// that it cleans up through t.
//
// The cases run one after another, not in parallel, because one of them
// measures the process's heap.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store, opts Options) {
	opts = opts.withDefaults()
	cases := []struct {
		name string
		run  func(t *testing.T, s blob.Store, opts Options)
	}{
		{name: "RoundTrip", run: testRoundTrip},
		{name: "RangeReads", run: testRangeReads},
		{name: "Stat", run: testStat},
		{name: "NotFound", run: testNotFound},
		{name: "DeleteIsIdempotent", run: testDelete},
		{name: "InvalidInputRejected", run: testInvalidInput},
		{name: "Overwrite", run: testOverwrite},
		{name: "SimilarKeysAreDistinct", run: testSimilarKeys},
		{name: "FailedPutLeavesNothing", run: testFailedPut},
		{name: "ConcurrentPuts", run: testConcurrentPuts},
		{name: "StreamingPutKeepsHeapFlat", run: testStreamingHeap},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, newStore(t), opts)
		})
	}
}

func testRoundTrip(t *testing.T, s blob.Store, opts Options) {
	tests := []struct {
		name    string
		key     string
		payload []byte
	}{
		{name: "empty", key: "empty", payload: []byte{}},
		{name: "one byte", key: "one", payload: []byte{0}},
		{name: "text in nested key", key: "a/b/c/hello.txt", payload: []byte("hello, documents\n")},
		{name: "binary with every byte value", key: "bin/all-bytes.bin", payload: allBytes()},
		{name: "random just over 1 MiB", key: "r/1m.bin", payload: randomBytes(1, mib+1)},
		{name: "random multi-MB", key: "r/big.bin", payload: randomBytes(2, opts.BigSize)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			n, err := s.Put(ctx, tt.key, bytes.NewReader(tt.payload))
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			if n != int64(len(tt.payload)) {
				t.Errorf("Put returned size %d, want %d", n, len(tt.payload))
			}
			got := readAll(t, s, tt.key, int64(len(tt.payload)))
			if !bytes.Equal(got, tt.payload) {
				t.Fatalf("read back %d bytes (sha256 %x), want %d bytes (sha256 %x)",
					len(got), sha256.Sum256(got), len(tt.payload), sha256.Sum256(tt.payload))
			}
		})
	}
}

func testRangeReads(t *testing.T, s blob.Store, _ Options) {
	const key = "ranges/doc.pdf"
	payload := randomBytes(3, 3*mib+17)
	size := int64(len(payload))
	put(t, s, key, payload)
	obj := open(t, s, key)

	readAtTests := []struct {
		name    string
		off     int64
		len     int
		wantN   int
		wantEOF bool // io.EOF required
		mayEOF  bool // io.EOF or nil allowed (io.ReaderAt: a full read ending at EOF)
	}{
		{name: "head", off: 0, len: 1024, wantN: 1024},
		{name: "middle", off: mib + 3, len: 4096, wantN: 4096},
		{name: "exact tail", off: size - 100, len: 100, wantN: 100, mayEOF: true},
		{name: "across the end", off: size - 10, len: 100, wantN: 10, wantEOF: true},
		{name: "at the end", off: size, len: 10, wantN: 0, wantEOF: true},
		{name: "past the end", off: size + 5, len: 10, wantN: 0, wantEOF: true},
	}
	for _, tt := range readAtTests {
		t.Run("ReadAt "+tt.name, func(t *testing.T) {
			buf := make([]byte, tt.len)
			n, err := obj.ReadAt(buf, tt.off)
			if n != tt.wantN {
				t.Fatalf("ReadAt(len %d, off %d) n = %d, want %d (err %v)", tt.len, tt.off, n, tt.wantN, err)
			}
			switch {
			case tt.wantEOF && err != io.EOF:
				t.Fatalf("ReadAt(len %d, off %d) err = %v, want io.EOF", tt.len, tt.off, err)
			case tt.mayEOF && err != nil && err != io.EOF:
				t.Fatalf("ReadAt(len %d, off %d) err = %v, want nil or io.EOF", tt.len, tt.off, err)
			case !tt.wantEOF && !tt.mayEOF && err != nil:
				t.Fatalf("ReadAt(len %d, off %d) err = %v, want nil", tt.len, tt.off, err)
			}
			if want := payload[min(tt.off, size):min(tt.off+int64(tt.len), size)]; !bytes.Equal(buf[:n], want) {
				t.Fatalf("ReadAt(len %d, off %d) returned the wrong bytes", tt.len, tt.off)
			}
		})
	}

	t.Run("ReadAt negative offset", func(t *testing.T) {
		if n, err := obj.ReadAt(make([]byte, 1), -1); err == nil {
			t.Fatalf("ReadAt(off -1) = %d, nil; want an error", n)
		}
	})

	seekTests := []struct {
		name    string
		off     int64
		whence  int
		wantPos int64
		readLen int
	}{
		{name: "start", off: 2 * mib, whence: io.SeekStart, wantPos: 2 * mib, readLen: 1000},
		{name: "current forward", off: 500, whence: io.SeekCurrent, wantPos: 2*mib + 1500, readLen: 1000},
		{name: "current backward", off: -2000, whence: io.SeekCurrent, wantPos: 2*mib + 500, readLen: 1000},
		{name: "end", off: -50, whence: io.SeekEnd, wantPos: size - 50, readLen: 50},
		{name: "size via end", off: 0, whence: io.SeekEnd, wantPos: size, readLen: 0},
		{name: "back to start", off: 0, whence: io.SeekStart, wantPos: 0, readLen: 4096},
	}
	for _, tt := range seekTests {
		t.Run("Seek "+tt.name, func(t *testing.T) {
			pos, err := obj.Seek(tt.off, tt.whence)
			if err != nil || pos != tt.wantPos {
				t.Fatalf("Seek(%d, %d) = %d, %v; want %d, nil", tt.off, tt.whence, pos, err, tt.wantPos)
			}
			buf := make([]byte, tt.readLen)
			if _, err := io.ReadFull(obj, buf); err != nil {
				t.Fatalf("ReadFull(%d) after Seek: %v", tt.readLen, err)
			}
			if !bytes.Equal(buf, payload[pos:pos+int64(tt.readLen)]) {
				t.Fatalf("Read after Seek(%d, %d) returned the wrong bytes", tt.off, tt.whence)
			}
		})
	}

	t.Run("Seek before start fails", func(t *testing.T) {
		if pos, err := obj.Seek(-1, io.SeekStart); err == nil {
			t.Fatalf("Seek(-1, SeekStart) = %d, nil; want an error", pos)
		}
	})

	t.Run("Seek past end then Read gives EOF", func(t *testing.T) {
		pos, err := obj.Seek(size+10, io.SeekStart)
		if err != nil || pos != size+10 {
			t.Fatalf("Seek(size+10) = %d, %v; want %d, nil", pos, err, size+10)
		}
		if n, err := obj.Read(make([]byte, 10)); n != 0 || err != io.EOF {
			t.Fatalf("Read past end = %d, %v; want 0, EOF", n, err)
		}
	})

	t.Run("ReadAt leaves the Read offset alone", func(t *testing.T) {
		if _, err := obj.Seek(100, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		first := make([]byte, 10)
		if _, err := io.ReadFull(obj, first); err != nil {
			t.Fatal(err)
		}
		if _, err := obj.ReadAt(make([]byte, 64), 2*mib); err != nil {
			t.Fatalf("ReadAt: %v", err)
		}
		next := make([]byte, 10)
		if _, err := io.ReadFull(obj, next); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, payload[100:110]) || !bytes.Equal(next, payload[110:120]) {
			t.Fatalf("Read after ReadAt did not continue at offset 110")
		}
	})

	t.Run("SectionReader over ReadAt", func(t *testing.T) {
		// What an HTTP Range handler does with the object.
		got, err := io.ReadAll(io.NewSectionReader(obj, 12345, 700000))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, payload[12345:12345+700000]) {
			t.Fatal("SectionReader returned the wrong bytes")
		}
	})

	if err := obj.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func testStat(t *testing.T, s blob.Store, _ Options) {
	tests := []struct {
		name string
		key  string
		size int
	}{
		{name: "empty object", key: "stat/empty", size: 0},
		{name: "small object", key: "stat/small.txt", size: 12},
		{name: "larger object", key: "stat/deeper/large.bin", size: 2*mib + 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			put(t, s, tt.key, randomBytes(4, tt.size))
			after := time.Now()
			info, err := s.Stat(t.Context(), tt.key)
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			if info.Key != tt.key || info.Size != int64(tt.size) {
				t.Errorf("Stat = {Key %q, Size %d}, want {Key %q, Size %d}", info.Key, info.Size, tt.key, tt.size)
			}
			// S3 reports whole seconds; allow for that and small clock skew.
			if info.ModTime.Before(before.Add(-time.Minute)) || info.ModTime.After(after.Add(time.Minute)) {
				t.Errorf("Stat ModTime = %v, want within a minute of [%v, %v]", info.ModTime, before, after)
			}
		})
	}
}

func testNotFound(t *testing.T, s blob.Store, _ Options) {
	ctx := t.Context()
	put(t, s, "nf/present", []byte("x"))
	ops := []struct {
		name string
		op   string
		call func(key string) error
	}{
		{name: "Open", op: "open", call: func(key string) error {
			obj, err := s.Open(ctx, key)
			if err == nil {
				obj.Close()
			}
			return err
		}},
		{name: "Stat", op: "stat", call: func(key string) error {
			_, err := s.Stat(ctx, key)
			return err
		}},
	}
	keys := []struct {
		name string
		key  string
	}{
		{name: "never stored", key: "nf/absent"},
		{name: "under a missing directory", key: "nf/no/such/dir/x"},
		{name: "under an object used as a directory", key: "nf/present/child"},
		{name: "a prefix of an object", key: "nf"},
	}
	for _, op := range ops {
		for _, k := range keys {
			t.Run(op.name+" "+k.name, func(t *testing.T) {
				err := op.call(k.key)
				if !blob.IsNotFound(err) {
					t.Fatalf("%s(%q) = %v, want ErrNotFound", op.name, k.key, err)
				}
				var be *blob.Error
				if !errors.As(err, &be) || be.Key != k.key || be.Op != op.op {
					t.Fatalf("%s(%q) error %#v is not a *blob.Error{Op: %q, Key: %q}", op.name, k.key, err, op.op, k.key)
				}
			})
		}
	}
}

func testDelete(t *testing.T, s blob.Store, _ Options) {
	ctx := t.Context()
	const key = "del/doc.txt"
	if err := s.Delete(ctx, "del/never-existed"); err != nil {
		t.Fatalf("Delete of a missing key = %v, want nil", err)
	}
	put(t, s, key, []byte("delete me"))
	put(t, s, "del/sibling.txt", []byte("keep me"))
	for i := range 2 {
		if err := s.Delete(ctx, key); err != nil {
			t.Fatalf("Delete #%d = %v, want nil", i+1, err)
		}
		if _, err := s.Stat(ctx, key); !blob.IsNotFound(err) {
			t.Fatalf("Stat after Delete #%d = %v, want ErrNotFound", i+1, err)
		}
	}
	if got := readAll(t, s, "del/sibling.txt", 7); string(got) != "keep me" {
		t.Fatalf("sibling reads %q after Delete, want %q", got, "keep me")
	}
	// A prefix of an existing key is not an object; deleting it must not
	// disturb the object below it.
	if err := s.Delete(ctx, "del"); err != nil {
		t.Fatalf("Delete of a key prefix = %v, want nil", err)
	}
	if got := readAll(t, s, "del/sibling.txt", 7); string(got) != "keep me" {
		t.Fatalf("sibling reads %q after deleting its prefix, want %q", got, "keep me")
	}
}

func testInvalidInput(t *testing.T, s blob.Store, _ Options) {
	ctx := t.Context()
	keys := []struct {
		name string
		key  string
	}{
		{name: "empty", key: ""},
		{name: "absolute", key: "/etc/passwd"},
		{name: "parent traversal", key: "../outside"},
		{name: "inner traversal", key: "a/../../outside"},
		{name: "backslash traversal", key: `..\outside`},
		{name: "dot segment", key: "a/./b"},
		{name: "reserved dot name", key: ".tmp/x"},
		{name: "double slash", key: "a//b"},
		{name: "trailing slash", key: "a/"},
		{name: "NUL", key: "a\x00"},
		{name: "space", key: "a b"},
		{name: "non-ASCII", key: "ä"},
		{name: "too long", key: strings.Repeat("k/", blob.MaxKeyLen/2) + "k"},
	}
	for _, k := range keys {
		t.Run(k.name, func(t *testing.T) {
			body := &untouchableReader{}
			if _, err := s.Put(ctx, k.key, body); !errors.Is(err, blob.ErrInvalidKey) {
				t.Errorf("Put(%q) = %v, want ErrInvalidKey", k.key, err)
			}
			if body.read {
				t.Errorf("Put(%q) read the body before rejecting the key", k.key)
			}
			if obj, err := s.Open(ctx, k.key); !errors.Is(err, blob.ErrInvalidKey) {
				if err == nil {
					obj.Close()
				}
				t.Errorf("Open(%q) = %v, want ErrInvalidKey", k.key, err)
			}
			if _, err := s.Stat(ctx, k.key); !errors.Is(err, blob.ErrInvalidKey) {
				t.Errorf("Stat(%q) = %v, want ErrInvalidKey", k.key, err)
			}
			if err := s.Delete(ctx, k.key); !errors.Is(err, blob.ErrInvalidKey) {
				t.Errorf("Delete(%q) = %v, want ErrInvalidKey", k.key, err)
			}
		})
	}
	t.Run("nil reader", func(t *testing.T) {
		if _, err := s.Put(ctx, "valid/key", nil); !errors.Is(err, blob.ErrNilReader) {
			t.Fatalf("Put(nil reader) = %v, want ErrNilReader", err)
		}
		if _, err := s.Stat(ctx, "valid/key"); !blob.IsNotFound(err) {
			t.Fatalf("Stat after Put(nil reader) = %v, want ErrNotFound", err)
		}
	})
}

func testOverwrite(t *testing.T, s blob.Store, _ Options) {
	tests := []struct {
		name   string
		first  []byte
		second []byte
	}{
		{name: "with shorter", first: randomBytes(5, 2*mib), second: []byte("short")},
		{name: "with longer", first: []byte("short"), second: randomBytes(6, 2*mib)},
		{name: "with empty", first: []byte("something"), second: []byte{}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("over/%d", i)
			put(t, s, key, tt.first)
			put(t, s, key, tt.second)
			if got := readAll(t, s, key, int64(len(tt.second))); !bytes.Equal(got, tt.second) {
				t.Fatalf("after overwrite read %d bytes, want the %d bytes of the second Put", len(got), len(tt.second))
			}
		})
	}
}

func testSimilarKeys(t *testing.T, s blob.Store, _ Options) {
	keys := []string{"sim/x.pdf", "sim/x.pdf.bak", "sim/X.pdf", "sim/x-pdf", "sim2/x.pdf"}
	for i, k := range keys {
		put(t, s, k, []byte(k+fmt.Sprint(i)))
	}
	for i, k := range keys {
		want := k + fmt.Sprint(i)
		if got := readAll(t, s, k, int64(len(want))); string(got) != want {
			t.Errorf("%q reads %q, want %q", k, got, want)
		}
	}
}

func testFailedPut(t *testing.T, s blob.Store, opts Options) {
	errBoom := errors.New("boom: client went away")
	tests := []struct {
		name string
		// body returns the reader to Put and a cancel func that the reader may
		// call (nil: ctx is never cancelled).
		body     func(cancel context.CancelFunc) io.Reader
		cancels  bool
		previous []byte // stored under the key first; nil: nothing
		wantErr  error
	}{
		{
			name:    "context cancelled before Put",
			body:    func(cancel context.CancelFunc) io.Reader { cancel(); return bytes.NewReader([]byte("data")) },
			cancels: true, wantErr: context.Canceled,
		},
		{
			name: "context cancelled early in the body",
			body: func(cancel context.CancelFunc) io.Reader {
				return &hookReader{r: newGenReader(8, int64(opts.BigSize)), after: 64 << 10, hook: cancel}
			},
			cancels: true, wantErr: context.Canceled,
		},
		{
			name: "context cancelled late in the body",
			body: func(cancel context.CancelFunc) io.Reader {
				return &hookReader{r: newGenReader(9, int64(opts.BigSize)), after: int64(opts.BigSize) - mib, hook: cancel}
			},
			cancels: true, wantErr: context.Canceled,
		},
		{
			name:    "reader fails early",
			body:    func(context.CancelFunc) io.Reader { return failReader(100, errBoom) },
			wantErr: errBoom,
		},
		{
			name:    "reader fails after several MB",
			body:    func(context.CancelFunc) io.Reader { return failReader(int64(opts.BigSize)-mib, errBoom) },
			wantErr: errBoom,
		},
		{
			name: "cancelled overwrite keeps the previous object",
			body: func(cancel context.CancelFunc) io.Reader {
				return &hookReader{r: newGenReader(10, int64(opts.BigSize)), after: 3 * mib, hook: cancel}
			},
			cancels: true, previous: []byte("the previous version"), wantErr: context.Canceled,
		},
		{
			name:     "failed overwrite keeps the previous object",
			body:     func(context.CancelFunc) io.Reader { return failReader(2*mib, errBoom) },
			previous: randomBytes(11, mib), wantErr: errBoom,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("failed/%d.bin", i)
			if tt.previous != nil {
				put(t, s, key, tt.previous)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			n, err := s.Put(ctx, key, tt.body(cancel))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Put = %d, %v; want an error matching %v", n, err, tt.wantErr)
			}
			var be *blob.Error
			if !errors.As(err, &be) || be.Op != "put" || be.Key != key {
				t.Errorf("Put error %v is not a *blob.Error{Op: put, Key: %q}", err, key)
			}
			if tt.previous == nil {
				if info, err := s.Stat(t.Context(), key); !blob.IsNotFound(err) {
					t.Fatalf("after the failed Put, Stat = %+v, %v; want ErrNotFound", info, err)
				}
				return
			}
			if got := readAll(t, s, key, int64(len(tt.previous))); !bytes.Equal(got, tt.previous) {
				t.Fatalf("after the failed overwrite the object has %d bytes, want the previous %d", len(got), len(tt.previous))
			}
		})
	}
}

func testConcurrentPuts(t *testing.T, s blob.Store, _ Options) {
	ctx := t.Context()
	const workers = 8
	payloads := make([][]byte, workers)
	for i := range payloads {
		payloads[i] = randomBytes(uint64(100+i), 512<<10+i*1000)
	}

	t.Run("different keys", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for i := range workers {
			wg.Go(func() {
				_, errs[i] = s.Put(ctx, fmt.Sprintf("conc/k%d/obj", i), bytes.NewReader(payloads[i]))
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Put #%d: %v", i, err)
			}
		}
		for i := range workers {
			if got := readAll(t, s, fmt.Sprintf("conc/k%d/obj", i), int64(len(payloads[i]))); !bytes.Equal(got, payloads[i]) {
				t.Errorf("object %d does not hold its payload", i)
			}
		}
	})

	t.Run("same key ends whole", func(t *testing.T) {
		const key = "conc/same"
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for i := range workers {
			wg.Go(func() {
				_, errs[i] = s.Put(ctx, key, bytes.NewReader(payloads[i]))
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Put #%d: %v", i, err)
			}
		}
		obj := open(t, s, key)
		defer obj.Close()
		got, err := io.ReadAll(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range payloads {
			if bytes.Equal(got, p) {
				return
			}
		}
		t.Fatalf("after concurrent Puts the object (%d bytes) equals none of the payloads", len(got))
	})
}

func testStreamingHeap(t *testing.T, s blob.Store, opts Options) {
	ctx := t.Context()
	const key = "stream/large.bin"
	h := sha256.New()
	body := io.TeeReader(newGenReader(12, opts.StreamSize), h)

	w := watchHeap()
	n, err := s.Put(ctx, key, body)
	base, peak := w.Stop()
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if n != opts.StreamSize {
		t.Fatalf("Put returned size %d, want %d", n, opts.StreamSize)
	}
	growth := peak.objects - base.objects
	t.Logf("Put of %d MiB: heap objects baseline %.1f MiB, peak %.1f MiB (growth %.1f MiB, limit %.1f MiB)",
		opts.StreamSize/mib, float64(base.objects)/mib, float64(peak.objects)/mib, float64(growth)/mib, float64(opts.MaxHeapGrowth)/mib)
	if growth > opts.MaxHeapGrowth {
		t.Errorf("heap grew by %.1f MiB during a %d MiB Put, more than the %.1f MiB allowed: Put is buffering",
			float64(growth)/mib, opts.StreamSize/mib, float64(opts.MaxHeapGrowth)/mib)
	}

	obj := open(t, s, key)
	defer obj.Close()
	if obj.Size() != opts.StreamSize {
		t.Fatalf("Size = %d, want %d", obj.Size(), opts.StreamSize)
	}
	sum, read, err := sha256Of(obj)
	if err != nil {
		t.Fatalf("reading back: %v", err)
	}
	if want := h.Sum(nil); read != opts.StreamSize || !bytes.Equal(sum[:], want) {
		t.Fatalf("read back %d bytes with sha256 %x, want %d bytes with sha256 %x", read, sum, opts.StreamSize, want)
	}
}

// put stores payload under key or fails the test.
func put(t *testing.T, s blob.Store, key string, payload []byte) {
	t.Helper()
	n, err := s.Put(t.Context(), key, bytes.NewReader(payload))
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	if n != int64(len(payload)) {
		t.Fatalf("Put(%q) = %d, want %d", key, n, len(payload))
	}
}

// open opens key or fails the test. The caller closes the object.
func open(t *testing.T, s blob.Store, key string) blob.Object {
	t.Helper()
	obj, err := s.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	return obj
}

// readAll opens key, checks that Open and Stat agree on wantSize, and
// returns the content read sequentially.
func readAll(t *testing.T, s blob.Store, key string, wantSize int64) []byte {
	t.Helper()
	info, err := s.Stat(t.Context(), key)
	if err != nil {
		t.Fatalf("Stat(%q): %v", key, err)
	}
	if info.Size != wantSize {
		t.Errorf("Stat(%q).Size = %d, want %d", key, info.Size, wantSize)
	}
	obj := open(t, s, key)
	defer obj.Close()
	if obj.Size() != wantSize {
		t.Errorf("Open(%q).Size() = %d, want %d", key, obj.Size(), wantSize)
	}
	got, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("reading %q: %v", key, err)
	}
	return got
}

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}
