package bleveengine

import (
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/docrepo/docrepo/pkg/search/ann"
)

// The vector clause's k nearest eligible documents (package
// documentation, Execution step 2), from the vector index (vectors.go):
//
//   - A dense query against a set with a graph, when the walk costs less
//     than a scan (walkPays), walks the graph with the eligibility
//     applied during the walk (ineligible nodes are passed through, not
//     returned), keeping each document's nearest passage, until
//     walkBreadth·k eligible documents are found.
//   - Otherwise (a sparse query, a set without a graph, a filter that
//     admits few documents, or too few vectors for a walk that wide) the
//     int8 codes are scanned exactly, in parallel parts.
//
// Either way the candidates are then re-ranked by their exact distance
// from the full-precision vectors (a document's distance is its nearest
// passage's), ties by id, and the k nearest kept.

const (
	// efSearch is the smallest breadth of a graph walk.
	efSearch = 128
	// maxWalkVisits bounds one graph walk: beyond it an exact scan of the
	// eligible documents is cheaper.
	maxWalkVisits = 200000
	// minParallelScan is the fewest vectors worth splitting a scan.
	minParallelScan = 1 << 15
	// eligibilitySample is the number of documents sampled to estimate
	// the share a filter admits.
	eligibilitySample = 512
)

// walkBreadth is a walk's breadth in documents per document wanted
// (at least efSearch): the results beyond k make the k nearest
// certain (re-ranking keeps k).
var walkBreadth = 4

// walkVisits counts the distances walks computed (tests).
var walkVisits atomic.Int64

// For tests: forceScan scans every query, forceWalk walks whenever
// there is a graph; legacyWalk walks as before documents were grouped in
// the walk, and legacyPays decides as before whether to walk.
var forceScan, forceWalk, legacyWalk, legacyPays bool

// nearest returns the k eligible documents nearest to q (content or
// metadata vectors).
func (run *searchRun) nearest(q []float32, k int, metadata bool, elig eligibility) ([]neighbour, error) {
	eligible := elig.ok
	set := run.e.vecs.sets[setKey{metadata: metadata, dim: len(q)}]
	if set == nil || k <= 0 || set.live == 0 {
		return nil, nil
	}
	recs := run.tab.recs
	owner := set.owner
	accept := func(vid int32) bool {
		if int(vid) >= len(owner) {
			return false
		}
		s := owner[vid]
		return s >= 0 && eligible(s, &recs[s])
	}
	es, err := run.eligibleSet()
	if err != nil {
		return nil, err
	}
	if es != nil {
		// The eligible documents are a set of slots: no record is read.
		accept = func(vid int32) bool {
			if int(vid) >= len(owner) {
				return false
			}
			s := owner[vid]
			return s >= 0 && es.has(int(s))
		}
	}
	pq := ann.NewQuery(q)
	var slots []docCand
	if set.graph != nil && !pq.Sparse() && !forceScan && (forceWalk || run.walkPays(set, k, eligible)) {
		slots = run.walk(set, pq, k, accept)
	}
	if slots == nil {
		vids, err := run.eligibleVectors(set, elig)
		if err != nil {
			return nil, err
		}
		if slots, err = run.scanCodes(set, pq, k, accept, vids); err != nil {
			return nil, err
		}
	}
	return run.rerank(set, q, slots, k, metadata), nil
}

// eligibleBySet enables eligibleSet and the folder filters' eligible
// vectors without records (eligibleVectors); the tests and BenchmarkLatency
// turn it off to compare with reading each candidate's record.
var eligibleBySet = true

// eligibleSet returns the slots of the eligible documents when eligibility
// is visibility alone and known as a set (eligibleSlots: every live
// document, or those of the caller's statistics view), so that a vector
// scan's candidates are accepted by a bit instead of their records: an
// unfiltered vector search otherwise read the record (~560 bytes, a
// likely cache miss) of every vector nearer than the heap's worst, a few
// thousand per search and ~0.8 ms of its 3.8 ms of CPU at 200 k documents
// (issue 23). It returns nil when records must be read.
func (run *searchRun) eligibleSet() (bitset, error) {
	if !eligibleBySet || run.req == nil || len(run.plan.Filters) > 0 {
		return nil, nil
	}
	if !run.req.Unrestricted && run.view == nil {
		if _, err := run.stats(); err != nil {
			return nil, err
		}
	}
	return run.eligibleSlots(), nil
}

