package embed

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed/glove"
)

// TestUSEGloVePartStatistics logs the cosines of the use embedder's GloVe
// part (the SIF-weighted mean of a text's word vectors without the common
// component, as USE.gloveVector makes it) on SciFact's first 3,000
// abstracts cut into 90-word passages: two consecutive passages of one
// abstract, the first passages of two random abstracts, and a query of
// three of an abstract's longer words (over five letters) with its first
// passage and with a random abstract's. The scale benchmark's
// blend-glove generator (pkg/search/bleveengine, gloveGen) is calibrated
// on them. DOCREPO_USE_GLOVE_DIR (deploy/dev/model.sh glove dir) runs it.
func TestUSEGloVePartStatistics(t *testing.T) {
	dir := os.Getenv("DOCREPO_USE_GLOVE_DIR")
	if dir == "" {
		t.Skip("set DOCREPO_USE_GLOVE_DIR to the GloVe vectors' directory (deploy/dev/model.sh glove dir)")
	}
	tab, err := glove.Load(filepath.Join(dir, glove.File), 0)
	if err != nil {
		t.Fatal(err)
	}
	common := tab.Common(gloveCommonWords, gloveCommonSIF)
	vec := func(text string) []float32 {
		v := tab.Embed(text, DefaultUSEGloVeSIF, nil)
		if v == nil || !glove.Remove(v, common) {
			return nil
		}
		return v
	}
	cos := func(a, b []float32) float64 {
		var s float64
		for i := range a {
			s += float64(a[i]) * float64(b[i])
		}
		return s
	}
	sf := loadSciFact(t)
	var passages [][][]float32
	var long [][]string
	for _, text := range sf.docs[:min(3000, len(sf.docs))] {
		ws := strings.Fields(text)
		var ps [][]float32
		for lo := 0; lo < len(ws); lo += 90 {
			if v := vec(strings.Join(ws[lo:min(len(ws), lo+90)], " ")); v != nil {
				ps = append(ps, v)
			}
		}
		var lw []string
		for _, w := range ws {
			if len(w) > 5 {
				lw = append(lw, w)
			}
		}
		if len(ps) > 0 && len(lw) >= 3 {
			passages, long = append(passages, ps), append(long, lw)
		}
	}
	if len(passages) < 2 {
		t.Fatalf("%d abstracts with passages", len(passages))
	}
	r := rand.New(rand.NewPCG(1, 1))
	var same, random, qOwn, qRandom float64
	var nSame, nRandom, nQuery int
	for i, ps := range passages {
		for p := 1; p < len(ps); p++ {
			same += cos(ps[p-1], ps[p])
			nSame++
		}
		j := r.IntN(len(passages))
		if j == i {
			continue
		}
		random += cos(ps[0], passages[j][0])
		nRandom++
		lw := long[i]
		q := vec(lw[r.IntN(len(lw))] + " " + lw[r.IntN(len(lw))] + " " + lw[r.IntN(len(lw))])
		if q == nil {
			continue
		}
		qOwn += cos(q, ps[0])
		qRandom += cos(q, passages[j][0])
		nQuery++
	}
	if nSame == 0 || nRandom == 0 || nQuery == 0 {
		t.Fatalf("pairs: %d same, %d random, %d queries", nSame, nRandom, nQuery)
	}
	t.Logf("GloVe part over %d abstracts: passages of one abstract %.3f (%d pairs), random passages %.3f (%d); three-word query with its abstract's passage %.3f, with a random one %.3f (%d queries)",
		len(passages), same/float64(nSame), nSame, random/float64(nRandom), nRandom, qOwn/float64(nQuery), qRandom/float64(nQuery), nQuery)
}
