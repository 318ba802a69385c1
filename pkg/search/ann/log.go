package ann

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// The record of an Add (AddLogged, Replay): the kind (1), the node id
// (uvarint), its level (a byte), its squared norm (float32 bits), the
// number of layers it has links on, each as a count and the ids
// (uvarints), then the number of changed neighbour lists, each as the
// neighbour (uvarint), the layer and the new list's length (bytes): 0
// for the old list with the new node appended in its first free place,
// otherwise 1 + the length followed, per link, by its place in the old
// list or 255 for the new node (a byte each: the shrunk list is a choice
// among the old links and the new node). About 1 byte per link of a
// changed list and 3 per own link at a million nodes. No framing or
// checksum: the caller's log frames and checks records (a torn record is
// never handed to Replay).

const (
	recAdd  = 1
	newNode = 255
)

// appendAddition appends the record of a to b; the graph is still as
// before the Add (the places are those of the old lists).
func (g *Graph) appendAddition(b []byte, a *addition) []byte {
	b = append(b, recAdd)
	b = binary.AppendUvarint(b, uint64(a.id))
	b = append(b, byte(a.lvl))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(a.vn))
	b = binary.AppendUvarint(b, uint64(len(a.own)))
	for _, ls := range a.own {
		b = binary.AppendUvarint(b, uint64(len(ls)))
		for _, x := range ls {
			b = binary.AppendUvarint(b, uint64(x))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(a.changes)))
	for _, c := range a.changes {
		b = binary.AppendUvarint(b, uint64(c.node))
		b = append(b, byte(c.layer))
		if c.appended {
			b = append(b, 0)
			continue
		}
		b = append(b, byte(1+len(c.links)))
		old := g.links(c.node, c.layer)
		for _, x := range c.links {
			if x == a.id {
				b = append(b, newNode)
				continue
			}
			b = append(b, byte(slices.Index(old, x)))
		}
	}
	return b
}

// recReader decodes a record, remembering the first error.
type recReader struct {
	b   []byte
	err error
}

func (r *recReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: short record", ErrCorrupt)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = fmt.Errorf("%w: short record", ErrCorrupt)
		return 0
	}
	x := r.b[0]
	r.b = r.b[1:]
	return x
}

func (r *recReader) uint32() uint32 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 4 {
		r.err = fmt.Errorf("%w: short record", ErrCorrupt)
		return 0
	}
	x := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return x
}

// ids reads a list of at most max ids, each below n.
func (r *recReader) ids(max, n int) []int32 {
	k := r.uvarint()
	if r.err == nil && k > uint64(max) {
		r.err = fmt.Errorf("%w: %d links, more than %d", ErrCorrupt, k, max)
	}
	if r.err != nil {
		return nil
	}
	out := make([]int32, k)
	for i := range out {
		x := r.uvarint()
		if r.err == nil && x >= uint64(n) {
			r.err = fmt.Errorf("%w: link to %d of %d nodes", ErrCorrupt, x, n)
		}
		out[i] = int32(x)
	}
	return out
}

// Replay applies a record written by AddLogged to the graph, which must
// be in the state the record was written in (the next node id is the
// record's). A record that does not fit (another node id, links out of
// range, a full list to append to) returns ErrCorrupt and leaves the
// graph unchanged. Replay computes no distance, so it does not read the
// vectors; it is a writer method (not concurrent with Add).
func (g *Graph) Replay(rec []byte) error {
	r := &recReader{b: rec}
	if k := r.byte(); r.err == nil && k != recAdd {
		return fmt.Errorf("%w: record kind %d", ErrCorrupt, k)
	}
	n := len(g.level) // the new node's id
	a := addition{id: int32(r.uvarint()), lvl: int(r.byte())}
	a.vn = math.Float32frombits(r.uint32())
	layers := r.uvarint()
	if r.err != nil {
		return r.err
	}
	if int(a.id) != n || n >= math.MaxInt32 {
		return fmt.Errorf("%w: record of node %d, the graph has %d", ErrCorrupt, a.id, n)
	}
	want := 0
	sh := g.shardOf(a.id)
	if entry, top := g.entryOf(sh); entry >= 0 {
		want = min(a.lvl, top) + 1
	}
	if a.lvl >= maxLevels || layers != uint64(want) {
		return fmt.Errorf("%w: node %d of level %d with links on %d layers", ErrCorrupt, a.id, a.lvl, layers)
	}
	a.own = make([][]int32, layers)
	for l := range a.own {
		a.own[l] = r.ids(g.maxLinks(l), n)
		for _, x := range a.own[l] {
			if g.shardOf(x) != sh {
				return fmt.Errorf("%w: node %d linked to node %d of another shard", ErrCorrupt, a.id, x)
			}
		}
	}
	nc := r.uvarint()
	if r.err == nil && nc > uint64(want*g.m0) {
		return fmt.Errorf("%w: %d changed lists", ErrCorrupt, nc)
	}
	a.changes = make([]change, 0, nc)
	var places []int32 // the new lists, back to back
	for range nc {
		c := change{node: int32(r.uvarint()), layer: int(r.byte())}
		k := int(r.byte())
		if r.err != nil {
			return r.err
		}
		if int(c.node) >= n || c.node < 0 || g.shardOf(c.node) != sh || c.layer >= want || c.layer > int(g.level[c.node]) || k > 1+g.maxLinks(c.layer) {
			return fmt.Errorf("%w: change of node %d's layer %d", ErrCorrupt, c.node, c.layer)
		}
		old := g.links(c.node, c.layer)
		if k == 0 {
			c.appended = true
			if old[len(old)-1] >= 0 {
				return fmt.Errorf("%w: node %d's full list on layer %d appended to", ErrCorrupt, c.node, c.layer)
			}
			a.changes = append(a.changes, c)
			continue
		}
		from := len(places)
		for range k - 1 {
			p := r.byte()
			switch {
			case r.err != nil:
				return r.err
			case p == newNode:
				places = append(places, int32(n))
			case int(p) < len(old) && old[p] >= 0:
				places = append(places, old[p])
			default:
				return fmt.Errorf("%w: place %d of node %d's list on layer %d", ErrCorrupt, p, c.node, c.layer)
			}
		}
		c.links = places[from:len(places):len(places)]
		a.changes = append(a.changes, c)
	}
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %d bytes after the record", ErrCorrupt, len(r.b))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.apply(&a)
	return nil
}

// maxLinks is the number of link places on layer l.
func (g *Graph) maxLinks(l int) int {
	if l == 0 {
		return g.m0
	}
	return g.m
}
