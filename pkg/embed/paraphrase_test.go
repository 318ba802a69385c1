package embed

import (
	"bufio"
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/scifact"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// paraphrasePair is one line of testdata/paraphrase.tsv: a search query
// and the one document written to answer it in other words.
type paraphrasePair struct {
	query, doc string
}

func loadParaphrases(t testing.TB) []paraphrasePair {
	t.Helper()
	return loadParaphraseFile(t, "testdata/paraphrase.tsv")
}

// loadHeldOutParaphrases reads the pairs written after the use
// embedder's settings were chosen, for reporting only.
func loadHeldOutParaphrases(t testing.TB) []paraphrasePair {
	t.Helper()
	return loadParaphraseFile(t, "testdata/paraphrase_heldout.tsv")
}

func loadParaphraseFile(t testing.TB, path string) []paraphrasePair {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pairs []paraphrasePair
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		query, doc, ok := strings.Cut(text, "\t")
		if !ok || strings.TrimSpace(query) == "" || strings.TrimSpace(doc) == "" {
			t.Fatalf("%s:%d: want a query, a tab and a document: %q", path, line, text)
		}
		pairs = append(pairs, paraphrasePair{query, doc})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return pairs
}

// contentStems are a text's words as full-text search sees them:
// lowercased, stop words dropped, Snowball-stemmed.
func contentStems(text string) map[string]bool {
	stems := map[string]bool{}
	for _, w := range tokenize(text, 1<<20) {
		if !stopWords[w] {
			stems[stemWord(w)] = true
		}
	}
	return stems
}

// TestParaphraseSet holds the set to what makes it a test of meaning:
// at least 50 pairs, and no query shares a content word with its
// document, so word matching alone cannot pair them.
func TestParaphraseSet(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pairs   []paraphrasePair
		atLeast int
	}{
		{name: "paraphrase.tsv", pairs: loadParaphrases(t), atLeast: 50},
		{name: "paraphrase_heldout.tsv", pairs: loadHeldOutParaphrases(t), atLeast: 30},
	} {
		t.Run(tc.name, func(t *testing.T) { checkParaphraseSet(t, tc.pairs, tc.atLeast) })
	}
}

func checkParaphraseSet(t *testing.T, pairs []paraphrasePair, atLeast int) {
	if len(pairs) < atLeast {
		t.Errorf("%d pairs, want at least %d", len(pairs), atLeast)
	}
	seen := map[string]bool{}
	for _, p := range pairs {
		if seen[p.doc] {
			t.Errorf("document %q appears twice", p.doc)
		}
		seen[p.doc] = true
		q := contentStems(p.query)
		if len(q) == 0 {
			t.Errorf("query %q has no content word", p.query)
		}
		for s := range contentStems(p.doc) {
			if q[s] {
				t.Errorf("query %q shares the word %q with its document %q", p.query, s, p.doc)
			}
		}
	}
}

// paraphraseHits embeds the pairs' documents (plus extra distractor
// documents) and reports for how many queries the pair's document is
// among the k nearest by L2 distance.
func paraphraseHits(t testing.TB, e Embedder, pairs []paraphrasePair, queries []string, distractors []string, k int) int {
	t.Helper()
	ctx := context.Background()
	docs := make([]string, 0, len(pairs)+len(distractors))
	for _, p := range pairs {
		docs = append(docs, p.doc)
	}
	docs = append(docs, distractors...)
	var docVecs [][]float32
	for start := 0; start < len(docs); start += 256 {
		vs, err := e.Embed(ctx, docs[start:min(start+256, len(docs))])
		if err != nil {
			t.Fatal(err)
		}
		docVecs = append(docVecs, vs...)
	}
	qVecs, err := EmbedQueries(ctx, e, queries)
	if err != nil {
		t.Fatal(err)
	}
	type hit struct {
		doc  int
		dist float64
	}
	found := 0
	hits := make([]hit, len(docVecs))
	for i, qv := range qVecs {
		for d, dv := range docVecs {
			hits[d] = hit{d, squaredL2(qv, dv)}
		}
		slices.SortFunc(hits, func(a, b hit) int {
			return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(a.doc, b.doc))
		})
		for _, h := range hits[:min(k, len(hits))] {
			if h.doc == i {
				found++
				break
			}
		}
	}
	return found
}