// walkPays estimates whether walking the graph costs less than scanning
// the eligible documents' vectors: a walk of breadth ef (in vectors: the
// documents it keeps times their passages) meets about ef·M0/f nodes
// when a share f of the documents is eligible, a scan reads f·N, and a
// node met costs about visitCost scanned vectors, so the walk pays when
// f·N exceeds about √(visitCost·ef·M0·N), ef summed over the graph's
// shards (ann.Config.Shard: each is walked). The breadth is the walk's
// for k (walk), not the smallest: k = 100 among abstracts of 4-5
// passages walks about 1,850 vectors wide, which on SciFact's 24,014
// passages costs more than the exact scan (measured on a tenth of the
// abstracts: the walk 4.8-10 ms of CPU, the scan 4.4 ms).
func (run *searchRun) walkPays(set *vecSet, k int, eligible func(int32, *record) bool) bool {
	recs := run.tab.recs
	docs := run.e.vecs.docs
	n := len(recs)
	if n == 0 {
		return false
	}
	step := max(1, n/eligibilitySample)
	seen, ok, withVecs, vecs := 0, 0, 0, 0
	for i := 0; i < n; i += step {
		r := &recs[i]
		if r.deleted {
			continue
		}
		seen++
		if !eligible(int32(i), r) {
			continue
		}
		ok++
		if d := docs[r.id]; d != nil {
			if ref := d.ref(set.key.metadata); ref.n > 0 && int(ref.dim) == set.key.dim {
				withVecs++
				vecs += int(ref.n)
			}
		}
	}
	if seen == 0 {
		return false
	}
	perDoc := 1.0
	if withVecs > 0 {
		perDoc = float64(vecs) / float64(withVecs)
	}
	// Each shard of the graph is walked at that breadth.
	ef := float64(walkEf(k)) * perDoc * float64(max(1, set.graph.Shards()))
	cost := float64(visitCost)
	if legacyPays {
		ef, cost = efSearch, 1
	}
	live := float64(set.live)
	admitted := live * float64(ok) / float64(seen)
	return admitted > math.Sqrt(cost*ef*32*live)
}

// visitCost is what walkPays counts a node met by a walk as, in vectors
// scanned. A visit reads a full-precision vector (5.5 KB at 1,380
// dimensions, a likely cache miss; since 2026-11-27f its codes,
// prefetched, and it was not measured again) and moves heaps; a scanned vector is
// 1,380 contiguous int8 codes. Unfiltered, k = 100, blend-glove vectors:
// with the AVX-512 kernels (dense-1m-2026-11-27.md) the walk cost 6.9 /
// 5.5 / 3.9 ms of CPU at 20 k / 42 k / 80 k documents and the scan 3.4 /
// 4.9 / 9.1 ms, even near 45 k; with an AVX2 dot and the portable scan
// (dense-recall-2026-11-27b.md) the walk 11.1 / 14.2 ms at 10 k / 25 k and
// the scan 6.8 / 17.8 ms, even near 18 k. Counted as one (before), the
// walk was chosen from 12.8 k documents on; at 2, from 25.6 k, between
// the two crossovers.
const visitCost = 2

// walkEf is the breadth of a walk for k documents, in documents.
func walkEf(k int) int { return max(efSearch, walkBreadth*k) }

// walk returns the slots of the documents the graph walk finds nearest
// (at least k, each by its nearest passage), or nil when the walk ends
// without k of them (the caller scans). The walk keeps a document's
// nearest passage only, so its breadth counts documents: counted in
// passages, a document's several passages (a long text's) crowd the
// others out of the walk's results and end it early, and the documents
// at the end of the k it found were the walk's least certain (on the use
// embedder's passages of a tenth of SciFact's abstracts it found 0.972
// of the exact 100 nearest, the grouped walk 1.000).
func (run *searchRun) walk(set *vecSet, q *ann.Query, k int, accept func(int32) bool) []docCand {
	if legacyWalk {
		return run.walkPassages(set, q, k, accept)
	}
	owner := set.owner
	// The walk's distances from the set's codes (ann decides whether it
	// can); the candidates are re-ranked from the vector file after.
	rs, visits := set.graph.Search(q, ann.SearchOptions{
		Ef: walkEf(k), Accept: accept, MaxVisits: maxWalkVisits,
		Group: func(id int32) int32 { return owner[id] },
		Codes: set.codes,
	})
	walkVisits.Add(int64(visits))
	if len(rs) < k || visits >= maxWalkVisits {
		// Too few eligible documents reachable, or a walk longer than
		// a scan: an exact scan finds them.
		return nil
	}
	return distinctSlots(set, rs)
}

