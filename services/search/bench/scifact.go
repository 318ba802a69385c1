package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// scifact uploads the SciFact corpus through the gateway (one text/plain
// document per abstract: title + " " + text), waits for the indexer, and
// scores the 300 test claims: BM25 (the claim's words joined by OR),
// vector-only (the claim embedded by the service's embedder) and both
// (BM25 over the matches among the 100 nearest). With the search
// process's metrics address it first waits for the content vectors.
func (b *bench) scifact(ctx context.Context) error {
	dir, ok := b.findSciFact()
	if !ok {
		b.printf("\n## SciFact\nskipped: shared/data/scifact not found above the working directory (set -scifact or DOCREPO_SCIFACT_DIR)\n")
		return nil
	}
	sf, err := scifact.Load(dir)
	if err != nil {
		return err
	}
	corpus := sf.Docs
	corpusID := make(map[int64]string, len(corpus))
	var paraIDs map[string][]int64
	sets, err := b.paraphraseSets()
	if err != nil {
		return err
	}
	if st, ok, err := readSciFactState(b.s.scifactState); err != nil {
		return err
	} else if ok {
		// Scored again: the corpus a previous run uploaded.
		b.api, b.token = b.api.WithToken(st.Token), st.Token
		for id, cid := range st.IDs {
			corpusID[id] = cid
		}
		paraIDs = st.Paraphrases
		b.printf("\n## SciFact (BEIR test split), scored again on the corpus of %s\n", b.s.scifactState)
		if emb, err := b.embedder(ctx); err == nil {
			b.printf("embedder: %s\n", emb)
		}
		if err := b.scoreSciFact(ctx, sf, corpusID); err != nil {
			return err
		}
		return b.scoreParaphrases(ctx, sets, paraIDs, len(corpus))
	}
	if err := b.newTenant(ctx, "scifact"); err != nil {
		return err
	}
	// The paraphrase sets' documents after the abstracts, in the same
	// tenant: the abstracts are their distractors.
	var paraDocs []string
	for _, set := range sets {
		for _, p := range set.pairs {
			paraDocs = append(paraDocs, p[1])
		}
	}
	ids, took, err := b.uploadAll(ctx, len(corpus)+len(paraDocs), func(i int) (string, string, map[string]string) {
		if i >= len(corpus) {
			return fmt.Sprintf("paraphrase-%d.txt", i-len(corpus)), paraDocs[i-len(corpus)], nil
		}
		d := corpus[i]
		return d.ID + ".txt", d.Content(), map[string]string{"description": truncate(d.Title, 400)}
	})
	if err != nil {
		return err
	}
	start := time.Now().Add(-took)
	doneAt, err := b.waitAll(ctx, len(ids))
	if err != nil {
		return err
	}
	vecAt, vecKnown, err := b.waitVectors(ctx)
	if err != nil {
		return err
	}
	for i, id := range ids[:len(corpus)] {
		corpusID[id] = corpus[i].ID
	}
	paraIDs = map[string][]int64{}
	next := len(corpus)
	for _, set := range sets {
		paraIDs[set.name] = ids[next : next+len(set.pairs)]
		next += len(set.pairs)
	}
	if b.s.scifactState != "" {
		if err := writeSciFactState(b.s.scifactState, sciFactState{Token: b.token, IDs: corpusID, Paraphrases: paraIDs}); err != nil {
			return err
		}
	}
	b.printf("\n## SciFact (BEIR test split) through the real indexing path\n")
	b.printf("corpus: %d abstracts uploaded through POST /apiv2/pub/documents/upload (%d parallel) in %v (%.0f docs/s); all searchable %v after the first upload (%.0f docs/s end to end)\n",
		len(corpus), b.s.concurrency, took.Round(time.Millisecond), float64(len(corpus))/took.Seconds(),
		doneAt.Sub(start).Round(time.Millisecond), float64(len(corpus))/doneAt.Sub(start).Seconds())
	if vecKnown {
		b.printf("content vectors: all made %v after the first upload (%v after the text was searchable)\n",
			vecAt.Sub(start).Round(time.Millisecond), vecAt.Sub(doneAt).Round(time.Millisecond))
	}
	if emb, err := b.embedder(ctx); err == nil {
		b.printf("embedder: %s\n", emb)
	}
	if err := b.scoreSciFact(ctx, sf, corpusID); err != nil {
		return err
	}
	return b.scoreParaphrases(ctx, sets, paraIDs, len(corpus))
}

