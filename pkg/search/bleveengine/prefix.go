package bleveengine

import (
	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

// segPrefix enables reading a lone prefix's matches segment by segment
// (eachPrefixMatch); the tests and BenchmarkTextCost turn it off to
// compare it with the bleve searcher it replaces there.
var segPrefix = true

// lonePrefix reports whether q is a prefix alone (pre*, not a phrase
// ending in one), whose matches eachPrefixMatch can read.
func lonePrefix(q *qnode) bool {
	return segPrefix && q != nil && q.kind == qPrefix && len(q.terms) == 0
}

// eachPrefixMatch calls fn with the table slot (ok false: not in the table
// yet, as resolver.slot) of every document holding a word that starts
// with q's prefix (the words expand gives, so the same words and the same
// refusals as the bleve searcher), segment by segment of snap: the union of
// the words' document bitmaps, each document once, deleted ones excluded.
// Every match scores 1, as the bleve searcher's (constScoreSearcher).
//
// A three-letter prefix at 1 M documents expands to a few dozen words and
// matches hundreds of thousands of documents (issue 23: prefix is the
// probe's costliest text mode through the stack). The bleve searcher ORs
// the same bitmaps, but then hands out each match as a DocumentMatch that
// the resolver maps back to its segment (a binary search per match); here
// the matches come as local document numbers of a known segment, read
// from the union in blocks and mapped by res (resolver.slotIn), which
// must be the resolver of snap.
func (b *searcherBuilder) eachPrefixMatch(q *qnode, snap *scorch.IndexSnapshot, res *resolver, fn func(slot int32, ok bool) error) error {
	terms, err := b.expand(q.field, q.prefix)
	if err != nil || len(terms) == 0 {
		return err
	}
	var (
		bms []*roaring.Bitmap
		buf = make([]uint32, 512)
	)
	for si, ss := range snap.Segments() {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		d, err := ss.Segment().Dictionary(q.field)
		if err != nil {
			return err
		}
		bms = bms[:0]
		for _, t := range terms {
			bm, err := docsOf(d, t, ss.Deleted())
			if err != nil {
				return err
			}
			if bm != nil && !bm.IsEmpty() {
				bms = append(bms, bm)
			}
		}
		if len(bms) == 0 {
			continue
		}
		// FastOr of one bitmap returns a new one as well: the postings'
		// own bitmaps are never changed.
		it := roaring.FastOr(bms...).ManyIterator()
		for n := 0; ; n++ {
			k := it.NextMany(buf)
			if k == 0 {
				break
			}
			if n%16 == 0 {
				if err := b.ctx.Err(); err != nil {
					return err
				}
			}
			for _, local := range buf[:k] {
				slot, ok, err := res.slotIn(si, uint64(local))
				if err != nil {
					return err
				}
				if err := fn(slot, ok); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
