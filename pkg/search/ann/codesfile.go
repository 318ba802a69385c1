package ann

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"unsafe"
)

// A block's record, as a store is persisted and loaded block by block
// (the caller keeps the records in a file and says which are current):
// the block's codes in the store's layout (ByDimension: dim columns of
// lanes bytes, the layout of a block that is its own allocation, in
// memory a superblock's blocks interleave their columns; ByVector: its
// tiles, as in memory; the caller keeps which), then the
// lanes' scales and squared norms (float32, little-endian), then a CRC-32
// (Castagnoli) of everything before it. Only full blocks have records: a
// block's codes change after it is full only by Clear (and Refresh), and
// its record is then written again.

// BlockRecordSize returns the length of a block's record for vectors of
// dim values in blocks of lanes vectors.
func BlockRecordSize(dim, lanes int) int { return dim*lanes + 8*lanes + 4 }

// Lanes returns the number of vectors of a block.
func (c *Codes) Lanes() int { return c.lanes }

// Dim returns the vectors' dimension.
func (c *Codes) Dim() int { return c.dim }

// FullBlocks returns the number of blocks that hold lanes vectors.
func (c *Codes) FullBlocks() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.scale) / c.lanes
}

// AppendBlockRecord appends the record of full block bi to dst.
func (c *Codes) AppendBlockRecord(dst []byte, bi int) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	L := c.lanes
	if bi < 0 || (bi+1)*L > len(c.scale) {
		panic(fmt.Sprintf("ann: block %d of %d vectors is not full", bi, len(c.scale)))
	}
	start := len(dst)
	b := c.blocks[bi]
	if c.layout == ByVector {
		dst = append(dst, unsafe.Slice((*byte)(unsafe.Pointer(&b.b[0])), c.dim*L)...)
	} else {
		for d := range c.dim {
			col := b.b[d*b.stride : d*b.stride+L]
			dst = append(dst, unsafe.Slice((*byte)(unsafe.Pointer(&col[0])), L)...)
		}
	}
	for _, v := range c.scale[bi*L : (bi+1)*L] {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	for _, v := range c.sqn[bi*L : (bi+1)*L] {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// CheckBlockRecord reports whether rec is a whole, intact block record
// for the store's dimension and width.
func (c *Codes) CheckBlockRecord(rec []byte) bool {
	if len(rec) != BlockRecordSize(c.dim, c.lanes) {
		return false
	}
	n := len(rec) - 4
	return crc32.Checksum(rec[:n], castagnoli) == binary.LittleEndian.Uint32(rec[n:])
}

// AppendBlock appends a block read from its record (which it checks) to
// a store holding whole blocks: the store then holds what appending the
// block's vectors would have made. The codes are copied into the store's
// superblock (rec may be reused).
func (c *Codes) AppendBlock(rec []byte) error { return c.AppendBlockFrom(rec, c.layout) }

// AppendBlockFrom is AppendBlock for a record written by a store laid out
// as from: its codes are rearranged into the store's layout (a codes file
// of another layout, such as one written before ByVector existed or in
// ByVector128's tiles, is converted as it is read instead of quantised
// again).
func (c *Codes) AppendBlockFrom(rec []byte, from Layout) error {
	if !c.CheckBlockRecord(rec) {
		return fmt.Errorf("%w: block record", ErrCorrupt)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	L := c.lanes
	if len(c.scale)%L != 0 {
		return fmt.Errorf("ann: a block appended after %d vectors, not whole blocks", len(c.scale))
	}
	codes := unsafe.Slice((*int8)(unsafe.Pointer(&rec[0])), c.dim*L)
	b := c.newBlock()
	switch {
	case from == c.layout && from == ByVector:
		copy(b.b[:c.dim*L], codes)
	case from == c.layout:
		for d := range c.dim {
			copy(b.b[d*b.stride:d*b.stride+L], codes[d*L:(d+1)*L])
		}
	default:
		// The other layout's record (or ByVector128's tiles),
		// component by component.
		rb := codeBlock{b: codes, stride: L}
		if t := from.tile(); t > 0 {
			rb = codeBlock{b: codes, dim: c.dim, lanes: L, tile: t}
		}
		for l := range L {
			for d := range c.dim {
				b.b[b.at(d, l)] = rb.b[rb.at(d, l)]
			}
		}
	}
	off := len(codes)
	for l := range L {
		c.scale = append(c.scale, math.Float32frombits(binary.LittleEndian.Uint32(rec[off+4*l:])))
	}
	off += 4 * L
	for l := range L {
		c.sqn = append(c.sqn, math.Float32frombits(binary.LittleEndian.Uint32(rec[off+4*l:])))
	}
	c.blocks = append(c.blocks, b)
	return nil
}

// Refresh makes vector id's code that of v (quantised as Append does)
// and reports whether it was another: a store loaded from records is
// brought back to its vectors where they may have changed since (erased).
func (c *Codes) Refresh(id int32, v []float32) bool {
	code, scale, sqn := quantize(make([]int8, 0, c.dim), v)
	c.mu.Lock()
	defer c.mu.Unlock()
	if id < 0 || int(id) >= len(c.scale) {
		return false
	}
	b, lane := c.blocks[int(id)/c.lanes], int(id)%c.lanes
	same := math.Float32bits(c.scale[id]) == math.Float32bits(scale) && math.Float32bits(c.sqn[id]) == math.Float32bits(sqn)
	for i, x := range code {
		if o := b.at(i, lane); b.b[o] != x {
			same = false
			b.b[o] = x
		}
	}
	c.scale[id], c.sqn[id] = scale, sqn
	return !same
}

// Equal reports whether two stores hold the same codes, scales and norms
// bit for bit, in blocks of the same width (tests), in either layout.
func (c *Codes) Equal(o *Codes) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o.mu.RLock()
	defer o.mu.RUnlock()
	if c.dim != o.dim || c.lanes != o.lanes || len(c.scale) != len(o.scale) || len(c.blocks) != len(o.blocks) {
		return false
	}
	for i := range c.scale {
		if math.Float32bits(c.scale[i]) != math.Float32bits(o.scale[i]) || math.Float32bits(c.sqn[i]) != math.Float32bits(o.sqn[i]) {
			return false
		}
	}
	n := len(c.scale)
	for bi := range c.blocks {
		// Lanes past the last vector are zero in both unless written
		// by another path; compare the used ones.
		for d := range c.dim {
			for l := range min(c.lanes, n-bi*c.lanes) {
				cb, ob := c.blocks[bi], o.blocks[bi]
				if cb.b[cb.at(d, l)] != ob.b[ob.at(d, l)] {
					return false
				}
			}
		}
	}
	return true
}