// scoreSciFact scores the test claims against the uploaded corpus
// (corpusID: document id → SciFact id).
func (b *bench) scoreSciFact(ctx context.Context, sf *scifact.Collection, corpusID map[int64]string) error {
	type mode struct {
		name  string
		where func(q string) client.Clause
	}
	modes := []mode{
		{name: "BM25 (words joined by OR)", where: func(q string) client.Clause { return client.FTS(scifact.ORQuery(q)) }},
		{name: "vector-only (content)", where: func(q string) client.Clause { return client.Vector("content", q) }},
		{name: "FTS + vector (BM25 among the 100 nearest)", where: func(q string) client.Clause {
			return client.And(client.FTS(scifact.ORQuery(q)), client.Vector("content", q))
		}},
	}
	for _, m := range modes {
		var lat []time.Duration
		scores, err := sf.Score(func(q scifact.Query) ([]string, error) {
			t0 := time.Now()
			r, err := b.search(ctx, client.SearchRequest{Where: m.where(q.Text), Limit: 100, Select: []string{"id"}})
			if err != nil {
				return nil, err
			}
			lat = append(lat, time.Since(t0))
			ranked := make([]string, 0, len(r.Results))
			for _, id := range r.IDs() {
				if cid, ok := corpusID[id]; ok { // not the paraphrase documents
					ranked = append(ranked, cid)
				}
			}
			return ranked, nil
		})
		if err != nil {
			return err
		}
		sortDurations(lat)
		b.printf("%-38s nDCG@10 %.4f  Recall@100 %.4f  (%d queries; latency p50 %s p99 %s)\n", m.name, scores.NDCG10, scores.Recall100, scores.Queries, ms(percentile(lat, 50)), ms(percentile(lat, 99)))
	}
	b.printf("targets: BM25 nDCG@10 >= 0.665, Recall@100 >= 0.90; vector-only nDCG@10 >= 0.45 (hash), >= 0.60 (use); FTS + vector >= 0.68 (use)\n")
	return nil
}

// embedder is what the search process's /readyz says it embeds with.
func (b *bench) embedder(ctx context.Context) (string, error) {
	if b.s.searchMetrics == "" {
		return "", errors.New("no metrics address")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.s.searchMetrics+"/readyz", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return "", err
	}
	s := fmt.Sprint(r["embedder"])
	if reason, ok := r["embedder_fallback_reason"]; ok {
		s += fmt.Sprintf(" (fallback: %v)", reason)
	}
	return s, nil
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

// sciFactState is what -scifact-state keeps of an uploaded corpus.
type sciFactState struct {
	Token string           `json:"token"`
	IDs   map[int64]string `json:"ids"` // document id → SciFact id
	// Paraphrases: each set's document ids, in the order of its pairs.
	Paraphrases map[string][]int64 `json:"paraphrases"`
}

func readSciFactState(path string) (sciFactState, bool, error) {
	var st sciFactState
	if path == "" {
		return st, false, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, false, fmt.Errorf("%s: %w", path, err)
	}
	return st, true, nil
}

func writeSciFactState(path string, st sciFactState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// paraphraseSet is a file of pkg/embed/testdata: pairs of a query and
// the one document that answers it in other words.
type paraphraseSet struct {
	name  string
	pairs [][2]string
}

// paraphraseSets reads the sets -paraphrase-sets names (files of
// pkg/embed/testdata, found above the working directory; none: no sets,
// said in the report).
func (b *bench) paraphraseSets() ([]paraphraseSet, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	for {
		base := filepath.Join(dir, "pkg", "embed", "testdata")
		if _, err := os.Stat(filepath.Join(base, "paraphrase.tsv")); err == nil {
			var sets []paraphraseSet
			for _, name := range strings.Split(b.s.paraSets, ",") {
				if name = strings.TrimSpace(name); name == "" {
					continue
				}
				if filepath.Base(name) != name {
					return nil, fmt.Errorf("-paraphrase-sets: %q is not a file name of %s", name, base)
				}
				raw, err := os.ReadFile(filepath.Join(base, name))
				if err != nil {
					return nil, err
				}
				set := paraphraseSet{name: name}
				for _, line := range strings.Split(string(raw), "\n") {
					if line == "" || strings.HasPrefix(line, "#") {
						continue
					}
					q, d, ok := strings.Cut(line, "\t")
					if !ok {
						return nil, fmt.Errorf("%s: want a query, a tab and a document: %q", name, line)
					}
					set.pairs = append(set.pairs, [2]string{q, d})
				}
				sets = append(sets, set)
			}
			return sets, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil, nil
		}
		dir = parent
	}
}

// scoreParaphrases searches each pair's query (vector-only, content)
// among the paraphrase documents and the abstracts and counts the pairs
// whose document comes first and in the top 10.
func (b *bench) scoreParaphrases(ctx context.Context, sets []paraphraseSet, ids map[string][]int64, abstracts int) error {
	if len(sets) == 0 {
		b.printf("paraphrases: skipped (pkg/embed/testdata/paraphrase.tsv not found above the working directory)\n")
		return nil
	}
	all := abstracts
	for _, set := range sets {
		all += len(set.pairs)
	}
	for _, set := range sets {
		docs := ids[set.name]
		if len(docs) != len(set.pairs) {
			return fmt.Errorf("paraphrases %s: %d documents uploaded for %d pairs", set.name, len(docs), len(set.pairs))
		}
		top1, top10 := 0, 0
		for i, p := range set.pairs {
			r, err := b.search(ctx, client.SearchRequest{Where: client.Vector("content", p[0]), Limit: 10, Select: []string{"id"}})
			if err != nil {
				return err
			}
			got := r.IDs()
			if len(got) > 0 && got[0] == docs[i] {
				top1++
			}
			if slices.Contains(got, docs[i]) {
				top10++
			}
		}
		n := float64(len(set.pairs))
		b.printf("paraphrases %-24s vector-only among %d documents (the sets' and the abstracts): top-1 %d of %d (%.0f %%), top-10 %d (%.0f %%)\n",
			set.name, all, top1, len(set.pairs), 100*float64(top1)/n, top10, 100*float64(top10)/n)
	}
	b.printf("targets (paraphrase.tsv, use): top-1 >= 85 %%, top-10 >= 95 %%\n")
	return nil
}
