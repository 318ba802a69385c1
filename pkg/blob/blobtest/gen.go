package blobtest

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// randomBytes returns n pseudo-random bytes determined by seed.
func randomBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	newRNG(seed).Read(b)
	return b
}

func newRNG(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return rand.NewChaCha8(s)
}

// genReader streams n pseudo-random bytes without holding them in memory.
type genReader struct {
	rng       *rand.ChaCha8
	remaining int64
}

func newGenReader(seed uint64, n int64) *genReader {
	return &genReader{rng: newRNG(seed), remaining: n}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.remaining <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.remaining {
		p = p[:g.remaining]
	}
	n, _ := g.rng.Read(p) // never fails
	g.remaining -= int64(n)
	return n, nil
}

// patternReader streams n bytes by repeating a 1 MiB random block: as
// incompressible for the store as genReader, but nearly free to produce, so
// benchmarks measure the store rather than the generator.
type patternReader struct {
	block     []byte
	off       int
	remaining int64
}

var patternBlock = sync.OnceValue(func() []byte { return randomBytes(42, 1<<20) })

func newPatternReader(n int64) *patternReader {
	return &patternReader{block: patternBlock(), remaining: n}
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.remaining <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.remaining {
		b = b[:p.remaining]
	}
	n := 0
	for n < len(b) {
		c := copy(b[n:], p.block[p.off:])
		n += c
		p.off = (p.off + c) % len(p.block)
	}
	p.remaining -= int64(n)
	return n, nil
}

// sha256Of hashes everything r yields.
func sha256Of(r io.Reader) ([sha256.Size]byte, int64, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum, n, err
}

// hookReader calls hook once, after at least after bytes have been read
// (after == 0: before the first Read returns).
type hookReader struct {
	r     io.Reader
	after int64
	read  int64
	hook  func()
	once  sync.Once
}

func (h *hookReader) Read(p []byte) (int, error) {
	if h.read >= h.after {
		h.once.Do(h.hook)
	}
	n, err := h.r.Read(p)
	h.read += int64(n)
	return n, err
}

// failReader yields n pseudo-random bytes and then fails with err.
func failReader(n int64, err error) io.Reader {
	return io.MultiReader(newGenReader(7, n), errReader{err})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// untouchableReader records any Read; validation must reject a bad key
// before consuming the body.
type untouchableReader struct{ read bool }

func (u *untouchableReader) Read([]byte) (int, error) {
	u.read = true
	return 0, errors.New("untouchableReader was read")
}

// heapSample is one reading of the heap size metrics.
type heapSample struct {
	objects uint64 // live and not yet swept objects
	inuse   uint64 // objects plus fragmentation within spans: MemStats.HeapInuse
	live    uint64 // heap marked live by the latest GC: what is really retained
}

var heapMetrics = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes", "/gc/heap/live:bytes"}

func readHeap(buf []metrics.Sample) heapSample {
	metrics.Read(buf)
	objects := buf[0].Value.Uint64()
	return heapSample{objects: objects, inuse: objects + buf[1].Value.Uint64(), live: buf[2].Value.Uint64()}
}

// heapWatch samples the heap every millisecond until stopped and keeps the
// peak. runtime/metrics does not stop the world, unlike ReadMemStats.
type heapWatch struct {
	base heapSample
	peak heapSample
	stop chan struct{}
	done chan struct{}
}

// watchHeap collects garbage, records the baseline and starts sampling.
func watchHeap() *heapWatch {
	runtime.GC()
	buf := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		buf[i].Name = name
	}
	w := &heapWatch{base: readHeap(buf), stop: make(chan struct{}), done: make(chan struct{})}
	w.peak = w.base
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		sample := func() {
			s := readHeap(buf)
			w.peak.objects = max(w.peak.objects, s.objects)
			w.peak.inuse = max(w.peak.inuse, s.inuse)
			w.peak.live = max(w.peak.live, s.live)
		}
		for {
			sample()
			select {
			case <-w.stop:
				sample()
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// Stop ends sampling after one last sample and returns the baseline and
// the peak.
func (w *heapWatch) Stop() (base, peak heapSample) {
	close(w.stop)
	<-w.done
	return w.base, w.peak
}
