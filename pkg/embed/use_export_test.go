package embed

import (
	"context"
	"encoding/gob"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed/glove"
)

// ExportedVectors are the use embedder's stored passage vectors of
// SciFact's abstracts and the query vectors of its test claims, as the
// production path makes them (EmbedPassages' windows and
// contentPassages, EmbedQueriesWithStats with the corpus's word
// statistics as the tuning harness counts them). The engine's tests read
// them (pkg/search/bleveengine, TestSciFactUSEWalkRecall) to measure the
// vector index without the encoder. The layout is the gob's: keep it in
// step with the reader there.
type ExportedVectors struct {
	Pieces   int
	DocIDs   []string
	Passages [][][]float32 // per document
	QueryIDs []string
	Queries  [][]float32
}

// TestUSEExportSciFact writes ExportedVectors to the file
// DOCREPO_EMBED_EXPORT names, from the encoder's vectors TestUSETune or
// TestUSEWindows cached (docs-PIECES.gob in the temp directory; computed
// and cached when absent). DOCREPO_EMBED_TUNE_PIECES: the window
// (default 128).
func TestUSEExportSciFact(t *testing.T) {
	out := os.Getenv("DOCREPO_EMBED_EXPORT")
	if out == "" {
		t.Skip("set DOCREPO_EMBED_EXPORT=FILE (and DOCREPO_USE_MODEL_DIR) to export SciFact's use vectors")
	}
	pieces := DefaultUSEPassagePieces
	if s := os.Getenv("DOCREPO_EMBED_TUNE_PIECES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		pieces = n
	}
	tok, enc, _ := useTestModel(t)
	sf := loadSciFact(t)
	cfg := USEConfig{PassagePieces: pieces, ShortQueryWords: DefaultUSEShortQueryWords,
		ShortQueryWeight: DefaultUSEShortQueryWeight, QueryWeight: DefaultUSEQueryWeight,
		QueryIDF: DefaultUSEQueryIDF, UnmatchedWeight: DefaultUSEUnmatchedWeight}
	// DOCREPO_USE_GLOVE_DIR: blend the GloVe part in with the defaults
	// (the production path's [√w·USE, √g·GloVe, √(1−w−g)·lexical]).
	if dir := os.Getenv("DOCREPO_USE_GLOVE_DIR"); dir != "" {
		tab, err := glove.Load(filepath.Join(dir, glove.File), 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg.gloveTable, cfg.GloVeWeight = tab, DefaultUSEGloVeWeight
		cfg.QueryGloVeWeight, cfg.ShortQueryGloVeWeight = DefaultUSEQueryGloVeWeight, DefaultUSEShortQueryGloVeWeight
	}
	u, err := newUSE(tok, enc, cfg, "use", "")
	if err != nil {
		t.Fatal(err)
	}
	makeTuneCacheDir(t)
	dParts := embedParts(t, u, sf.docs, false, filepath.Join(tuneCacheDir, "docs-"+strconv.Itoa(pieces)+".gob"))
	ev := ExportedVectors{Pieces: pieces}
	n := 0
	stored, _ := storedPassages(t, u, sf.docs, dParts)
	for i, ps := range stored {
		var vs [][]float32
		for _, p := range ps {
			vs = append(vs, p.Vector)
		}
		n += len(vs)
		ev.DocIDs = append(ev.DocIDs, sf.Docs[i].ID)
		ev.Passages = append(ev.Passages, vs)
	}
	stats := dfStats(stemDF(sf.docs), len(sf.docs))
	var claims []string
	for _, q := range sf.Queries {
		ev.QueryIDs = append(ev.QueryIDs, q.ID)
		claims = append(claims, q.Text)
	}
	if ev.Queries, err = u.EmbedQueriesWithStats(context.Background(), claims, stats); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := gob.NewEncoder(f).Encode(&ev); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("exported %d abstracts (%d passages of %d pieces) and %d claims to %s", len(ev.DocIDs), n, pieces, len(ev.Queries), out)
}
