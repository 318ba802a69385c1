package enginetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

func testSortPaging(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	e := load(t, newEngine, metaDocs)
	sortBy := func(keys ...string) string {
		return `"sort": [` + joinComma(keys) + `]`
	}
	key := func(field, dir string) string {
		if dir == "" {
			return fmt.Sprintf(`{"field": %q}`, field)
		}
		return fmt.Sprintf(`{"field": %q, "direction": %q}`, field, dir)
	}
	cases := []struct {
		name string
		body string
		want []int64
	}{
		{name: "default: id ascending without ranking", body: `{}`, want: []int64{101, 102, 103, 104, 105}},
		{name: "string asc, missing last", body: body("", sortBy(key("doc_type", "asc"))), want: []int64{102, 101, 105, 103, 104}},
		{name: "string direction defaults to asc", body: body("", sortBy(key("doc_type", ""))), want: []int64{102, 101, 105, 103, 104}},
		{name: "string desc, missing last", body: body("", sortBy(key("doc_type", "desc"))), want: []int64{103, 105, 101, 102, 104}},
		{name: "ties by id ascending", body: body("", sortBy(key("doc_status", "asc"))), want: []int64{102, 104, 101, 103, 105}},
		{name: "ties by id ascending when desc", body: body("", sortBy(key("doc_status", "desc"))), want: []int64{101, 103, 105, 104, 102}},
		{name: "date desc, missing last", body: body("", sortBy(key("date", "desc"))), want: []int64{102, 101, 105, 103, 104}},
		{name: "date asc, missing last", body: body("", sortBy(key("date", "asc"))), want: []int64{103, 105, 101, 102, 104}},
		{name: "entry_date, missing last", body: body("", sortBy(key("entry_date", "desc"))), want: []int64{101, 102, 103, 104, 105}},
		{name: "bool desc", body: body("", sortBy(key("privileged", "desc"))), want: []int64{102, 105, 101, 103, 104}},
		{name: "bool asc", body: body("", sortBy(key("islocked", "asc"))), want: []int64{101, 103, 104, 105, 102}},
		{name: "id desc", body: body("", sortBy(key("id", "desc"))), want: []int64{105, 104, 103, 102, 101}},
		{name: "two keys", body: body("", sortBy(key("doc_status", "asc"), key("date", "desc"))), want: []int64{102, 104, 101, 105, 103}},
		{name: "id key before another", body: body("", sortBy(key("id", "desc"), key("doc_status", "asc"))), want: []int64{105, 104, 103, 102, 101}},
		{name: "with a filter", body: body(eq("eq", "doc_status", `"Open"`), sortBy(key("date", "asc"))), want: []int64{103, 105, 101}},
		{name: "fts sorted by a field", body: body(ftsWhere("tax"), sortBy(key("doc_type", "asc"))), want: []int64{101, 105}},
		{name: "page 1", body: body("", `"limit": 2`), want: []int64{101, 102}},
		{name: "page 2", body: body("", `"limit": 2`, `"offset": 2`), want: []int64{103, 104}},
		{name: "last page short", body: body("", `"limit": 2`, `"offset": 4`), want: []int64{105}},
		{name: "offset past the end", body: body("", `"limit": 2`, `"offset": 10`), want: []int64{}},
		{name: "sorted page", body: body("", sortBy(key("date", "desc")), `"limit": 2`, `"offset": 1`), want: []int64{101, 105}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := search(t, e, tc.body, admin)
			wantOrder(t, res, tc.want)
		})
	}
	t.Run("total independent of the page", func(t *testing.T) {
		for _, off := range []int{0, 3, 5, 9} {
			res := search(t, e, body("", `"limit": 1`, fmt.Sprintf(`"offset": %d`, off)), admin)
			if res.Total != 5 {
				t.Errorf("offset %d: total = %d, want 5", off, res.Total)
			}
		}
	})

	// Equal scores: paging must be exact and ordered by id.
	t.Run("pages over equal scores", func(t *testing.T) {
		var docs []engine.Document
		var want []int64
		for i := range 25 {
			id := int64(1000 + (i*7)%25) // not in id order
			docs = append(docs, engine.Document{ID: id, Content: "same words here"})
			want = append(want, id)
		}
		slices.Sort(want)
		e := load(t, newEngine, docs)
		var got []int64
		for off := 0; off < 30; off += 7 {
			res := search(t, e, body(ftsWhere("words"), `"limit": 7`, fmt.Sprintf(`"offset": %d`, off)), admin)
			if res.Total != 25 {
				t.Errorf("offset %d: total = %d, want 25", off, res.Total)
			}
			got = append(got, ids(res)...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages = %v, want %v", got, want)
		}
	})
}

