package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

func clause(op, fieldName string, value any) map[string]any {
	return map[string]any{op: map[string]any{"field": fieldName, "value": value}}
}

// TestSearchOperators checks every metadata operator and the boolean
// combinators on documents uploaded with metadata.
func TestSearchOperators(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	typeA, typeB := newDocType(t, "invoice"), newDocType(t, "contract")
	ids := map[string]int64{
		"A": u.uploadText("a.txt", "first", field("description", "Invoice March"), field("doc_type", typeA), field("doc_status", "open"),
			field("reference_number", "REF-100"), field("date", "2024-03-15"), field("from_entity", "Acme Corp"), field("privileged", "true"),
			field("doc_number_prefix", "INV")),
		"B": u.uploadText("b.txt", "second", field("description", "Invoice April"), field("doc_type", typeA), field("doc_status", "closed"),
			field("reference_number", "REF-200"), field("date", "2024-04-01"), field("from_entity", "Globex")),
		"C": u.uploadText("c.txt", "third", field("description", "Contract"), field("doc_type", typeB), field("doc_status", "open"),
			field("date", "2023-12-31"), field("from_entity", "acme subsidiary")),
		"D": u.uploadText("d.txt", "fourth", field("description", "Memo"), field("doc_type", typeB)),
	}
	u.waitIndexed(ids["A"], ids["B"], ids["C"], ids["D"])

	not := func(c map[string]any) map[string]any { return map[string]any{"not": c} }
	tests := []struct {
		name  string
		where map[string]any
		want  string
	}{
		{name: "eq", where: clause("eq", "doc_type", typeA), want: "AB"},
		{name: "eq is exact", where: clause("eq", "description", "invoice march"), want: ""},
		{name: "ne matches documents lacking the field", where: clause("ne", "doc_status", "open"), want: "BD"},
		{name: "gt a date: after the whole day", where: clause("gt", "date", "2024-03-15"), want: "B"},
		{name: "gte", where: clause("gte", "date", "2024-03-15"), want: "AB"},
		{name: "lt", where: clause("lt", "date", "2024-03-15"), want: "C"},
		{name: "lte includes the whole day", where: clause("lte", "date", "2024-03-15"), want: "AC"},
		{name: "eq on a date is the whole day", where: clause("eq", "date", "2024-03-15"), want: "A"},
		{name: "gt on a date-time", where: clause("gt", "date", "2024-03-31T23:00:00Z"), want: "B"},
		{name: "in", where: clause("in", "doc_status", []any{"open", "closed"}), want: "ABC"},
		{name: "nin matches documents lacking the field", where: clause("nin", "doc_status", []any{"open"}), want: "BD"},
		{name: "contains is case-insensitive", where: clause("contains", "from_entity", "ACME"), want: "AC"},
		{name: "startswith is case-insensitive", where: clause("startswith", "reference_number", "ref-1"), want: "A"},
		{name: "startswith doc_number", where: clause("startswith", "doc_number", "INV-"), want: "A"},
		{name: "boolean", where: clause("eq", "privileged", true), want: "A"},
		{name: "boolean false", where: clause("eq", "privileged", false), want: "BCD"},
		{name: "filesbelongto", where: clause("eq", "filesbelongto", u.folder.FolderID), want: "ABCD"},
		{name: "entry_person", where: clause("eq", "entry_person", u.username), want: "ABCD"},
		{name: "or", where: map[string]any{"or": []any{clause("eq", "doc_type", typeB), clause("eq", "doc_status", "closed")}}, want: "BCD"},
		{name: "not", where: not(clause("eq", "doc_type", typeA)), want: "CD"},
		{name: "and with not", where: map[string]any{"and": []any{clause("eq", "doc_type", typeA), not(clause("eq", "doc_status", "open"))}}, want: "B"},
		{name: "id", where: clause("in", "id", []any{ids["A"], ids["D"]}), want: "AD"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := u.searchOK(map[string]any{"where": tc.where, "limit": 50})
			var want []int64
			for _, c := range tc.want {
				want = append(want, ids[string(c)])
			}
			wantIDs(t, tc.name, res.IDs(), want)
			if res.Total != int64(len(want)) {
				t.Errorf("total = %d, want %d", res.Total, len(want))
			}
			for _, r := range res.Results {
				if r["_score"] != nil {
					t.Errorf("metadata-only _score = %v, want null", r["_score"])
				}
			}
		})
	}
}

