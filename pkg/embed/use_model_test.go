package embed

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// useModelDir is the use model of DOCREPO_USE_MODEL_DIR (make test sets
// it), or skips.
func useModelDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("DOCREPO_USE_MODEL_DIR")
	if dir == "" {
		t.Skip("DOCREPO_USE_MODEL_DIR is not set (make model; deploy/dev/model.sh dir)")
	}
	if _, err := os.Stat(filepath.Join(dir, USEModelFile)); err != nil {
		t.Skipf("no use model in DOCREPO_USE_MODEL_DIR: %v", err)
	}
	return dir
}

// useTestModel loads the tokenizer and encoder of the use model.
func useTestModel(t testing.TB) (PieceTokenizer, PieceEncoder, string) {
	t.Helper()
	dir := useModelDir(t)
	tok, enc, err := useLoader(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok, enc, dir
}

// TestUSEParaphraseFloor is the use embedder's quality floor in make
// test: with the default settings, on the paraphrase set and the
// held-out pairs (queries and documents that share no content word),
// the pair's document must be the nearest of the set's documents for
// most queries, far above the hash embedder (logged beside it). A
// regression in the tokenizer, the encoder or the blend fails it.
func TestUSEParaphraseFloor(t *testing.T) {
	dir := useModelDir(t)
	// The services' defaults (pkg/indexing registers them), with the
	// GloVe vectors beside the model (make model fetches them) or in
	// DOCREPO_USE_GLOVE_DIR.
	cfg := USEConfig{ModelDir: dir, ShortQueryWords: DefaultUSEShortQueryWords, ShortQueryWeight: DefaultUSEShortQueryWeight,
		QueryWeight: DefaultUSEQueryWeight, QueryIDF: DefaultUSEQueryIDF, UnmatchedWeight: DefaultUSEUnmatchedWeight,
		GloVeDir: os.Getenv("DOCREPO_USE_GLOVE_DIR"), GloVeWeight: DefaultUSEGloVeWeight,
		QueryGloVeWeight: DefaultUSEQueryGloVeWeight, ShortQueryGloVeWeight: DefaultUSEShortQueryGloVeWeight}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	u, err := NewUSE(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	withGloVe, why := u.GloVeStatus()
	if !withGloVe {
		t.Logf("without the GloVe vectors (%v): the floors of the encoder and lexical blend alone", why)
	} else {
		t.Logf("%s: heap %d MB after loading the sentence encoder and GloVe (%d words)", u.Name(), (after.HeapAlloc-before.HeapAlloc)>>20, u.glove.Len())
	}
	hash, err := NewHash(DefaultHashDimensions)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		pairs       []paraphrasePair
		top1, top10 float64 // floors for use
		gloveTop1   float64 // the top-1 floor with GloVe
	}{
		// Measured (query weight 0.3, short queries at 0.9): 69 % / 97 %
		// and 73 % / 100 % (hash: 10 % / 21 %, 10 % / 50 %); with GloVe
		// (short queries give it 0.3 of their 0.9): 76 % / 99 % and
		// 83 % / 100 %, floors today's blend fails.
		{name: "paraphrase.tsv", pairs: loadParaphrases(t), top1: 0.65, top10: 0.95, gloveTop1: 0.72},
		{name: "paraphrase_heldout.tsv", pairs: loadHeldOutParaphrases(t), top1: 0.70, top10: 0.95, gloveTop1: 0.80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var queries []string
			for _, p := range tc.pairs {
				queries = append(queries, p.query)
			}
			n := float64(len(tc.pairs))
			h1, h10 := paraphraseHits(t, hash, tc.pairs, queries, nil, 1), paraphraseHits(t, hash, tc.pairs, queries, nil, 10)
			u1, u10 := paraphraseHits(t, u, tc.pairs, queries, nil, 1), paraphraseHits(t, u, tc.pairs, queries, nil, 10)
			t.Logf("%d pairs: %s top-1 %.0f %% top-10 %.0f %%; %s top-1 %.0f %% top-10 %.0f %%",
				len(tc.pairs), u.Name(), 100*float64(u1)/n, 100*float64(u10)/n, hash.Name(), 100*float64(h1)/n, 100*float64(h10)/n)
			top1 := tc.top1
			if withGloVe {
				top1 = tc.gloveTop1
			}
			if float64(u1)/n < top1 || float64(u10)/n < tc.top10 {
				t.Errorf("use finds the paraphrase first for %d and in the top 10 for %d of %d; want at least %.0f %% and %.0f %%",
					u1, u10, len(tc.pairs), 100*top1, 100*tc.top10)
			}
		})
	}
}