func joinComma(parts []string) string {
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += ", "
		}
		s += p
	}
	return s
}

func testSelect(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	e := load(t, newEngine, withOtherStrings(metaDocs))
	all := `"select": ["doc_type", "doc_status", "doc_number", "description", "from_entity", "to_entity", "reference_number",
		"entry_date", "entry_person", "rev_number", "date", "privileged", "islocked", "filesbelongto", "subdoctype"]`
	res := search(t, e, body(eq("in", "id", `[101, 104]`), all), admin)
	wantOrder(t, res, []int64{101, 104})
	if len(res.Hits) != 2 {
		return
	}
	f := res.Hits[0].Fields
	want := map[string]any{
		"doc_type": "Invoice", "doc_status": "Open", "description": "Annual Tax Report 2024", "reference_number": "REF-001",
		"doc_number": "doc_number-101-Value", "from_entity": "from_entity-101-Value", "to_entity": "to_entity-101-Value",
		"entry_person": "entry_person-101-Value", "rev_number": "rev_number-101-Value", "subdoctype": "subdoctype-101-Value",
		"privileged": false, "islocked": false,
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("101 %s = %#v, want %#v", k, f[k], v)
		}
	}
	if d, ok := f["date"].(time.Time); !ok || !d.Equal(*date("2024-01-31T15:00:00Z")) {
		t.Errorf("101 date = %#v", f["date"])
	}
	if d, ok := f["entry_date"].(time.Time); !ok || !d.Equal(*date("2024-02-01T08:00:00Z")) {
		t.Errorf("101 entry_date = %#v", f["entry_date"])
	}
	if fb, ok := f["filesbelongto"].([]int64); !ok || !slices.Equal(sorted(fb), []int64{3, 7}) {
		t.Errorf("101 filesbelongto = %#v", f["filesbelongto"])
	}
	if len(f) != 15 {
		t.Errorf("101 has %d fields, want 15: %v", len(f), f)
	}
	g := res.Hits[1].Fields
	for _, k := range []string{"doc_type", "description", "date", "entry_date", "reference_number"} {
		if v, ok := g[k]; !ok || v != nil {
			t.Errorf("104 %s = %#v (present %v), want nil", k, v, ok)
		}
	}
	if g["privileged"] != false || g["doc_status"] != "Draft" {
		t.Errorf("104 fields = %v", g)
	}

	t.Run("only requested fields", func(t *testing.T) {
		res := search(t, e, body(eq("eq", "id", `102`), `"select": ["doc_type"]`), admin)
		if len(res.Hits) != 1 {
			t.Fatalf("hits = %v", ids(res))
		}
		if got := res.Hits[0].Fields; len(got) != 1 || got["doc_type"] != "Contract" {
			t.Errorf("fields = %v, want doc_type only", got)
		}
	})
	t.Run("empty select: id only", func(t *testing.T) {
		res := search(t, e, body(eq("eq", "id", `102`), `"select": []`), admin)
		if len(res.Hits) != 1 || len(res.Hits[0].Fields) != 0 {
			t.Errorf("hits = %+v, want id only", res.Hits)
		}
	})
}
