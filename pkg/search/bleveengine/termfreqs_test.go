package bleveengine

import (
	"slices"
	"testing"
)

// TestFreqCursor reads decoded postings for increasing documents: a few
// steps, long jumps (the binary search), documents lacking the term and
// postings whose frequency or norm bits do not fit in 16 bits (the map).
func TestFreqCursor(t *testing.T) {
	p := &decodedPostings{over: map[uint32]uint64{}}
	want := map[uint32][2]uint64{}
	for d := uint32(0); d < 5000; d += 3 {
		f, bits := uint64(1+d%7), uint64(60+d%50)
		switch {
		case d%301 == 0:
			f = 40 // frequency 16 or more
		case d%401 == 0:
			bits = 5000 // norm bits 4,096 or more
		}
		p.docs = append(p.docs, d)
		want[d] = [2]uint64{f, bits}
		if f >= 16 || bits >= 1<<12 {
			p.fn = append(p.fn, 0)
			p.over[d] = f<<32 | bits
			continue
		}
		p.fn = append(p.fn, uint16(f<<12|bits))
	}
	tests := []struct {
		name string
		asks []uint32
	}{
		{name: "every document", asks: seq(0, 5000, 1)},
		{name: "every posting", asks: seq(0, 5000, 3)},
		{name: "long jumps", asks: seq(7, 5000, 997)},
		{name: "past the end", asks: []uint32{4998, 4999, 6000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := freqCursor{p: p}
			for _, d := range tt.asks {
				f, bits, ok := c.at(d)
				w, has := want[d]
				if ok != has || ok && (f != w[0] || bits != w[1]) {
					t.Fatalf("at(%d) = %d, %d, %v; want %d, %d, %v", d, f, bits, ok, w[0], w[1], has)
				}
			}
		})
	}
}

func seq(from, to, step uint32) []uint32 {
	var out []uint32
	for d := from; d < to; d += step {
		out = append(out, d)
	}
	return slices.Clip(out)
}
