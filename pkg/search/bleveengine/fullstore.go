package bleveengine

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// fullStore holds full-precision vectors of one dimension, numbered from
// 0 in the order they are appended: in memory (Options.InMemory) or in a
// file of float32 values in the machine's byte order, read through
// memory maps of fixed-size chunks (so the vectors a search re-ranks are
// page-cache reads, file-backed memory the kernel may drop, not heap).
// Appends come from one writer; reads of vectors already appended run
// concurrently with it.
type fullStore struct {
	dim    int
	f      *os.File // nil in memory
	chunks atomic.Pointer[[][]float32]
	n      atomic.Int64 // vectors appended
	inFile int64        // vectors the file holds (open: its length; the writer's)
}

// chunkVectors is the number of vectors of a chunk (a 768-dimension
// chunk maps 48 MiB).
const chunkVectors = 1 << 14

func newMemStore(dim int) *fullStore {
	s := &fullStore{dim: dim}
	s.chunks.Store(&[][]float32{})
	return s
}

// openFileStore opens the store in path with its first n vectors. A
// longer file is kept until cut: the vectors after them were written
// after the last checkpoint, and the log may name them (extend); cut
// drops the rest, which is written again.
func openFileStore(path string, dim int, n int64) (*fullStore, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Size() < n*int64(dim)*4 {
		f.Close()
		return nil, fmt.Errorf("%s holds %d bytes, fewer than %d vectors", path, st.Size(), n)
	}
	s := &fullStore{dim: dim, f: f, inFile: st.Size() / (int64(dim) * 4)}
	s.chunks.Store(&[][]float32{})
	if err := s.extend(n); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// extend makes the store's first n vectors (n at least its count) those
// of its file, which must hold them.
func (s *fullStore) extend(n int64) error {
	if n > s.inFile {
		return fmt.Errorf("the vector file holds %d vectors, fewer than %d", s.inFile, n)
	}
	for c := int64(len(*s.chunks.Load())); c*chunkVectors < n; c++ {
		if err := s.mapChunk(); err != nil {
			return err
		}
	}
	s.n.Store(n)
	return nil
}

// cut cuts the file after the store's vectors.
func (s *fullStore) cut() error {
	if s.f == nil {
		return nil
	}
	n := s.n.Load()
	if err := s.f.Truncate(n * int64(s.dim) * 4); err != nil {
		return err
	}
	s.inFile = n
	return nil
}

// mapChunk maps the next chunk of the file (beyond the file's end until
// written: only written vectors are read).
func (s *fullStore) mapChunk() error {
	old := *s.chunks.Load()
	size := chunkVectors * s.dim * 4
	b, err := syscall.Mmap(int(s.f.Fd()), int64(len(old))*int64(size), size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map vectors: %w", err)
	}
	chunk := unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), chunkVectors*s.dim)
	next := append(old[:len(old):len(old)], chunk)
	s.chunks.Store(&next)
	return nil
}

// release drops the file's pages from the process's mappings (not from
// the page cache): after a sequential read of every vector (start-up),
// which would otherwise count them all as the process's resident
// memory. Pages read again map back on demand. Nothing happens in
// memory.
func (s *fullStore) release() {
	if s.f == nil {
		return
	}
	for _, c := range *s.chunks.Load() {
		_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Pointer(&c[0])), len(c)*4), syscall.MADV_DONTNEED)
	}
}

// vector returns vector id (appended before).
func (s *fullStore) vector(id int32) []float32 {
	chunks := *s.chunks.Load()
	c, i := int(id)/chunkVectors, int(id)%chunkVectors
	return chunks[c][i*s.dim : (i+1)*s.dim]
}

// append stores v (of the store's dimension) and returns its number.
func (s *fullStore) append(v []float32) (int32, error) {
	id := s.n.Load()
	if id >= 1<<31-1 {
		return 0, fmt.Errorf("more than %d vectors", int32(1<<31-1))
	}
	chunks := *s.chunks.Load()
	if int(id/chunkVectors) >= len(chunks) {
		if s.f == nil {
			next := append(chunks[:len(chunks):len(chunks)], make([]float32, chunkVectors*s.dim))
			s.chunks.Store(&next)
		} else if err := s.mapChunk(); err != nil {
			return 0, err
		}
		chunks = *s.chunks.Load()
	}
	if s.f == nil {
		copy(s.vector(int32(id)), v)
	} else {
		b := unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
		if _, err := s.f.WriteAt(b, id*int64(s.dim)*4); err != nil {
			return 0, fmt.Errorf("write vectors: %w", err)
		}
	}
	s.n.Store(id + 1)
	s.inFile = max(s.inFile, id+1)
	return int32(id), nil
}

// clear overwrites n vectors from first (appended before) with zeros: in
// the file too, so nothing of them stays on disk. The caller excludes
// readers (it holds Engine.mu and vecMu).
func (s *fullStore) clear(first, n int32) error {
	if s.f == nil {
		for i := first; i < first+n; i++ {
			clear(s.vector(i))
		}
		return nil
	}
	if _, err := s.f.WriteAt(make([]byte, int(n)*s.dim*4), int64(first)*int64(s.dim)*4); err != nil {
		return fmt.Errorf("erase vectors: %w", err)
	}
	return nil
}

// sync makes the appended vectors durable.
func (s *fullStore) sync() error {
	if s.f == nil {
		return nil
	}
	return s.f.Sync()
}

// fileBytes returns the size of the store's file (0 in memory).
func (s *fullStore) fileBytes() int64 { return s.n.Load() * int64(s.dim) * 4 }

func (s *fullStore) close() error {
	if s.f == nil {
		return nil
	}
	for _, c := range *s.chunks.Load() {
		b := unsafe.Slice((*byte)(unsafe.Pointer(&c[0])), len(c)*4)
		_ = syscall.Munmap(b)
	}
	s.chunks.Store(&[][]float32{})
	return s.f.Close()
}