// TestParaphraseRetrieval measures how often each embedder finds a
// query's paraphrase among its 10 nearest documents: among the set's own
// documents, and among them plus SciFact's 5,183 abstracts when the
// shared data is present. The hash embedder runs always (its figure is
// the floor a semantic model is compared with); the local embedder runs
// when DOCREPO_EMBED_MODEL_DIR names a pre-trained model and must find
// at least 80 %. The harness is checked first: each document as its own
// query is its own nearest neighbour.
func TestParaphraseRetrieval(t *testing.T) {
	pairs := loadParaphrases(t)
	var queries, selfQueries []string
	for _, p := range pairs {
		queries = append(queries, p.query)
		selfQueries = append(selfQueries, p.doc)
	}
	var distractors []string
	if !testing.Short() {
		if _, ok := testenv.FindDataDir("scifact", "corpus.jsonl"); ok || os.Getenv(scifact.EnvDir) != "" {
			distractors = loadSciFact(t).docs
		} else {
			t.Log("SciFact not found (shared/data/scifact): measuring among the set's own documents only")
		}
	}
	hash, err := NewHash(DefaultHashDimensions)
	if err != nil {
		t.Fatal(err)
	}
	type subject struct {
		name    string
		e       Embedder
		atLeast float64 // share of pairs found in the top 10 that is required
	}
	subjects := []subject{{name: hash.Name(), e: hash}}
	if dir := os.Getenv("DOCREPO_EMBED_MODEL_DIR"); dir != "" {
		local, err := NewLocal(LocalConfig{ModelDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, subject{name: local.Name(), e: local, atLeast: 0.80})
	} else {
		t.Log("DOCREPO_EMBED_MODEL_DIR is not set: the local embedder is not measured")
	}
	for _, s := range subjects {
		if self := paraphraseHits(t, s.e, pairs, selfQueries, nil, 1); self != len(pairs) {
			t.Errorf("%s: a document as its own query is its nearest document for %d of %d; want all", s.name, self, len(pairs))
		}
		own := paraphraseHits(t, s.e, pairs, queries, nil, 10)
		line := []any{s.name, own, len(pairs), 100 * float64(own) / float64(len(pairs)), len(pairs)}
		format := "%s: paraphrase in the top 10 for %d of %d queries (%.0f %%) among %d documents"
		found := own
		if len(distractors) > 0 {
			found = paraphraseHits(t, s.e, pairs, queries, distractors, 10)
			format += "; %d (%.0f %%) among %d with SciFact's abstracts"
			line = append(line, found, 100*float64(found)/float64(len(pairs)), len(pairs)+len(distractors))
		}
		t.Logf(format, line...)
		if share := float64(found) / float64(len(pairs)); share < s.atLeast {
			t.Errorf("%s finds %.0f %% of the paraphrases in its top 10, want at least %.0f %%", s.name, 100*share, 100*s.atLeast)
		}
	}
}

// splitPairs returns the pairs' queries and documents, in order.
func splitPairs(pairs []paraphrasePair) (queries, docs []string) {
	for _, p := range pairs {
		queries, docs = append(queries, p.query), append(docs, p.doc)
	}
	return queries, docs
}

// tuneCacheDir holds the tuning tests' cached vectors (TestUSETune writes
// them; the others read them).
var tuneCacheDir = filepath.Join(os.TempDir(), "docrepo-use-tune")

// makeTuneCacheDir creates tuneCacheDir.
func makeTuneCacheDir(t testing.TB) {
	t.Helper()
	if err := os.MkdirAll(tuneCacheDir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// sciFactClaims returns the texts of SciFact's test claims, in order.
func sciFactClaims(sf *scifactData) []string {
	var claims []string
	for _, q := range sf.Queries {
		claims = append(claims, q.Text)
	}
	return claims
}

// stemDF counts, per stem outside the stop words, the texts (of all the
// sets) that hold it: the tuning harness's word statistics.
func stemDF(sets ...[]string) map[string]int {
	df := map[string]int{}
	for _, texts := range sets {
		for _, text := range texts {
			seen := map[string]bool{}
			for _, w := range tokenize(text, maxHashTokens) {
				if !stopWords[w] {
					seen[stems.stem(w)] = true
				}
			}
			for s := range seen {
				df[s]++
			}
		}
	}
	return df
}

// dfStats answers EmbedQueriesWithStats from df over docs documents.
func dfStats(df map[string]int, docs int) WordStats {
	return func(ctx context.Context, words []string) ([]int64, int64, error) {
		out := make([]int64, len(words))
		for i, w := range words {
			out[i] = int64(df[stems.stem(w)])
		}
		return out, int64(docs), nil
	}
}

// storedPassages rebuilds, per document, the passages EmbedPassages
// stores (its windows, the weighted halves, contentPassages) from the
// encoder's cached parts of the documents; windows counts the windows
// before contentPassages.
func storedPassages(t testing.TB, u *USE, docs []string, parts blendParts) (out [][]Passage, windows int) {
	t.Helper()
	k := 0
	for i, text := range docs {
		var dps []Passage
		for _, w := range u.windows(text, DefaultMaxPassages) {
			if parts.doc[k] != i {
				t.Fatal("passage order")
			}
			v := make([]float32, u.id.Dimensions)
			for d, x := range parts.sem[k] {
				v[d] = u.sw * x
			}
			for d, x := range parts.lex[k] {
				v[u.lexOff+d] = u.lw * x
			}
			if u.glove != nil {
				// As EmbedPassages: the window's GloVe vector.
				if gv := u.gloveVector(text[w[0]:w[1]]); gv != nil {
					for d, x := range gv {
						v[u.gloveOff+d] = u.gw * x
					}
				}
			}
			k++
			dps = append(dps, Passage{Start: w[0], End: w[1], Vector: v})
		}
		windows += len(dps)
		out = append(out, u.contentPassages(text, dps))
	}
	return out, windows
}