// TestSearchModes covers the six modes of docs/api.md §4.8.
func TestSearchModes(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	energy, food := newDocType(t, "energy"), newDocType(t, "food")
	solar := u.uploadText("solar.txt", "Solar panels convert sunlight into renewable electricity for the grid.", field("description", "Solar power plant"), field("doc_type", energy))
	wind := u.uploadText("wind.txt", "Wind turbines generate renewable power on windy hills.", field("description", "Wind farm"), field("doc_type", energy))
	cake := u.uploadText("cake.txt", "Melt the chocolate with butter and sugar, then bake the cake.", field("description", "Chocolate cake recipe"), field("doc_type", food))
	u.waitIndexed(solar, wind, cake)
	u.waitVectors(solar, wind, cake)

	vector := func(target, q string) map[string]any {
		return map[string]any{"vector": map[string]any{"target": target, "query": q}}
	}
	and := func(cs ...any) map[string]any { return map[string]any{"and": cs} }
	tests := []struct {
		name      string
		body      map[string]any
		want      []int64 // in order when ordered is set
		ordered   bool
		wantTotal int64
		score     string // "number" or "null"
	}{
		{name: "fts", body: map[string]any{"where": fts("renewable")}, want: []int64{solar, wind}, wantTotal: 2, score: "number"},
		{name: "vector on content", body: map[string]any{"where": vector("content", "sunlight solar panels")}, want: []int64{solar}, ordered: true, wantTotal: 3, score: "number"},
		{name: "vector total is min(k, eligible)", body: map[string]any{"where": vector("content", "chocolate butter"), "options": map[string]any{"vector_k": 2}}, want: []int64{cake}, ordered: true, wantTotal: 2, score: "number"},
		{name: "vector of stop words only matches nothing", body: map[string]any{"where": vector("content", "the of and")}, want: nil, wantTotal: 0},
		{name: "vector on metadata", body: map[string]any{"where": vector("metadata", "chocolate cake recipe")}, want: []int64{cake}, ordered: true, wantTotal: 3, score: "number"},
		{name: "fts and vector: the fts matches among the k nearest", body: map[string]any{"where": and(fts("renewable"), vector("content", "chocolate cake")), "options": map[string]any{"vector_k": 1}}, want: nil, wantTotal: 0},
		{name: "fts and vector ranked by fts", body: map[string]any{"where": and(fts("renewable"), vector("content", "wind turbines")), "options": map[string]any{"vector_k": 2}}, want: []int64{solar, wind}, wantTotal: 2, score: "number"},
		{name: "metadata only", body: map[string]any{"where": clause("eq", "doc_type", energy), "sort": []any{map[string]any{"field": "id", "direction": "asc"}}}, want: []int64{solar, wind}, ordered: true, wantTotal: 2, score: "null"},
		{name: "fts and metadata", body: map[string]any{"where": and(fts("renewable"), clause("eq", "description", "Wind farm"))}, want: []int64{wind}, wantTotal: 1, score: "number"},
		{name: "vector and metadata", body: map[string]any{"where": and(vector("content", "chocolate cake"), clause("eq", "doc_type", energy))}, want: []int64{solar, wind}, wantTotal: 2, score: "number"},
		{name: "no where", body: map[string]any{"sort": []any{map[string]any{"field": "id"}}}, want: []int64{solar, wind, cake}, ordered: true, wantTotal: 3, score: "null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := u.searchOK(tc.body)
			got := res.IDs()
			if tc.ordered {
				if len(got) < len(tc.want) || fmt.Sprint(got[:len(tc.want)]) != fmt.Sprint(tc.want) {
					t.Errorf("ids = %v, want %v first", got, tc.want)
				}
			} else {
				wantIDs(t, tc.name, got, tc.want)
			}
			if res.Total != tc.wantTotal {
				t.Errorf("total = %d, want %d", res.Total, tc.wantTotal)
			}
			for _, r := range res.Results {
				_, isNum := r["_score"].(float64)
				if (tc.score == "number") != isNum || (tc.score == "null" && r["_score"] != nil) {
					t.Errorf("_score = %v, want %s", r["_score"], tc.score)
				}
			}
		})
	}
}

// TestSearchVisibility: a document of another group never appears, in any
// mode, and total never counts it.
func TestSearchVisibility(t *testing.T) {
	t.Parallel()
	word := "visib" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + "x"
	u1, u2 := newDocUser(t), newDocUser(t)
	both := newUser(t, []string{u1.group, u2.group})
	a1 := u1.uploadText("a1.txt", "shared word "+word+" one")
	a2 := u1.uploadText("a2.txt", "shared word "+word+" two")
	b1 := u2.uploadText("b1.txt", "shared word "+word+" three")
	both.waitIndexed(a1, a2, b1)
	both.waitVectors(a1, a2, b1)

	bodies := map[string]map[string]any{
		"fts":      {"where": fts(word)},
		"vector":   {"where": map[string]any{"vector": map[string]any{"target": "content", "query": "shared word " + word}}},
		"metadata": {"where": clause("startswith", "description", "a")},
		"all":      {},
	}
	tests := []struct {
		name   string
		c      *client
		mode   string
		want   []int64
		exact  bool // only these documents exist for the caller
		search map[string]any
	}{
		{name: "owner fts", c: u1.client, mode: "fts", want: []int64{a1, a2}},
		{name: "other group fts", c: u2.client, mode: "fts", want: []int64{b1}},
		{name: "both groups fts", c: both, mode: "fts", want: []int64{a1, a2, b1}},
		{name: "owner vector", c: u1.client, mode: "vector", want: []int64{a1, a2}},
		{name: "other group vector", c: u2.client, mode: "vector", want: []int64{b1}},
		{name: "other group metadata", c: u2.client, mode: "metadata", want: nil},
		{name: "owner metadata", c: u1.client, mode: "metadata", want: []int64{a1, a2}},
		{name: "other group no where", c: u2.client, mode: "all", want: []int64{b1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.c.searchOK(bodies[tc.mode])
			wantIDs(t, tc.name, res.IDs(), tc.want)
			if res.Total != int64(len(tc.want)) {
				t.Errorf("total = %d, want %d (documents of other groups must not count)", res.Total, len(tc.want))
			}
		})
	}
	// A user in no group sees nothing at all.
	lonely := newUser(t, nil)
	if res := lonely.searchOK(map[string]any{"where": fts(word)}); res.Total != 0 || len(res.Results) != 0 {
		t.Errorf("a user without groups found %v (total %d)", res.IDs(), res.Total)
	}
}

