package ann

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// The graph's file format (little-endian): the magic "DRANN1\n\x00", then
// dim, m, efConstruction, n, entry, top as uint32 (entry as int32) — or,
// for a graph of shards, the magic "DRANN2\n\x00", the same six and the
// shard size (the shards' entry points are found again from the levels:
// a shard's is its first node of its highest level) — then the
// squared norms of the vectors (float32), levels (uint8),
// layer-0 links (n·2m int32), the upper links of each node of level > 0
// (level·m int32, in node order), the deleted bits (uint64 per 64 nodes)
// and a CRC-32 (Castagnoli) of everything before it. A file that fails
// the check is refused (the caller rebuilds the graph).

var (
	magic        = []byte("DRANN1\n\x00")
	magicSharded = []byte("DRANN2\n\x00")
)

// ErrCorrupt is returned by ReadGraph for a file that is not a whole,
// intact graph.
var ErrCorrupt = errors.New("ann: corrupt graph file")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteTo writes the graph to w. It holds the read lock: searches go on,
// the writer waits.
func (g *Graph) WriteTo(w io.Writer) (int64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	cw := &countingWriter{w: w, crc: crc32.New(castagnoli)}
	bw := bufio.NewWriterSize(cw, 64<<10)
	n := len(g.level)
	var hdr []byte
	entry, top := g.entryOf(0)
	fields := []uint32{uint32(g.dim), uint32(g.m), uint32(g.efC), uint32(n), uint32(entry), uint32(top)}
	if g.shard == 0 {
		hdr = append(hdr, magic...)
	} else {
		hdr = append(hdr, magicSharded...)
		fields = append(fields, uint32(g.shard))
	}
	for _, v := range fields {
		hdr = binary.LittleEndian.AppendUint32(hdr, v)
	}
	bw.Write(hdr)
	buf := make([]byte, 0, 1<<16)
	flush := func() {
		bw.Write(buf)
		buf = buf[:0]
	}
	f32s := func(vs []float32) {
		for _, v := range vs {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			if len(buf) >= 1<<16-8 {
				flush()
			}
		}
		flush()
	}
	i32s := func(vs []int32) {
		for _, v := range vs {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(v))
			if len(buf) >= 1<<16-8 {
				flush()
			}
		}
		flush()
	}
	f32s(g.sqn)
	bw.Write(g.level)
	i32s(g.links0)
	for _, up := range g.upper {
		if up != nil {
			i32s(up)
		}
	}
	for _, d := range g.deleted[:(n+63)/64] {
		buf = binary.LittleEndian.AppendUint64(buf, d)
		if len(buf) >= 1<<16-8 {
			flush()
		}
	}
	flush()
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	sum := binary.LittleEndian.AppendUint32(nil, cw.crc.Sum32())
	_, err := w.Write(sum)
	return cw.n + 4, err
}

type countingWriter struct {
	w   io.Writer
	n   int64
	crc hashWriter
}

type hashWriter interface {
	io.Writer
	Sum32() uint32
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.crc.Write(p[:n])
	return n, err
}

// ReadGraph reads a graph written by WriteTo. cfg.Seed seeds the level
// draws of the nodes added later.
func ReadGraph(r io.Reader, vec func(id int32) []float32, cfg Config) (*Graph, error) {
	crc := crc32.New(castagnoli)
	raw := bufio.NewReaderSize(r, 64<<10)
	br := io.TeeReader(raw, crc) // the data; the checksum is read from raw
	hdr := make([]byte, len(magic)+24)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	sharded := string(hdr[:len(magic)]) == string(magicSharded)
	if !sharded && string(hdr[:len(magic)]) != string(magic) {
		return nil, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	if sharded {
		more := make([]byte, 4)
		if _, err := io.ReadFull(br, more); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		hdr = append(hdr, more...)
	}
	u := func(i int) uint32 { return binary.LittleEndian.Uint32(hdr[len(magic)+4*i:]) }
	dim, m, efC, n := int(u(0)), int(u(1)), int(u(2)), int(u(3))
	if dim <= 0 || dim > 1<<16 || m <= 0 || m > 256 || n > 1<<30 {
		return nil, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	cfg.M, cfg.EfConstruction, cfg.Shard = m, efC, Unsharded
	if sharded {
		if cfg.Shard = int(u(6)); cfg.Shard <= 0 || cfg.Shard > 1<<30 {
			return nil, fmt.Errorf("%w: bad shard size", ErrCorrupt)
		}
	}
	g := New(dim, vec, cfg)
	entry, top := int32(u(4)), int(u(5))
	if n == 0 && entry != -1 || n > 0 && (entry < 0 || int(entry) >= n) || top >= maxLevels {
		return nil, fmt.Errorf("%w: bad entry point", ErrCorrupt)
	}
	var err error
	read := func(k int) []byte {
		if err != nil {
			return nil
		}
		b := make([]byte, k)
		if _, e := io.ReadFull(br, b); e != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, e)
		}
		return b
	}
	f32s := func(k, c int) []float32 {
		b := read(4 * k)
		if err != nil {
			return nil
		}
		out := make([]float32, k, c)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return out
	}
	i32s := func(k, c int) []int32 {
		b := read(4 * k)
		if err != nil {
			return nil
		}
		out := make([]int32, k, c)
		for i := range out {
			out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return out
	}
	// The per-node slices get room for an eighth more nodes: with none,
	// the first Add after an open would copy each whole (links0 is 4·2·M
	// bytes a node, 256 MiB for 2 M nodes) within one write. The room is
	// address space until nodes are added (a fresh allocation's pages are
	// backed when first written).
	room := n + n/8 + 64
	g.sqn = f32s(n, room)
	g.level = append(make([]uint8, 0, room), read(n)...)
	g.links0 = i32s(n*g.m0, room*g.m0)
	if err != nil {
		return nil, err
	}
	g.upper = make([][]int32, n, room)
	for i, l := range g.level {
		if int(l) >= maxLevels {
			return nil, fmt.Errorf("%w: bad level", ErrCorrupt)
		}
		if l > 0 {
			g.upper[i] = i32s(int(l)*g.m, int(l)*g.m)
		}
	}
	bits := read(8 * ((n + 63) / 64))
	if err != nil {
		return nil, err
	}
	g.deleted = make([]uint64, (n+63)/64, (room+63)/64)
	for i := range g.deleted {
		g.deleted[i] = binary.LittleEndian.Uint64(bits[8*i:])
		for d := g.deleted[i]; d != 0; d &= d - 1 {
			g.nDeleted++
		}
	}
	want := crc.Sum32()
	sum := make([]byte, 4)
	if _, e := io.ReadFull(raw, sum); e != nil || binary.LittleEndian.Uint32(sum) != want {
		return nil, fmt.Errorf("%w: checksum", ErrCorrupt)
	}
	for id := range n {
		for l := 0; l <= int(g.level[id]); l++ {
			for _, x := range g.links(int32(id), l) {
				if x < -1 || int(x) >= n || x >= 0 && g.shardOf(x) != g.shardOf(int32(id)) {
					return nil, fmt.Errorf("%w: link out of range", ErrCorrupt)
				}
			}
		}
	}
	// Each shard's entry point: its first node of its highest level (as
	// apply chose it).
	for id := range n {
		g.noteEntry(int32(id), int(g.level[id]))
	}
	if e0, t0 := g.entryOf(0); n > 0 && (e0 != entry || t0 != top) {
		return nil, fmt.Errorf("%w: bad entry point", ErrCorrupt)
	}
	return g, nil
}