// walkPassages is the walk before documents were grouped in it (tests
// measure both side by side): a breadth of passages, doubled until the
// passages found hold k documents.
func (run *searchRun) walkPassages(set *vecSet, q *ann.Query, k int, accept func(int32) bool) []docCand {
	for ef := max(efSearch, 2*k); ; ef *= 2 {
		rs, visits := set.graph.Search(q, ann.SearchOptions{Ef: ef, Accept: accept, MaxVisits: maxWalkVisits})
		walkVisits.Add(int64(visits))
		slots := distinctSlots(set, rs)
		if len(slots) >= k {
			return slots
		}
		if len(rs) < ef || ef >= 8*efSearch+4*k {
			return nil
		}
	}
}

// scanCodes returns the slots of the documents whose vectors are nearest
// to q by quantised distance: enough candidates for re-ranking to find
// the k nearest (2k + 32 vectors, more when documents have several
// passages among them).
//
// vids, when not nil, is the eligible vectors (eligibleVectors): only
// they are scanned, and accept is not called.
func (run *searchRun) scanCodes(set *vecSet, q *ann.Query, k int, accept func(int32) bool, vids bitset) ([]docCand, error) {
	n := set.codes.Len()
	parts := 1
	if n >= minParallelScan {
		parts = runtime.GOMAXPROCS(0)
	}
	for want := 2*k + 32; ; want *= 4 {
		if err := run.checkCtx(); err != nil {
			return nil, err
		}
		results := make([][]ann.Result, parts)
		var wg sync.WaitGroup
		for p := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if vids != nil {
					results[p] = set.codes.ScanEligible(q, want, vids, p, parts)
				} else {
					results[p] = set.codes.ScanPart(q, want, accept, nil, p, parts)
				}
			}()
		}
		wg.Wait()
		all := slices.Concat(results...)
		slices.SortFunc(all, func(a, b ann.Result) int {
			switch {
			case a.Dist < b.Dist:
				return -1
			case a.Dist > b.Dist:
				return 1
			}
			return int(a.ID - b.ID)
		})
		total := len(all)
		all = all[:min(want, len(all))]
		slots := distinctSlots(set, all)
		if len(slots) >= k || total < want {
			return slots, nil
		}
	}
}

// docCand is a candidate document: its slot and one of its vectors.
type docCand struct {
	slot, vid int32
}

// distinctSlots returns the owners of the results, each once, in order,
// with the vector by which each first appears.
func distinctSlots(set *vecSet, rs []ann.Result) []docCand {
	seen := make(map[int32]bool, len(rs))
	out := make([]docCand, 0, len(rs))
	for _, r := range rs {
		if s := set.owner[r.ID]; s >= 0 && !seen[s] {
			seen[s] = true
			out = append(out, docCand{slot: s, vid: r.ID})
		}
	}
	return out
}

// rerankByOwner enables finding a candidate's vectors by the set's owners
// around the vector it was found by (a document's vectors in a set are
// consecutive, and only they have its slot as owner) instead of by its
// record's id and the documents' map: two cache misses and a map look-up
// per candidate, a fifth of the re-ranking's CPU (issue 23). The tests and
// BenchmarkLatency turn it off to compare.
var rerankByOwner = true

