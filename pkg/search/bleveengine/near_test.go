package bleveengine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// TestNearSkipIneligibleAgrees compares NEAR and phrase searches of
// restricted callers with the documents they cannot see skipped before
// their positions are read (skipIneligible) and without: every
// engine.Result (total, hits, order, scores) must be the same. The corpus
// mixes common and rare words over several segments with updates and
// deletes; the queries pair common with common, common with rare and rare
// with rare words at distances 0 to 6, in both orders.
func TestNearSkipIneligibleAgrees(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, t.TempDir()+"/index", Options{})
	r := rand.New(rand.NewPCG(5, 6))
	common := strings.Fields("the tax report paid due")
	rare := strings.Fields("zebra quasar ochre")
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			if r.IntN(12) == 0 {
				ws[i] = rare[r.IntN(len(rare))]
			} else {
				ws[i] = common[min(r.IntN(len(common)), r.IntN(len(common)))]
			}
		}
		return strings.Join(ws, " ")
	}
	doc := func(id, rev int64) engine.Document {
		return engine.Document{ID: id, Rev: rev, GroupIDs: []int64{id % 7}, FolderIDs: []int64{id % 3}, Content: text(4 + r.IntN(30))}
	}
	for b := range 4 {
		var docs []engine.Document
		for i := range 200 {
			docs = append(docs, doc(int64(b*200+i+1), 1))
		}
		if _, err := e.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	for id := int64(1); id <= 800; id += 9 {
		d := doc(id, 2)
		d.GroupIDs = []int64{(id + 3) % 7}
		if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
			t.Fatal(err)
		}
	}
	for id := int64(4); id <= 800; id += 15 {
		if err := e.Delete(ctx, id, 3); err != nil {
			t.Fatal(err)
		}
	}
	pairs := [][2]string{{"tax", "report"}, {"the", "the"}, {"tax", "zebra"}, {"zebra", "quasar"}, {"ochre", "paid"}, {"due", "nowhere"}}
	var queries []string
	for _, p := range pairs {
		for d := 0; d <= 6; d++ {
			queries = append(queries, fmt.Sprintf(`*N%d"%s %s"`, d, p[0], p[1]), fmt.Sprintf(`*N%d"%s %s"`, d, p[1], p[0]))
		}
		queries = append(queries, fmt.Sprintf(`"%s %s"`, p[0], p[1]), fmt.Sprintf(`"%s %s"`, p[1], p[0]))
	}
	queries = append(queries, `*N2"tax report" zebra`, `*N3"the tax report"`, `tax -*N1"report paid"`)
	callers := []struct {
		name string
		req  engine.Request
	}{
		{"unrestricted", engine.Request{Unrestricted: true}},
		{"group 2", engine.Request{GroupIDs: []int64{2}}},
		{"groups 0,3,5", engine.Request{GroupIDs: []int64{0, 3, 5}}},
		{"every group", engine.Request{GroupIDs: []int64{0, 1, 2, 3, 4, 5, 6}}},
		{"no group", engine.Request{GroupIDs: []int64{99}}},
	}
	// Searches cache the slots of documents, and only documents whose slot
	// is cached are skipped: the first pass runs with some unknown, the
	// second with every one known.
	for _, phase := range []string{"cold", "warm"} {
		// narrower counts the searches where a restricted caller found
		// some matches but fewer than an unrestricted one: documents were
		// there to skip.
		narrower := 0
		for _, q := range queries {
			var all int64
			for _, c := range callers {
				req := c.req
				req.Query = queryOf(t, fmt.Sprintf(`{"where": {"fts": {"query": %q}}, "limit": 20}`, q))
				want, got, werr, gerr := searchOldNew(ctx, e, req, setSkipIneligible)
				if werr != nil || gerr != nil {
					t.Fatalf("%s, %s %s: %v, %v", phase, c.name, q, werr, gerr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s, %s %s:\n got %+v\nwant %+v", phase, c.name, q, got, want)
				}
				if c.req.Unrestricted {
					all = want.Total
				} else if want.Total > 0 && want.Total < all {
					narrower++
				}
			}
		}
		if narrower < len(queries) {
			t.Fatalf("%s: restricted callers found fewer matches than an unrestricted one in only %d of %d searches", phase, narrower, 4*len(queries))
		}
	}
}
