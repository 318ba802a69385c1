package bleveengine

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// TestColumnFiltersAgree runs metadata searches (date-time comparisons and
// ranges, whole-day equality, string eq and in, mixed with other
// conjuncts, fts and folders, sorted by date or entry date both ways, with
// offsets) with the metadata columns and with the record scan they replace,
// as unrestricted and restricted callers, on documents lacking fields,
// sharing a second but not the instant, updated (type and date changed)
// and deleted: the results must be the same, and each must hold exactly
// the documents a brute-force check of the filter finds, in date order.
func TestColumnFiltersAgree(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, t.TempDir()+"/index", Options{})
	r := rand.New(rand.NewPCG(5, 6))
	types := []string{"Invoice", "Contract", "Letter", "Memo"}
	base := time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)
	// model is what every live document holds, for the brute-force check.
	model := map[int64]engine.Document{}
	doc := func(id, rev int64) engine.Document {
		d := engine.Document{
			ID: id, Rev: rev, GroupIDs: []int64{id % 4}, FolderIDs: []int64{id % 6},
			Content: []string{"annual report", "tax invoice", "late fee notice"}[r.IntN(3)],
		}
		if r.IntN(8) > 0 {
			d.DocType = ptr(types[r.IntN(len(types))])
		}
		if r.IntN(7) > 0 {
			// Days apart, and within a day several documents in one
			// second at different nanoseconds (their order is the
			// records', not the columns').
			t := base.AddDate(0, 0, r.IntN(120)).Add(time.Duration(r.IntN(3)) * time.Second).Add(time.Duration(r.IntN(1000)) * time.Millisecond)
			d.Date = &t
		}
		if r.IntN(3) > 0 {
			t := base.Add(time.Duration(r.IntN(50_000)) * time.Minute)
			d.EntryDate = &t
		}
		return d
	}
	write := func(docs ...engine.Document) {
		t.Helper()
		if _, err := e.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			model[d.ID] = d
		}
	}
	for b := range 4 {
		var docs []engine.Document
		for i := range 200 {
			docs = append(docs, doc(int64(b*200+i+1), 1))
		}
		write(docs...)
	}
	type check struct {
		body string
		// keep is the filter, decided on a document of the model.
		keep func(d engine.Document) bool
		// by is the sort (nil: by id), desc its direction.
		by   func(d engine.Document) *time.Time
		desc bool
	}
	day := func(d int) time.Time { return base.AddDate(0, 0, d) }
	typ := func(d engine.Document) string {
		if d.DocType == nil {
			return "\x00"
		}
		return *d.DocType
	}
	between := func(p *time.Time, lo, hi time.Time) bool { return p != nil && !p.Before(lo) && p.Before(hi) }
	date := func(d engine.Document) *time.Time { return d.Date }
	entry := func(d engine.Document) *time.Time { return d.EntryDate }
	f := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	// An instant some document seen by both callers has.
	var noon *time.Time
	for id := int64(1); noon == nil; id += 4 {
		noon = model[id].Date
	}
	checks := []check{
		{fmt.Sprintf(`{"where": {"and": [{"eq": {"field": "doc_type", "value": "Invoice"}}, {"gte": {"field": "date", "value": %q}}, {"lt": {"field": "date", "value": %q}}]}, "sort": [{"field": "date", "direction": "desc"}], "limit": 500}`, f(day(10)), f(day(70))),
			func(d engine.Document) bool { return typ(d) == "Invoice" && between(d.Date, day(10), day(70)) }, date, true},
		{fmt.Sprintf(`{"where": {"and": [{"eq": {"field": "doc_type", "value": "Letter"}}, {"gte": {"field": "date", "value": %q}}, {"lt": {"field": "date", "value": %q}}]}, "sort": [{"field": "date"}], "limit": 500}`, f(day(0)), f(day(30))),
			func(d engine.Document) bool { return typ(d) == "Letter" && between(d.Date, day(0), day(30)) }, date, false},
		// Bounds inside a second: the columns keep the whole second, the
		// records decide.
		{fmt.Sprintf(`{"where": {"and": [{"gt": {"field": "date", "value": %q}}, {"lte": {"field": "date", "value": %q}}]}, "sort": [{"field": "date", "direction": "desc"}], "limit": 500}`, f(noon.Add(-700*time.Millisecond)), f(day(90).Add(1500*time.Millisecond))),
			func(d engine.Document) bool {
				return d.Date != nil && d.Date.After(noon.Add(-700*time.Millisecond)) && !d.Date.After(day(90).Add(1500*time.Millisecond))
			}, date, true},
		{fmt.Sprintf(`{"where": {"eq": {"field": "date", "value": %q}}, "sort": [{"field": "date"}], "limit": 500}`, f(*noon)),
			func(d engine.Document) bool { return d.Date != nil && d.Date.Equal(*noon) }, date, false},
		{fmt.Sprintf(`{"where": {"eq": {"field": "date", "value": %q}}, "sort": [{"field": "date", "direction": "desc"}], "limit": 500}`, day(40).Format("2006-01-02")),
			func(d engine.Document) bool { return between(d.Date, day(40), day(41)) }, date, true},
		{fmt.Sprintf(`{"where": {"and": [{"in": {"field": "doc_type", "value": ["Memo", "Contract", "Nothing"]}}, {"lt": {"field": "entry_date", "value": %q}}]}, "sort": [{"field": "entry_date", "direction": "desc"}], "limit": 500}`, f(base.Add(20_000*time.Minute))),
			func(d engine.Document) bool {
				return (typ(d) == "Memo" || typ(d) == "Contract") && d.EntryDate != nil && d.EntryDate.Before(base.Add(20_000*time.Minute))
			}, entry, true},
		// Documents lacking the sort field come last both ways.
		{`{"where": {"eq": {"field": "doc_type", "value": "Contract"}}, "sort": [{"field": "date", "direction": "desc"}], "limit": 500}`,
			func(d engine.Document) bool { return typ(d) == "Contract" }, date, true},
		{`{"where": {"eq": {"field": "doc_type", "value": "Contract"}}, "sort": [{"field": "date"}], "limit": 500}`,
			func(d engine.Document) bool { return typ(d) == "Contract" }, date, false},
		{`{"where": {"in": {"field": "doc_type", "value": ["Nothing"]}}, "limit": 500}`, func(engine.Document) bool { return false }, nil, false},
		{fmt.Sprintf(`{"where": {"and": [{"ne": {"field": "doc_type", "value": "Memo"}}, {"gte": {"field": "date", "value": %q}}]}, "limit": 500}`, f(day(100))),
			func(d engine.Document) bool { return typ(d) != "Memo" && between(d.Date, day(100), day(10_000)) }, nil, false},
		{fmt.Sprintf(`{"where": {"and": [{"eq": {"field": "filesbelongto", "value": 3}}, {"gte": {"field": "date", "value": %q}}]}, "sort": [{"field": "date", "direction": "desc"}], "limit": 500}`, f(day(50))),
			func(d engine.Document) bool { return d.FolderIDs[0] == 3 && between(d.Date, day(50), day(10_000)) }, date, true},
		// An or is left to the records.
		{fmt.Sprintf(`{"where": {"or": [{"eq": {"field": "doc_type", "value": "Memo"}}, {"lt": {"field": "date", "value": %q}}]}, "limit": 500}`, f(day(5))),
			func(d engine.Document) bool { return typ(d) == "Memo" || between(d.Date, day(-1000), day(5)) }, nil, false},
	}
	// Not checked by brute force (scores, pages): compared both ways only.
	pages := []string{
		fmt.Sprintf(`{"where": {"and": [{"eq": {"field": "doc_type", "value": "Invoice"}}, {"gte": {"field": "date", "value": %q}}]}, "sort": [{"field": "date", "direction": "desc"}], "limit": 7, "offset": 13}`, f(day(20))),
		fmt.Sprintf(`{"where": {"and": [{"fts": {"query": "report"}}, {"eq": {"field": "doc_type", "value": "Letter"}}, {"lt": {"field": "date", "value": %q}}]}}`, f(day(60))),
		fmt.Sprintf(`{"where": {"and": [{"fts": {"query": "tax"}}, {"gte": {"field": "date", "value": %q}}]}, "sort": [{"field": "date"}, {"field": "_score", "direction": "desc"}], "limit": 30}`, f(day(30))),
	}
	callers := []struct {
		name   string
		req    engine.Request
		groups []int64
	}{
		{"unrestricted", engine.Request{Unrestricted: true}, nil},
		{"groups 1,3", engine.Request{GroupIDs: []int64{1, 3}}, []int64{1, 3}},
	}
	both := func(phase string, c engine.Request, body string) engine.Result {
		t.Helper()
		req := c
		req.Query = queryOf(t, body)
		want, got, werr, gerr := searchOldNew(ctx, e, req, setColumnFilters)
		if werr != nil || gerr != nil {
			t.Fatalf("%s %s: %v, %v", phase, body, werr, gerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s:\n got %+v\nwant %+v", phase, body, got, want)
		}
		return got
	}
	compare := func(phase string) {
		t.Helper()
		for _, c := range callers {
			matched := 0
			for _, ch := range checks {
				got := both(phase+" "+c.name, c.req, ch.body)
				var want []engine.Document
				for _, d := range model {
					if (c.groups == nil || slices.Contains(c.groups, d.GroupIDs[0])) && ch.keep(d) {
						want = append(want, d)
					}
				}
				// The engine's order: the sort key (absent last), then id.
				slices.SortFunc(want, func(a, b engine.Document) int {
					if ch.by != nil {
						ta, tb := ch.by(a), ch.by(b)
						switch {
						case ta == nil && tb != nil:
							return 1
						case ta != nil && tb == nil:
							return -1
						case ta != nil && tb != nil:
							if c := ta.Compare(*tb); c != 0 {
								if ch.desc {
									return -c
								}
								return c
							}
						}
					}
					return cmp.Compare(a.ID, b.ID)
				})
				var ids, wantIDs []int64
				for _, h := range got.Hits {
					ids = append(ids, h.ID)
				}
				for _, d := range want {
					wantIDs = append(wantIDs, d.ID)
				}
				if got.Total != int64(len(want)) || !slices.Equal(ids, wantIDs) {
					t.Errorf("%s %s %s: total %d, want %d\n got %v\nwant %v", phase, c.name, ch.body, got.Total, len(want), ids, wantIDs)
				}
				if len(want) > 0 {
					matched++
				} else {
					t.Logf("%s %s: no match for %s", phase, c.name, ch.body)
				}
			}
			if matched < len(checks)-1 {
				t.Fatalf("%s %s: only %d of %d checks matched anything", phase, c.name, matched, len(checks))
			}
			for _, body := range pages {
				if got := both(phase+" "+c.name, c.req, body); len(got.Hits) == 0 {
					t.Errorf("%s %s %s: no hits", phase, c.name, body)
				}
			}
		}
	}
	compare("after loading")
	// Types and dates change, fields come and go, documents are deleted
	// and new ones come.
	for id := int64(3); id <= 800; id += 7 {
		write(doc(id, 2))
	}
	for id := int64(4); id <= 800; id += 11 {
		if err := e.Delete(ctx, id, 3); err != nil {
			t.Fatal(err)
		}
		delete(model, id)
	}
	var more []engine.Document
	for id := int64(801); id <= 900; id++ {
		more = append(more, doc(id, 1))
	}
	write(more...)
	compare("after writes")
}