// rerank orders candidate documents by the exact distance of their
// nearest passage (ties by id) and keeps k.
func (run *searchRun) rerank(set *vecSet, q []float32, cands []docCand, k int, metadata bool) []neighbour {
	recs := run.tab.recs
	docs := run.e.vecs.docs
	owner := set.owner
	ids := run.tab.ids
	if !compactSlots || len(ids) < len(recs) {
		ids = nil
	}
	out := make([]neighbour, 0, len(cands))
	for _, c := range cands {
		s := c.slot
		if rerankByOwner {
			lo, hi := c.vid, c.vid+1
			for lo > 0 && owner[lo-1] == s {
				lo--
			}
			for int(hi) < len(owner) && owner[hi] == s {
				hi++
			}
			id := int64(0)
			if ids != nil {
				id = ids[s]
			} else {
				id = recs[s].id
			}
			out = append(out, neighbour{slot: s, id: id, d2: float32(set.minDist(q, vecRef{first: lo, n: hi - lo}))})
			continue
		}
		id := recs[s].id
		d := docs[id]
		if d == nil {
			continue
		}
		out = append(out, neighbour{slot: s, id: id, d2: float32(set.minDist(q, *d.ref(metadata)))})
	}
	slices.SortFunc(out, func(a, b neighbour) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return out[:min(k, len(out))]
}

// mapLookupCost is what finding one document's vectors by its reference
// costs (a record, a map look-up and a docVecs, each a likely cache miss
// at scale: ~0.8 µs at 1 M documents) in passes of one owner each (the
// owners are read in order: ~1-2 ns each). A variable: the tests take
// both ways.
var mapLookupCost = 512

// scanByEligible enables eligibleVectors (the tests turn it off to
// compare with the scan that asks accept of each vector).
var scanByEligible = true

// eligibleVectors returns the set's vectors owned by eligible documents, as
// a bitset of vector numbers, when the eligible documents are known from a
// set smaller than the table: the caller's visible documents (the cached
// statistics view's bitset, for a caller who does not see every document)
// or the documents of a one-folder filter (the folder index), each checked
// against the whole eligibility when there are metadata filters. It
// returns nil when neither applies (the scan then asks accept per vector).
//
// A 1 % filter at 1 M documents otherwise scans every block and calls
// accept, which reads the record of every vector nearer than the heap's
// worst, ~10⁵ scattered records per search (issue 23): more CPU than the
// unfiltered search. Here the cost is one pass over the owners (a map
// look-up per eligible document when they are very few) and the scan of
// their vectors: with codes laid out by vector (dense sets) only theirs
// are read; by dimension (the hash embedder's sets) the groups of 64
// holding one, half of them for a 1 % filter spread evenly (1 − 0.99⁶⁴).
func (run *searchRun) eligibleVectors(set *vecSet, elig eligibility) (bitset, error) {
	if !scanByEligible || run.req == nil {
		return nil, nil
	}
	t := run.tab
	var visible bitset
	if !run.req.Unrestricted {
		v, err := run.stats()
		if err != nil {
			return nil, err
		}
		visible = v.visible // nil: the caller sees every live document
	}
	nVisible := -1
	if visible != nil {
		nVisible = 0
		for _, w := range visible {
			nVisible += bits.OnesCount64(w)
		}
	}
	filtered := len(run.plan.Filters) > 0
	// The eligible slots: listed (few) or as a bitset.
	var list []int32
	var slotSet bitset
	var folder []int32
	byFolder, folderOnly := false, false
	if eligibleBySet && len(run.plan.Filters) == 1 {
		// The one filter is a folder filter: its set of live documents,
		// less those the caller does not see, is the eligible documents,
		// with no record read (the probe's 10 % filter, ten folders, read
		// 10 % of the records: 6.7 ms of a search's 8.9 at 200 k).
		var n int
		if slotSet, n, folderOnly = t.folderSet(run.plan.Filters[0]); folderOnly {
			if visible != nil {
				for w := range slotSet {
					if w < len(visible) {
						slotSet[w] &= visible[w]
					} else {
						slotSet[w] = 0
					}
				}
				n = min(n, nVisible)
			}
			nVisible = n
		}
	}
	if !folderOnly {
		folder, byFolder = t.folderSlots(run.plan.Filters)
	}
	switch {
	case folderOnly:
	case byFolder && (nVisible < 0 || len(folder) <= nVisible):
		for _, s := range folder {
			if int(s) < len(t.recs) && elig.ok(s, &t.recs[s]) {
				list = append(list, s)
			}
		}
	case nVisible >= 0 && !filtered:
		slotSet = visible
	case nVisible >= 0:
		for w, word := range visible {
			for ; word != 0; word &= word - 1 {
				s := int32(w*64 + bits.TrailingZeros64(word))
				if int(s) < len(t.recs) && elig.ok(s, &t.recs[s]) {
					list = append(list, s)
				}
			}
		}
	default:
		return nil, nil
	}
	owner := set.owner
	vids := newBitset(len(owner))
	count := len(list)
	if slotSet != nil {
		count = nVisible
	}
	if count*mapLookupCost < len(owner) {
		// Very few: each document's vectors by its reference.
		docs := run.e.vecs.docs
		add := func(s int32) {
			d := docs[t.recs[s].id]
			if d == nil {
				return
			}
			ref := d.ref(set.key.metadata)
			if ref.n == 0 || int(ref.dim) != set.key.dim {
				return
			}
			for v := ref.first; v < ref.first+ref.n; v++ {
				if int(v) < len(owner) && owner[v] == s {
					vids.set(int(v))
				}
			}
		}
		if slotSet != nil {
			for w, word := range slotSet {
				for ; word != 0; word &= word - 1 {
					if s := w*64 + bits.TrailingZeros64(word); s < len(t.recs) {
						add(int32(s))
					}
				}
			}
		} else {
			for _, s := range list {
				add(s)
			}
		}
		return vids, nil
	}
	// Many: one pass over the owners.
	if slotSet == nil {
		slotSet = newBitset(len(t.recs))
		for _, s := range list {
			slotSet.set(int(s))
		}
	}
	for v, s := range owner {
		if s >= 0 && slotSet.has(int(s)) {
			vids.set(v)
		}
	}
	return vids, nil
}