// TestSearchSelectSortPaging checks the response fields and paging.
func TestSearchSelectSortPaging(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	var ids []int64
	for i, d := range []string{"delta", "alpha", "echo", "charlie", "bravo"} {
		ids = append(ids, u.uploadText(d+".txt", "paging test "+d, field("description", d), field("date", fmt.Sprintf("2024-01-0%dT10:30:00Z", i+1))))
	}
	u.waitIndexed(ids...)
	byDesc := []int64{ids[1], ids[4], ids[3], ids[0], ids[2]} // alpha bravo charlie delta echo

	res := u.searchOK(map[string]any{"sort": []any{map[string]any{"field": "description", "direction": "asc"}}})
	if fmt.Sprint(res.IDs()) != fmt.Sprint(byDesc) || res.Total != 5 || res.Limit != 20 || res.Offset != 0 {
		t.Fatalf("asc: ids %v total %d limit %d offset %d, want %v 5 20 0", res.IDs(), res.Total, res.Limit, res.Offset, byDesc)
	}
	res = u.searchOK(map[string]any{"sort": []any{map[string]any{"field": "description", "direction": "desc"}}, "limit": 2, "offset": 1})
	if want := []int64{byDesc[3], byDesc[2]}; fmt.Sprint(res.IDs()) != fmt.Sprint(want) || res.Total != 5 || res.Limit != 2 || res.Offset != 1 {
		t.Fatalf("desc page: ids %v total %d limit %d offset %d, want %v 5 2 1", res.IDs(), res.Total, res.Limit, res.Offset, want)
	}
	res = u.searchOK(map[string]any{"sort": []any{map[string]any{"field": "date", "direction": "desc"}}, "offset": 4})
	if fmt.Sprint(res.IDs()) != fmt.Sprint([]int64{ids[0]}) || res.Total != 5 {
		t.Fatalf("last page by date: %v total %d", res.IDs(), res.Total)
	}
	res = u.searchOK(map[string]any{"offset": 10})
	if len(res.Results) != 0 || res.Total != 5 {
		t.Fatalf("past the end: %v total %d", res.IDs(), res.Total)
	}

	// Default select.
	res = u.searchOK(map[string]any{"where": clause("eq", "id", ids[0])})
	keys := map[string]bool{}
	for k := range res.Results[0] {
		keys[k] = true
	}
	for _, k := range []string{"id", "description", "doc_type", "doc_status", "reference_number", "entry_date", "_score"} {
		if !keys[k] {
			t.Errorf("default select lacks %s: %v", k, res.Results[0])
		}
	}
	if len(keys) != 7 {
		t.Errorf("default select returned %v", res.Results[0])
	}

	// Explicit select: types of every kind of field.
	res = u.searchOK(map[string]any{"where": clause("eq", "id", ids[0]), "select": []any{"date", "entry_date", "filesbelongto", "doc_number", "privileged", "description"}})
	r := res.Results[0]
	if r["id"] != float64(ids[0]) {
		t.Errorf("id = %v", r["id"])
	}
	for _, k := range []string{"date", "entry_date"} {
		s, _ := r[k].(string)
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			t.Errorf("%s = %v, want an RFC 3339 string", k, r[k])
		}
	}
	if d, _ := time.Parse(time.RFC3339, r["date"].(string)); !d.Equal(time.Date(2024, 1, 1, 10, 30, 0, 0, time.UTC)) {
		t.Errorf("date = %v, want 2024-01-01T10:30:00Z", r["date"])
	}
	if f, ok := r["filesbelongto"].([]any); !ok || len(f) != 1 || f[0] != float64(u.folder.FolderID) {
		t.Errorf("filesbelongto = %v, want [%d]", r["filesbelongto"], u.folder.FolderID)
	}
	if v, ok := r["doc_number"]; !ok || v != nil {
		t.Errorf("doc_number = %v (present %v), want null", v, ok)
	}
	if r["privileged"] != false || r["description"] != "delta" {
		t.Errorf("privileged/description = %v/%v", r["privileged"], r["description"])
	}
	if _, ok := r["doc_type"]; ok {
		t.Errorf("unselected doc_type returned")
	}
}
