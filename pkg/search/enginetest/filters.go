package enginetest

import (
	"fmt"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// metaDocs are the documents of the filter, mixed and sort cases.
var metaDocs = []engine.Document{
	{
		ID: 101, DocType: ptr("Invoice"), DocStatus: ptr("Open"), Description: ptr("Annual Tax Report 2024"),
		ReferenceNumber: ptr("REF-001"), Date: date("2024-01-31T15:00:00Z"), EntryDate: date("2024-02-01T08:00:00Z"),
		FolderIDs: []int64{3, 7}, Content: "tax report for the year",
	},
	{
		ID: 102, DocType: ptr("Contract"), DocStatus: ptr("Closed"), Description: ptr("Service contract for cleaning"),
		ReferenceNumber: ptr("REF-002"), Date: date("2024-02-01T00:00:00Z"), Privileged: true, IsLocked: true,
		FolderIDs: []int64{7}, Content: "cleaning services agreement",
	},
	{
		ID: 103, DocType: ptr("invoice"), DocStatus: ptr("Open"), Description: ptr("Invoice for March"),
		ReferenceNumber: ptr("A.B*C(1)?"), Date: date("2023-12-31T23:59:59Z"), Content: "invoice march",
	},
	{
		ID: 104, DocStatus: ptr("Draft"), FolderIDs: []int64{9},
	},
	{
		ID: 105, DocType: ptr("Letter"), DocStatus: ptr("Open"), Description: ptr("Letter to the tax office"),
		Date: date("2024-01-31T00:00:00Z"), Privileged: true, FolderIDs: []int64{3}, Content: "letter tax office",
	},
}

// The string fields other than those above: each document has its own
// value, "<field>-<id>-Value" (106 has none).
var otherStringFields = []string{"doc_number", "from_entity", "to_entity", "entry_person", "rev_number", "subdoctype"}

func withOtherStrings(docs []engine.Document) []engine.Document {
	out := make([]engine.Document, len(docs))
	for i, d := range docs {
		v := func(f string) *string { return ptr(fmt.Sprintf("%s-%d-Value", f, d.ID)) }
		d.DocNumber, d.FromEntity, d.ToEntity = v("doc_number"), v("from_entity"), v("to_entity")
		d.EntryPerson, d.RevNumber, d.Subdoctype = v("entry_person"), v("rev_number"), v("subdoctype")
		out[i] = d
	}
	return append(out, engine.Document{ID: 106, DocStatus: ptr("Draft")})
}

func eq(op, field, value string) string {
	return fmt.Sprintf(`{%q: {"field": %q, "value": %s}}`, op, field, value)
}

func testFilters(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	e := load(t, newEngine, withOtherStrings(metaDocs))
	all := []int64{101, 102, 103, 104, 105, 106}
	cases := []setCase{
		// Strings: eq/ne exact and case-sensitive; ne matches documents
		// lacking the field.
		{name: "string eq", where: eq("eq", "doc_type", `"Invoice"`), want: []int64{101}},
		{name: "string eq is case-sensitive", where: eq("eq", "doc_type", `"INVOICE"`), want: []int64{}},
		{name: "string ne includes missing", where: eq("ne", "doc_type", `"Invoice"`), want: []int64{102, 103, 104, 105, 106}},
		{name: "string in", where: eq("in", "doc_type", `["Invoice", "Letter", "Nothing"]`), want: []int64{101, 105}},
		{name: "string nin includes missing", where: eq("nin", "doc_type", `["Invoice", "Letter"]`), want: []int64{102, 103, 104, 106}},
		{name: "string gt lexicographic", where: eq("gt", "doc_type", `"Invoice"`), want: []int64{103, 105}},
		{name: "string gte", where: eq("gte", "doc_type", `"Invoice"`), want: []int64{101, 103, 105}},
		{name: "string lt", where: eq("lt", "doc_type", `"Invoice"`), want: []int64{102}},
		{name: "string lte", where: eq("lte", "doc_type", `"Invoice"`), want: []int64{101, 102}},
		{name: "string range excludes missing", where: eq("gte", "doc_type", `""`), want: []int64{101, 102, 103, 105}},
		{name: "contains case-insensitive", where: eq("contains", "doc_type", `"VOICE"`), want: []int64{101, 103}},
		{name: "startswith case-insensitive", where: eq("startswith", "doc_type", `"inV"`), want: []int64{101, 103}},
		{name: "startswith is a prefix", where: eq("startswith", "doc_type", `"voice"`), want: []int64{}},
		{name: "contains words", where: eq("contains", "description", `"tax"`), want: []int64{101, 105}},
		{name: "contains across words", where: eq("contains", "description", `"L TAX R"`), want: []int64{101}},
		{name: "startswith with space", where: eq("startswith", "description", `"annual t"`), want: []int64{101}},
		{name: "contains wildcard characters literally", where: eq("contains", "reference_number", `".b*c(1)?"`), want: []int64{103}},
		{name: "contains star literally", where: eq("contains", "reference_number", `"*"`), want: []int64{103}},
		{name: "contains question mark literally", where: eq("contains", "reference_number", `"ref-00?"`), want: []int64{}},
		{name: "startswith dash", where: eq("startswith", "reference_number", `"ref-"`), want: []int64{101, 102}},
		{name: "contains whole value", where: eq("contains", "reference_number", `"ref-002"`), want: []int64{102}},
		{name: "status eq", where: eq("eq", "doc_status", `"Open"`), want: []int64{101, 103, 105}},

		// id.
		{name: "id eq", where: eq("eq", "id", `102`), want: []int64{102}},
		{name: "id ne", where: eq("ne", "id", `102`), want: []int64{101, 103, 104, 105, 106}},
		{name: "id in", where: eq("in", "id", `[101, 105, 999]`), want: []int64{101, 105}},
		{name: "id nin", where: eq("nin", "id", `[101, 105]`), want: []int64{102, 103, 104, 106}},
		{name: "id gt", where: eq("gt", "id", `103`), want: []int64{104, 105, 106}},
		{name: "id gte", where: eq("gte", "id", `103`), want: []int64{103, 104, 105, 106}},
		{name: "id lt", where: eq("lt", "id", `102`), want: []int64{101}},
		{name: "id lte", where: eq("lte", "id", `102`), want: []int64{101, 102}},

		// filesbelongto: multi-valued; eq/in/ranges match any value, ne/nin
		// mean no value matches (also no value at all).
		{name: "folders eq any", where: eq("eq", "filesbelongto", `7`), want: []int64{101, 102}},
		{name: "folders ne", where: eq("ne", "filesbelongto", `7`), want: []int64{103, 104, 105, 106}},
		{name: "folders in", where: eq("in", "filesbelongto", `[3, 9]`), want: []int64{101, 104, 105}},
		{name: "folders nin", where: eq("nin", "filesbelongto", `[3, 9]`), want: []int64{102, 103, 106}},
		{name: "folders gt", where: eq("gt", "filesbelongto", `7`), want: []int64{104}},
		{name: "folders gte", where: eq("gte", "filesbelongto", `7`), want: []int64{101, 102, 104}},
		{name: "folders lt", where: eq("lt", "filesbelongto", `4`), want: []int64{101, 105}},
		{name: "folders lte any value", where: eq("lte", "filesbelongto", `3`), want: []int64{101, 105}},

		// Dates: a bare date is the whole UTC day in eq/ne/in/nin; in
		// ranges gte/lt start at its first instant, gt/lte end at its last.
		{name: "date eq day", where: eq("eq", "date", `"2024-01-31"`), want: []int64{101, 105}},
		{name: "date ne day includes missing", where: eq("ne", "date", `"2024-01-31"`), want: []int64{102, 103, 104, 106}},
		{name: "date eq instant", where: eq("eq", "date", `"2024-01-31T15:00:00Z"`), want: []int64{101}},
		{name: "date eq instant with offset", where: eq("eq", "date", `"2024-01-31T16:00:00+01:00"`), want: []int64{101}},
		{name: "date eq instant without zone is UTC", where: eq("eq", "date", `"2024-02-01T00:00:00"`), want: []int64{102}},
		{name: "date ne instant", where: eq("ne", "date", `"2024-01-31T15:00:00Z"`), want: []int64{102, 103, 104, 105, 106}},
		{name: "date gt day", where: eq("gt", "date", `"2024-01-31"`), want: []int64{102}},
		{name: "date gte day", where: eq("gte", "date", `"2024-01-31"`), want: []int64{101, 102, 105}},
		{name: "date lt day", where: eq("lt", "date", `"2024-01-31"`), want: []int64{103}},
		{name: "date lte day includes the day", where: eq("lte", "date", `"2024-01-31"`), want: []int64{101, 103, 105}},
		{name: "date gt instant", where: eq("gt", "date", `"2024-01-31T14:59:59Z"`), want: []int64{101, 102}},
		{name: "date lt instant", where: eq("lt", "date", `"2024-01-31T15:00:00Z"`), want: []int64{103, 105}},
		{name: "date lte instant", where: eq("lte", "date", `"2024-01-31T15:00:00Z"`), want: []int64{101, 103, 105}},
		{name: "date in days", where: eq("in", "date", `["2024-02-01", "2023-12-31"]`), want: []int64{102, 103}},
		{name: "date nin days", where: eq("nin", "date", `["2024-02-01", "2023-12-31"]`), want: []int64{101, 104, 105, 106}},
		{name: "date far range", where: eq("gte", "date", `"0001-01-01"`), want: []int64{101, 102, 103, 105}},
		{name: "date far range end", where: eq("lte", "date", `"9999-12-31"`), want: []int64{101, 102, 103, 105}},
		{name: "date eq last day", where: eq("eq", "date", `"9999-12-31"`), want: []int64{}},
		{name: "entry_date", where: eq("lt", "entry_date", `"2024-03-01"`), want: []int64{101}},
		{name: "entry_date eq day", where: eq("eq", "entry_date", `"2024-02-01"`), want: []int64{101}},

		// Booleans.
		{name: "bool eq true", where: eq("eq", "privileged", `true`), want: []int64{102, 105}},
		{name: "bool eq false", where: eq("eq", "privileged", `false`), want: []int64{101, 103, 104, 106}},
		{name: "bool ne true", where: eq("ne", "privileged", `true`), want: []int64{101, 103, 104, 106}},
		{name: "bool in", where: eq("in", "islocked", `[true]`), want: []int64{102}},
		{name: "bool in both", where: eq("in", "islocked", `[true, false]`), want: all},
		{name: "bool nin", where: eq("nin", "islocked", `[true]`), want: []int64{101, 103, 104, 105, 106}},

		// and, or, not.
		{name: "and", where: `{"and": [` + eq("eq", "doc_status", `"Open"`) + `, ` + eq("eq", "privileged", `true`) + `]}`, want: []int64{105}},
		{name: "or", where: `{"or": [` + eq("eq", "doc_type", `"Contract"`) + `, ` + eq("eq", "doc_status", `"Draft"`) + `]}`, want: []int64{102, 104, 106}},
		{name: "not", where: `{"not": ` + eq("eq", "doc_type", `"Invoice"`) + `}`, want: []int64{102, 103, 104, 105, 106}},
		{name: "not matches missing field", where: `{"not": ` + eq("contains", "description", `"tax"`) + `}`, want: []int64{102, 103, 104, 106}},
		{name: "not of range matches missing", where: `{"not": ` + eq("lt", "date", `"2024-01-31"`) + `}`, want: []int64{101, 102, 104, 105, 106}},
		{name: "not of or", where: `{"not": {"or": [` + eq("eq", "doc_status", `"Open"`) + `, ` + eq("eq", "id", `104`) + `]}}`, want: []int64{102, 106}},
		{name: "nested", where: `{"and": [{"or": [` + eq("eq", "doc_type", `"Invoice"`) + `, ` + eq("eq", "doc_type", `"invoice"`) + `]}, {"not": ` + eq("eq", "filesbelongto", `7`) + `}]}`, want: []int64{103}},
	}
	// Every other string field: eq, ne, contains, startswith, in, gt.
	for _, f := range otherStringFields {
		v := fmt.Sprintf("%s-%d-Value", f, 103)
		cases = append(cases,
			setCase{name: f + " eq", where: eq("eq", f, fmt.Sprintf("%q", v)), want: []int64{103}},
			setCase{name: f + " ne", where: eq("ne", f, fmt.Sprintf("%q", v)), want: []int64{101, 102, 104, 105, 106}},
			setCase{name: f + " contains", where: eq("contains", f, `"-103-VALUE"`), want: []int64{103}},
			setCase{name: f + " startswith", where: eq("startswith", f, fmt.Sprintf("%q", f+"-10")), want: []int64{101, 102, 103, 104, 105}},
			setCase{name: f + " in", where: eq("in", f, fmt.Sprintf("[%q, \"x\"]", v)), want: []int64{103}},
			setCase{name: f + " gt", where: eq("gt", f, fmt.Sprintf("%q", v)), want: []int64{104, 105}},
		)
	}
	runSetCases(t, e, admin, cases)
}

// testMixed: fts clauses combined with metadata clauses in the where tree.
func testMixed(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	e := load(t, newEngine, metaDocs)
	runSetCases(t, e, admin, []setCase{
		{name: "fts and filter", where: `{"and": [` + ftsWhere("tax") + `, ` + eq("eq", "doc_type", `"Letter"`) + `]}`, want: []int64{105}},
		{name: "fts or filter", where: `{"or": [` + ftsWhere("cleaning") + `, ` + eq("eq", "doc_status", `"Draft"`) + `]}`, want: []int64{102, 104}},
		{name: "not fts", where: `{"not": ` + ftsWhere("tax") + `}`, want: []int64{102, 103, 104}},
		{name: "fts and not filter", where: `{"and": [` + ftsWhere("tax") + `, {"not": ` + eq("eq", "doc_type", `"Letter"`) + `}]}`, want: []int64{101}},
		{name: "or of fts-and-filter", where: `{"or": [{"and": [` + ftsWhere("tax") + `, ` + eq("eq", "privileged", `true`) + `]}, ` + eq("eq", "id", `103`) + `]}`, want: []int64{103, 105}},
	})
	t.Run("scores of metadata-only matches", func(t *testing.T) {
		res := search(t, e, body(`{"or": [`+ftsWhere("cleaning")+`, `+eq("eq", "doc_status", `"Draft"`)+`]}`), admin)
		for _, h := range res.Hits {
			if h.Score == nil {
				t.Errorf("hit %d: score nil in an fts mode", h.ID)
			}
		}
		wantOrder(t, res, []int64{102, 104})
	})
}