// TestColumnFilterImpliesTheConjuncts checks the column tests on single
// values: a document value satisfying a comparison always passes its test
// (the columns only drop what cannot match), and one a whole second or
// more outside the bound is dropped.
func TestColumnFilterImpliesTheConjuncts(t *testing.T) {
	v := time.Date(2022, 5, 17, 10, 30, 15, 400_000_000, time.UTC)
	cases := []struct {
		op       string
		pass     []time.Duration // offsets from v of values that satisfy op v
		fail     []time.Duration // offsets whose key is outside the test's range
		timeOnly bool
	}{
		{"gte", []time.Duration{0, 500 * time.Millisecond, -0, time.Hour}, []time.Duration{-1500 * time.Millisecond, -time.Hour}, true},
		{"gt", []time.Duration{time.Nanosecond, 599 * time.Millisecond, time.Hour}, []time.Duration{-1500 * time.Millisecond}, true},
		{"lt", []time.Duration{-time.Nanosecond, -400 * time.Millisecond, -time.Hour}, []time.Duration{700 * time.Millisecond, time.Hour}, true},
		{"lte", []time.Duration{0, -time.Hour}, []time.Duration{600 * time.Millisecond}, true},
		{"eq", []time.Duration{0}, []time.Duration{-500 * time.Millisecond, 600 * time.Millisecond}, true},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			tab := newTable()
			body := fmt.Sprintf(`{"where": {%q: {"field": "date", "value": %q}}}`, c.op, v.Format(time.RFC3339Nano))
			q := queryOf(t, body)
			plan, err := q.Plan()
			if err != nil {
				t.Fatal(err)
			}
			var offs []time.Duration
			offs = append(append(offs, c.pass...), c.fail...)
			for i, off := range offs {
				d := v.Add(off)
				tab.put(record{id: int64(i + 1), date: d, hasDate: true}, nil)
			}
			tab.put(record{id: 100}, nil) // no date: never passes
			cf := tab.colFilter(plan.Filters)
			if cf == nil {
				t.Fatal("no column test for a date comparison")
			}
			for i := range offs {
				if want := i < len(c.pass); cf.ok(int32(i)) != want {
					t.Errorf("%s %s: value %v passes %v, want %v", c.op, v, offs[i], !want, want)
				}
			}
			if cf.ok(int32(len(offs))) {
				t.Errorf("%s: a document without a date passes", c.op)
			}
		})
	}
}
