package ann

import (
	"errors"
	"slices"
	"testing"
)

// TestBlockRecordsReloadTheSameCodes: a store rebuilt from the records of
// its full blocks (then the rest appended) holds the same codes, scales
// and norms bit for bit, and scans give the same results; a record that
// is damaged, short or of another layout is refused and leaves the store
// as it was; a block is appended only after whole blocks.
func TestBlockRecordsReloadTheSameCodes(t *testing.T) {
	docs, queries := hashCorpus(t, 3*codeLanes+300, 8, 768, false)
	want := NewCodes(768)
	for _, v := range docs {
		want.Append(v)
	}
	// An erased vector's zeros travel too.
	want.Clear(5)
	if got := want.FullBlocks(); got != 3 {
		t.Fatalf("FullBlocks = %d, want 3", got)
	}
	var recs [][]byte
	for bi := range want.FullBlocks() {
		rec := want.AppendBlockRecord(nil, bi)
		if len(rec) != BlockRecordSize(768, codeLanes) {
			t.Fatalf("record of %d bytes, want %d", len(rec), BlockRecordSize(768, codeLanes))
		}
		recs = append(recs, rec)
	}
	got := NewCodes(768)
	for _, rec := range recs {
		if err := got.AppendBlock(slices.Clone(rec)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 3 * codeLanes; i < len(docs); i++ {
		got.Append(docs[i])
	}
	if !got.Equal(want) {
		t.Fatal("the reloaded store differs from the built one")
	}
	for _, q := range queries {
		pq := NewQuery(q)
		if a, b := got.Scan(pq, 20, nil, nil), want.Scan(pq, 20, nil, nil); !slices.Equal(a, b) {
			t.Fatalf("scans differ:\n%v\n%v", a, b)
		}
	}

	damaged := func(f func([]byte) []byte) []byte { return f(slices.Clone(recs[1])) }
	for _, tt := range []struct {
		name  string
		held  int // vectors the store holds first
		rec   []byte
		dim   int
		fails bool
	}{
		{name: "intact", rec: recs[0], dim: 768},
		{name: "a code byte flipped", rec: damaged(func(b []byte) []byte { b[100] ^= 1; return b }), dim: 768, fails: true},
		{name: "a scale flipped", rec: damaged(func(b []byte) []byte { b[768*codeLanes+3] ^= 0x80; return b }), dim: 768, fails: true},
		{name: "the checksum flipped", rec: damaged(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), dim: 768, fails: true},
		{name: "short", rec: recs[1][:len(recs[1])-1], dim: 768, fails: true},
		{name: "another dimension", rec: recs[0], dim: 512, fails: true},
		{name: "after a partial block", held: 10, rec: recs[0], dim: 768, fails: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCodes(tt.dim)
			for _, v := range docs[:tt.held] {
				c.Append(v)
			}
			err := c.AppendBlock(slices.Clone(tt.rec))
			if tt.fails != (err != nil) {
				t.Fatalf("AppendBlock: %v, want failure %v", err, tt.fails)
			}
			if want := tt.held + map[bool]int{false: codeLanes, true: 0}[tt.fails]; c.Len() != want {
				t.Fatalf("the store holds %d vectors, want %d", c.Len(), want)
			}
			if tt.fails && tt.held == 0 && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestRefreshRequantises: Refresh makes a vector's code that of the
// vector given, reporting a change only when there was one.
func TestRefreshRequantises(t *testing.T) {
	docs, _ := hashCorpus(t, 50, 0, 768, false)
	c := NewCodes(768)
	for _, v := range docs {
		c.Append(v)
	}
	want := NewCodes(768)
	for _, v := range docs {
		want.Append(v)
	}
	if c.Refresh(7, docs[7]) {
		t.Fatal("Refresh with the vector the code was made of reported a change")
	}
	if !c.Refresh(7, docs[8]) {
		t.Fatal("Refresh with another vector reported no change")
	}
	if c.Equal(want) {
		t.Fatal("the store did not change")
	}
	if !c.Refresh(7, docs[7]) || !c.Equal(want) {
		t.Fatal("Refresh back did not restore the code")
	}
	zero := make([]float32, 768)
	want.Clear(9)
	if !c.Refresh(9, zero) || !c.Equal(want) {
		t.Fatal("Refresh with zeros is not Clear")
	}
}
