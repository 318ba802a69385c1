package enginetest

import (
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// ftsDocs are the documents of the full-text cases.
var ftsDocs = []engine.Document{
	{ID: 1, Content: "The annual report on tax policy was published in March."},
	{ID: 2, Content: "Annual reporting of taxes is required; the report is annual."},
	{ID: 3, Content: "Quick brown fox jumps over the lazy dog."},
	{ID: 4, Content: "Dog barked at brown fox."},
	{ID: 5, Content: "Running runners run quickly while the runner ran home."},
	{ID: 6, Content: "Send an e-mail about COVID-19 testing."},
	{ID: 7, Content: "The email about testing arrived."},
	{ID: 8, Content: "Cats and dogs."},

	// NEAR, single words: apple and banana with 0, 1, 2, 3 tokens between,
	// and reversed with 2 between.
	{ID: 20, Content: "apple banana"},
	{ID: 21, Content: "apple zz banana"},
	{ID: 22, Content: "apple zz zz banana"},
	{ID: 23, Content: "apple zz zz zz banana"},
	{ID: 24, Content: "banana zz zz apple"},
	// Three clauses.
	{ID: 26, Content: "kiwi lime zz mango"},
	{ID: 27, Content: "kiwi zz lime zz zz mango"},

	// NEAR of phrases (*NP).
	{ID: 30, Content: "red cherry zz green melon"},
	{ID: 31, Content: "red cherry zz zz green melon"},
	{ID: 32, Content: "green melon red cherry"},
	{ID: 33, Content: "cherry red zz melon green"},
	{ID: 34, Content: "red zz cherry green melon"},
}

func testFTS(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	e := load(t, newEngine, ftsDocs)
	cases := []struct {
		name  string
		query string
		want  []int64
	}{
		// Bare words: stemmed, case-insensitive.
		{name: "word", query: "fox", want: []int64{3, 4}},
		{name: "word upper case", query: "FOX", want: []int64{3, 4}},
		{name: "word stemmed plural", query: "reports", want: []int64{1, 2}},
		{name: "word stem of -ing form", query: "report", want: []int64{1, 2}},
		{name: "word matches stemmed plural in content", query: "dog", want: []int64{3, 4, 8}},
		{name: "word stemmed taxes", query: "taxes", want: []int64{1, 2}},
		{name: "word stemmed verb", query: "runs", want: []int64{5}},
		{name: "implicit and", query: "brown lazy", want: []int64{3}},
		{name: "implicit and no match", query: "fox cats", want: []int64{}},
		{name: "word not in index", query: "zebra", want: []int64{}},
		{name: "trailing punctuation ignored", query: "fox.", want: []int64{3, 4}},

		// Phrases: exact lowercased tokens, adjacent, in order.
		{name: "phrase", query: `"annual report"`, want: []int64{1}},
		{name: "phrase case-insensitive", query: `"Annual REPORT"`, want: []int64{1}},
		{name: "phrase is not stemmed", query: `"reporting"`, want: []int64{2}},
		{name: "phrase single word exact", query: `"dog"`, want: []int64{3, 4}},
		{name: "phrase keeps stop words", query: `"the lazy dog"`, want: []int64{3}},
		{name: "phrase two docs", query: `"brown fox"`, want: []int64{3, 4}},
		{name: "phrase wrong order", query: `"fox brown"`, want: []int64{}},
		{name: "phrase and word", query: `"brown fox" lazy`, want: []int64{3}},
		{name: "phrase with stop words inside", query: `"jumps over the lazy"`, want: []int64{3}},
		{name: "phrase of stop words", query: `"over the"`, want: []int64{3}},
		{name: "phrase with stop word, wrong neighbour", query: `"over the dog"`, want: []int64{}},

		// Prefixes: exact lowercased tokens.
		{name: "prefix", query: "run*", want: []int64{5}},
		{name: "prefix upper case", query: "RUN*", want: []int64{5}},
		{name: "prefix matches several words", query: "repo*", want: []int64{1, 2}},
		{name: "prefix is exact, not stemmed", query: "reporti*", want: []int64{2}},
		{name: "prefix whole word", query: "fox*", want: []int64{3, 4}},
		{name: "prefix without expansion", query: "zzz*", want: []int64{}},
		{name: "prefix and word", query: "qui* dog", want: []int64{3}},

		// NEAR, single words: at most n other tokens between, any order.
		{name: "near default distance", query: `*N"apple banana"`, want: []int64{20, 21, 22, 23, 24}},
		{name: "near 0 adjacent only", query: `*N0"apple banana"`, want: []int64{20}},
		{name: "near 1", query: `*N1"apple banana"`, want: []int64{20, 21}},
		{name: "near 2 includes exactly 2 apart both orders", query: `*N2"apple banana"`, want: []int64{20, 21, 22, 24}},
		{name: "near 3", query: `*N3"apple banana"`, want: []int64{20, 21, 22, 23, 24}},
		{name: "near order of words irrelevant", query: `*N1"banana apple"`, want: []int64{20, 21}},
		{name: "near case-insensitive", query: `*N1"APPLE Banana"`, want: []int64{20, 21}},
		{name: "near is exact not stemmed", query: `*N1"apples banana"`, want: []int64{}},
		{name: "near three words within 1", query: `*N1"kiwi lime mango"`, want: []int64{26}},
		{name: "near three words within 2 excludes 3 apart", query: `*N2"mango kiwi lime"`, want: []int64{26}},
		{name: "near three words within 3", query: `*N3"kiwi lime mango"`, want: []int64{26, 27}},
		{name: "near missing word", query: `*N5"apple kiwi"`, want: []int64{}},

		// NEAR of phrases: each phrase intact.
		{name: "near phrases 1 apart", query: `*NP1"red cherry" "green melon"`, want: []int64{30, 32}},
		{name: "near phrases 0", query: `*NP0"red cherry" "green melon"`, want: []int64{32}},
		{name: "near phrases 2", query: `*NP2"red cherry" "green melon"`, want: []int64{30, 31, 32}},
		{name: "near phrases default", query: `*NP"green melon" "red cherry"`, want: []int64{30, 31, 32}},
		{name: "near phrase with a single word", query: `*NP1"red cherry" "green"`, want: []int64{30, 32}},
		{name: "near phrase with stop words, n+1 apart", query: `*NP3"the lazy" "quick"`, want: []int64{}},
		{name: "near phrase with stop words, n apart", query: `*NP4"the lazy" "quick"`, want: []int64{3}},

		// Exclusion.
		{name: "exclude word", query: "fox -lazy", want: []int64{4}},
		{name: "exclude phrase", query: `fox -"lazy dog"`, want: []int64{4}},
		{name: "exclude stemmed word", query: "dog -cat", want: []int64{3, 4}},
		{name: "exclude prefix", query: "dog -laz*", want: []int64{4, 8}},
		{name: "exclude near", query: `banana -*N0"apple banana"`, want: []int64{21, 22, 23, 24}},

		// OR binds tighter than the implicit AND.
		{name: "or", query: "cats OR lazy", want: []int64{3, 8}},
		{name: "or three", query: "cats OR lazy OR barked", want: []int64{3, 4, 8}},
		{name: "or precedence: a (b OR c)", query: "barked cats OR lazy", want: []int64{}},
		{name: "or precedence: (a OR b) c", query: "lazy OR barked dog", want: []int64{3, 4}},
		{name: "or of phrase and prefix", query: `"annual report" OR runn*`, want: []int64{1, 5}},
		{name: "or with exclusion", query: "cats OR fox -lazy", want: []int64{4, 8}},

		// Stop words never make a conjunction match nothing.
		{name: "stop word dropped from and", query: "a fox", want: []int64{3, 4}},
		{name: "stop words dropped from and", query: "the fox of the", want: []int64{3, 4}},
		{name: "stop word in or dropped", query: "fox the OR cats", want: []int64{}},
		{name: "only stop words match exactly", query: "the", want: []int64{1, 2, 3, 5, 7}},
		{name: "only stop words, and", query: "the an", want: []int64{}},
		{name: "only stop words, or", query: "the OR an", want: []int64{1, 2, 3, 5, 6, 7}},
		{name: "excluded stop word excludes nothing", query: "fox -the", want: []int64{3, 4}},
		{name: "punctuation word ignored", query: "fox &", want: []int64{3, 4}},
		{name: "punctuation only matches nothing", query: "&", want: []int64{}},

		// A word the analyzer splits is a phrase of its tokens.
		{name: "split word e-mail", query: "e-mail", want: []int64{6}},
		{name: "unsplit word email", query: "email", want: []int64{7}},
		{name: "split word COVID-19", query: "COVID-19", want: []int64{6}},
		{name: "part of split word", query: "covid", want: []int64{6}},
		{name: "split word in phrase", query: `"an e-mail about"`, want: []int64{6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantSet(t, search(t, e, body(ftsWhere(tc.query), `"limit": 500`), admin), tc.want)
		})
	}

	// Two fts clauses, and fts under or/not.
	runSetCases(t, e, admin, []setCase{
		{name: "and of fts clauses", where: `{"and": [` + ftsWhere("fox") + `, ` + ftsWhere("barked") + `]}`, want: []int64{4}},
		{name: "or of fts clauses", where: `{"or": [` + ftsWhere("cats") + `, ` + ftsWhere("barked") + `]}`, want: []int64{4, 8}},
		{name: "not fts", where: `{"and": [` + ftsWhere("fox") + `, {"not": ` + ftsWhere("lazy") + `}]}`, want: []int64{4}},
	})
}
