package bleveengine

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// TestPrefixWithoutSlotCache compares a lone prefix read segment by
// segment with bleve's searcher when no slot is cached, so that every
// match is found again by its global document number (the segment's
// first number plus the local one): on an index of several segments of
// different sizes with updated and deleted documents, a wrong first number
// names another document. TestFastPathsAgree covers the cached slots.
func TestPrefixWithoutSlotCache(t *testing.T) {
	defer func(old bool) { slotCacheOn = old }(slotCacheOn)
	slotCacheOn = false
	ctx := context.Background()
	e := newTestEngine(t, t.TempDir()+"/index", Options{})
	words := []string{"alpha", "annual", "art", "tax", "the", "delta", "due"}
	doc := func(id, rev int64) engine.Document {
		return engine.Document{
			ID: id, Rev: rev, GroupIDs: []int64{id % 4},
			Content: fmt.Sprintf("%s %s report", words[id%7], words[(id*3+rev)%7]),
		}
	}
	// Segments of 40, 70, 100, ... documents, then updates and deletions.
	id := int64(0)
	for b := range 5 {
		var docs []engine.Document
		for range 40 + 30*b {
			id++
			docs = append(docs, doc(id, 1))
		}
		if _, err := e.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	for u := int64(1); u <= id; u += 9 {
		if _, err := e.Upsert(ctx, []engine.Document{doc(u, 2)}); err != nil {
			t.Fatal(err)
		}
	}
	for d := int64(4); d <= id; d += 15 {
		if err := e.Delete(ctx, d, 3); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		body string
		req  engine.Request
	}{
		{name: "a*, unrestricted", body: `{"where": {"fts": {"query": "a*"}}, "limit": 500}`, req: engine.Request{Unrestricted: true}},
		{name: "t*, unrestricted", body: `{"where": {"fts": {"query": "t*"}}, "limit": 500}`, req: engine.Request{Unrestricted: true}},
		{name: "d*, groups 1 and 3", body: `{"where": {"fts": {"query": "d*"}}, "limit": 500}`, req: engine.Request{GroupIDs: []int64{1, 3}}},
		{name: "a* beside a folder, groups 2", body: `{"where": {"and": [{"fts": {"query": "a*"}}, {"not": {"eq": {"field": "filesbelongto", "value": 99}}}]}, "limit": 500}`, req: engine.Request{GroupIDs: []int64{2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.Query = queryOf(t, tt.body)
			want, got, werr, gerr := searchOldNew(ctx, e, req, setSegPrefix)
			if werr != nil || gerr != nil {
				t.Fatalf("errors: bleve searcher %v, segment by segment %v", werr, gerr)
			}
			if want.Total < 20 {
				t.Fatalf("only %d matches: the comparison needs more", want.Total)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("segment by segment:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}
