package e2e

import (
	"strings"
	"testing"
)

// TestSearchFTSConstructs uploads documents through the document service,
// waits for the real indexer path (outbox → NATS → indexer → engine), and
// checks every construct of the FTS syntax (docs/api.md §4.8, docs/design.md §6).
func TestSearchFTSConstructs(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	texts := map[string]string{
		"budget":  "The committee approved the annual budget for vaccination programmes in rural districts.",
		"report":  "Vaccinated children showed fewer infections; the annual report lists every district.",
		"greek":   "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu",
		"meeting": "The budget meeting was postponed until spring.",
		"physics": "Quantum chromodynamics lecture notes.",
	}
	ids := map[string]int64{}
	for name, text := range texts {
		ids[name] = u.uploadText(name+".txt", text)
	}
	all := make([]int64, 0, len(ids))
	for _, id := range ids {
		all = append(all, id)
	}
	u.waitIndexed(all...)

	tests := []struct {
		name  string
		query string
		want  []string
	}{
		{name: "bare word is stemmed", query: "vaccination", want: []string{"budget", "report"}},
		{name: "bare words are case-insensitive", query: "QUANTUM", want: []string{"physics"}},
		{name: "implicit and", query: "annual district", want: []string{"budget", "report"}},
		{name: "implicit and, one missing", query: "annual spring", want: nil},
		{name: "phrase", query: `"annual budget"`, want: []string{"budget"}},
		{name: "phrase words must be adjacent", query: `"annual vaccination"`, want: nil},
		{name: "phrase matches exact tokens, not stems", query: `"vaccination children"`, want: nil},
		{name: "phrase of inflected words", query: `"vaccinated children"`, want: []string{"report"}},
		{name: "or", query: "quantum OR postponed", want: []string{"physics", "meeting"}},
		{name: "exclusion", query: "annual -budget", want: []string{"report"}},
		{name: "exclusion of a phrase", query: `budget -"budget meeting"`, want: []string{"budget"}},
		{name: "prefix", query: "chromo*", want: []string{"physics"}},
		{name: "prefix of several words", query: "vacc*", want: []string{"budget", "report"}},
		// alpha and kappa have exactly 8 tokens between them.
		{name: "near at exactly n", query: `*N8"alpha kappa"`, want: []string{"greek"}},
		{name: "near at n+1", query: `*N7"alpha kappa"`, want: nil},
		{name: "near in any order", query: `*N8"kappa alpha"`, want: []string{"greek"}},
		{name: "near default distance 10", query: `*N"alpha kappa"`, want: []string{"greek"}},
		// alpha and mu have exactly 10 tokens between them.
		{name: "near default distance is 10", query: `*N"alpha mu"`, want: []string{"greek"}},
		{name: "near 9 with 10 between", query: `*N9"alpha mu"`, want: nil},
		{name: "near of phrases", query: `*NP"annual report" "every district"`, want: []string{"report"}},
		{name: "near of phrases, one phrase absent", query: `*NP"annual budget" "every district"`, want: nil},
		// One token ("lists") between the two phrases.
		{name: "near of phrases at exactly n", query: `*NP1"annual report" "every district"`, want: []string{"report"}},
		{name: "near of phrases at n+1", query: `*NP0"annual report" "every district"`, want: nil},
		{name: "combined", query: `"annual report" OR chromo* -postponed`, want: []string{"report", "physics"}},
		{name: "stop word alone does not empty a conjunction", query: "the quantum", want: []string{"physics"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := u.searchOK(map[string]any{"where": fts(tc.query), "limit": 50})
			var want []int64
			for _, n := range tc.want {
				want = append(want, ids[n])
			}
			wantIDs(t, tc.query, res.IDs(), want)
			if res.Total != int64(len(want)) {
				t.Errorf("%s: total = %d, want %d", tc.query, res.Total, len(want))
			}
			for _, r := range res.Results {
				if _, ok := r["_score"].(float64); !ok {
					t.Errorf("%s: _score = %v, want a number in FTS mode", tc.query, r["_score"])
				}
			}
		})
	}
}

// TestSearchHighlights: snippets mark matches with <b> and escape the
// document's own markup.
func TestSearchHighlights(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	id := u.uploadText("xss.txt", `Beware: <script>alert("pwned")</script> the zanzibar treaty was signed & sealed. `+strings.Repeat("filler words here ", 40)+"zanzibar again at the end.")
	u.waitIndexed(id)
	res := u.searchOK(map[string]any{"where": fts("zanzibar"), "options": map[string]any{"include_highlights": true, "highlight_length": 100}})
	if len(res.Results) != 1 {
		t.Fatalf("results = %v", res.Results)
	}
	hl, ok := res.Results[0]["_highlights"].([]any)
	if !ok || len(hl) == 0 || len(hl) > 3 {
		t.Fatalf("_highlights = %v, want 1..3 snippets", res.Results[0]["_highlights"])
	}
	joined := ""
	for _, h := range hl {
		s, _ := h.(string)
		joined += s + "\n"
		visible := strings.NewReplacer("<b>", "", "</b>", "", "&lt;", "<", "&gt;", ">", "&amp;", "&", "&#34;", `"`, "&quot;", `"`, "&#39;", "'").Replace(s)
		if n := len([]rune(visible)); n > 100 {
			t.Errorf("snippet of %d visible characters, want at most 100: %q", n, s)
		}
	}
	if !strings.Contains(joined, "<b>zanzibar</b>") {
		t.Errorf("no <b>zanzibar</b> in %q", joined)
	}
	if strings.Contains(joined, "<script>") || !strings.Contains(joined, "&lt;script&gt;") {
		t.Errorf("markup not escaped: %q", joined)
	}
	if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(joined, "<b>", ""), "</b>", ""), "<") {
		t.Errorf("a tag other than <b> in %q", joined)
	}
	// Without the option there are no highlights.
	res = u.searchOK(map[string]any{"where": fts("zanzibar")})
	if _, ok := res.Results[0]["_highlights"]; ok {
		t.Errorf("_highlights returned without include_highlights: %v", res.Results[0])
	}
}
