package bleveengine

import (
	"cmp"
	"math"
	"sync"
	"time"

	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// columnFilters enables deciding metadata filters and date sorts from the
// table's columns before (or instead of) reading records (the tests turn
// it off to compare with the record scan it replaces).
var columnFilters = true

// Indexes of metaColumns.times.
const (
	tDate = iota
	tEntryDate
	numTimes
)

// timeFields maps the dsl names of the date-time fields to their column.
var timeFields = map[string]int{"date": tDate, "entry_date": tEntryDate}

// noTime is the time column's value of a slot without the field (or of a
// deleted record); timeKey never returns it.
const noTime = math.MinInt64

// metaColumns are compact per-slot copies of the record fields that
// metadata filters and sorts read: each date-time field's Unix seconds and
// a one-byte fingerprint of each string field. A search with a filter on
// them (the perf probe's metadata mode: a document type and a three-month
// range, sorted by date) scans these columns, a few bytes a slot, and
// reads only the records that pass; a record is ~560 bytes, so the scan of
// every record it replaces read ~470 MB at 830 k documents (issue 23:
// p50 118 ms through the stack). The columns state necessary conditions
// only: whatever passes is evaluated on its record as before, so results
// do not change. 8 B per date-time field and 1 B per string field: 26 B a
// document. table.put keeps them.
type metaColumns struct {
	times [numTimes][]int64
	fps   [numStrings][]uint8
}

// timeKey is t's Unix seconds (the floor), never noTime: non-decreasing in
// t, so keys that differ order their times the same way and a comparison
// of times implies the non-strict one of their keys.
func timeKey(t time.Time) int64 {
	if s := t.Unix(); s != noTime {
		return s
	}
	return noTime + 1
}

// strFP is the fingerprint of a string field's value, 1-255 (0: absent).
func strFP(s string) uint8 {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	h ^= h >> 16
	return uint8(h%255) + 1
}

// set stores r's values as slot's (slot is at most the columns' length).
func (c *metaColumns) set(slot int32, r *record) {
	times := [numTimes]int64{noTime, noTime}
	var fps [numStrings]uint8
	if !r.deleted {
		if r.hasDate {
			times[tDate] = timeKey(r.date)
		}
		if r.hasEntryDate {
			times[tEntryDate] = timeKey(r.entryDate)
		}
		for i := range numStrings {
			if r.has(i) {
				fps[i] = strFP(r.str[i])
			}
		}
	}
	for i, v := range times {
		if int(slot) == len(c.times[i]) {
			c.times[i] = append(c.times[i], v)
		} else {
			c.times[i][slot] = v
		}
	}
	for i, v := range fps {
		if int(slot) == len(c.fps[i]) {
			c.fps[i] = append(c.fps[i], v)
		} else {
			c.fps[i][slot] = v
		}
	}
}

// colTest is one column test of a colFilter: a time column within [lo,
// hi], or a fingerprint column whose value is in the set fps.
type colTest struct {
	times  []int64
	lo, hi int64
	strs   []uint8
	fps    [4]uint64
}

func (t *colTest) ok(slot int32) bool {
	if t.times != nil {
		v := t.times[slot]
		return v >= t.lo && v <= t.hi
	}
	v := t.strs[slot]
	return t.fps[v>>6]&(1<<(v&63)) != 0
}

// colFilter is a necessary condition of a search's metadata filter
// conjuncts decided by the columns alone: every document matching the
// conjuncts passes it.
type colFilter struct {
	tests []colTest
}

// colFilter returns the column tests implied by the top-level filter
// conjuncts (nil when none is implied): a comparison (eq, gt, gte, lt,
// lte) of a date-time field bounds its key, the eq or in of a string field
// admits the fingerprints of its values. Other conjuncts (ne, nin, or,
// not, contains...) imply nothing here and are left to the records.
func (t *table) colFilter(filters []dsl.Clause) *colFilter {
	if !columnFilters || len(filters) == 0 {
		return nil
	}
	var f colFilter
	// The comparisons of one time field make one range.
	var lo, hi [numTimes]int64
	var bounded [numTimes]bool
	for _, c := range filters {
		switch c := c.(type) {
		case *dsl.Compare:
			if i, ok := timeFields[c.Field.Name]; ok && c.Field.Type == dsl.TypeDateTime {
				l, h, ok := timeBounds(c.Op, c.Value)
				if !ok {
					continue
				}
				if !bounded[i] {
					lo[i], hi[i], bounded[i] = l, h, true
				} else {
					lo[i], hi[i] = max(lo[i], l), min(hi[i], h)
				}
			}
			if i, ok := stringFields[c.Field.Name]; ok && c.Field.Type == dsl.TypeString && c.Op == dsl.OpEq {
				ct := colTest{strs: t.cols.fps[i]}
				ct.add(strFP(c.Value.Str))
				f.tests = append(f.tests, ct)
			}
		case *dsl.In:
			if i, ok := stringFields[c.Field.Name]; ok && c.Field.Type == dsl.TypeString && c.Op == dsl.OpIn {
				ct := colTest{strs: t.cols.fps[i]}
				for _, v := range c.Values {
					ct.add(strFP(v.Str))
				}
				f.tests = append(f.tests, ct)
			}
		}
	}
	// Ranges first: the date's is the narrowest test of the probe's mode.
	for i := numTimes - 1; i >= 0; i-- {
		if bounded[i] {
			f.tests = append([]colTest{{times: t.cols.times[i], lo: lo[i], hi: hi[i]}}, f.tests...)
		}
	}
	if len(f.tests) == 0 {
		return nil
	}
	return &f
}

func (t *colTest) add(fp uint8) { t.fps[fp>>6] |= 1 << (fp & 63) }

// timeBounds returns the key range [lo, hi] that a present time
// satisfying "t op v" has (ok false for an operator implying none).
func timeBounds(op dsl.Op, v dsl.Value) (lo, hi int64, ok bool) {
	lo, hi = noTime+1, math.MaxInt64
	switch op {
	case dsl.OpGt, dsl.OpGte:
		lo = timeKey(v.Time)
	case dsl.OpLt, dsl.OpLte:
		hi = timeKey(v.Time)
	case dsl.OpEq:
		if v.Day {
			lo, hi = timeKey(v.Time), timeKey(v.End)
		} else {
			lo, hi = timeKey(v.Time), timeKey(v.Time)
		}
	default:
		return 0, 0, false
	}
	return lo, hi, true
}

// candidateBufs recycles colFilter.slots' lists.
var candidateBufs sync.Pool

// slots returns the slots below n passing every test, ascending (nil when
// none does), and a function returning the list to the pool once it is no
// longer read. The first test runs over the whole column, the others over
// what passed.
func (f *colFilter) slots(n int) ([]int32, func()) {
	var out []int32
	if p, ok := candidateBufs.Get().(*[]int32); ok {
		out = (*p)[:0]
	}
	first := &f.tests[0]
	if first.times != nil {
		col, lo, hi := first.times[:n], first.lo, first.hi
		for i, v := range col {
			if v >= lo && v <= hi {
				out = append(out, int32(i))
			}
		}
	} else {
		col, fps := first.strs[:n], first.fps
		for i, v := range col {
			if fps[v>>6]&(1<<(v&63)) != 0 {
				out = append(out, int32(i))
			}
		}
	}
	for k := 1; k < len(f.tests) && len(out) > 0; k++ {
		t := &f.tests[k]
		kept := out[:0]
		for _, s := range out {
			if t.ok(s) {
				kept = append(kept, s)
			}
		}
		out = kept
	}
	release := func() {
		if cap(out) > 0 {
			candidateBufs.Put(&out)
		}
	}
	if len(out) == 0 {
		release()
		return nil, func() {}
	}
	return out, release
}

// ok reports whether slot passes every test.
func (f *colFilter) ok(slot int32) bool {
	for k := range f.tests {
		if !f.tests[k].ok(slot) {
			return false
		}
	}
	return true
}

// timeSort returns a comparison of two slots' values of the time field of
// column i by their keys: it decides (non-zero) when the keys differ, with
// documents lacking the field after those having it in both directions,
// and returns 0 when they are equal (the same second, or both absent),
// leaving those to the records.
func (c *metaColumns) timeSort(i int, desc bool) func(a, b match) int {
	col := c.times[i]
	return func(a, b match) int {
		ka, kb := col[a.slot], col[b.slot]
		if ka == kb {
			return 0
		}
		if ka == noTime || kb == noTime {
			return missingLast(kb == noTime)
		}
		if desc {
			return cmp.Compare(kb, ka)
		}
		return cmp.Compare(ka, kb)
	}
}
