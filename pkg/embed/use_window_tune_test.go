//go:build unix

package embed

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/embed/glove"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// TestUSEWindows measures the use embedder's passage window (issue 20
// item 4: 64, 128 or 256 pieces, overlap a quarter) with the query
// defaults, by the production path (EmbedPassages' windows and
// contentPassages, EmbedQueriesWithStats with the harness's word
// statistics, squared L2, a document's nearest passage): SciFact
// vector-only nDCG@10 / R@100 on the odd, even and all test claims, the
// paraphrase set (67) and the held-out pairs (30) among SciFact's
// abstracts (top-1, top-10), passages per abstract, and the index cost:
// EmbedPassages over a sample of abstracts, the windows taking turns
// (side by side on a shared machine), wall clock and CPU time.
//
// The encoder reads at most 128 pieces (uselite's MaxTokens; NewUSE
// refuses a longer window), so "256" is what a 256-piece window gives
// as the code stands, the encoder's half of its first 128 pieces and the
// lexical half of all 256, and "256m" is the window whose encoder half
// is the mean of its first and last 128 pieces (two encoder calls).
//
// DOCREPO_EMBED_TUNE_WINDOWS=1 runs it (DOCREPO_EMBED_TUNE_PIECES: the
// windows, default 64,128,256,256m; DOCREPO_EMBED_TUNE_SPEED_DOCS: the
// abstracts of the speed sample, default 120, 0 for none;
// DOCREPO_EMBED_TUNE_QUALITY=0: the speed and passage counts alone); the
// encoder's vectors are cached in the temp directory as TestUSETune's
// (docs-WINDOW.gob).
func TestUSEWindows(t *testing.T) {
	if os.Getenv("DOCREPO_EMBED_TUNE_WINDOWS") == "" {
		t.Skip("set DOCREPO_EMBED_TUNE_WINDOWS=1 (and DOCREPO_USE_MODEL_DIR) to measure")
	}
	tok, enc, _ := useTestModel(t)
	t.Logf("%d CPUs", runtime.GOMAXPROCS(0))
	sf := loadSciFact(t)
	pq, pd := splitPairs(loadParaphrases(t))
	hq, hd := splitPairs(loadHeldOutParaphrases(t))
	makeTuneCacheDir(t)
	specs := strings.Split(cmpOr(os.Getenv("DOCREPO_EMBED_TUNE_PIECES"), "64,128,256,256m"), ",")
	type variant struct {
		name string
		u    *USE
	}
	var variants []variant
	for _, s := range specs {
		n, err := strconv.Atoi(strings.TrimSuffix(s, "m"))
		if err != nil {
			t.Fatal(err)
		}
		var e PieceEncoder = enc
		if strings.HasSuffix(s, "m") {
			e = halvesEncoder{enc: enc, max: enc.(interface{ MaxTokens() int }).MaxTokens()}
		}
		// The services' query defaults (as TestUSEParaphraseFloor).
		u, err := newUSE(tok, e, USEConfig{PassagePieces: n, ShortQueryWords: DefaultUSEShortQueryWords,
			ShortQueryWeight: DefaultUSEShortQueryWeight, QueryWeight: DefaultUSEQueryWeight,
			QueryIDF: DefaultUSEQueryIDF, UnmatchedWeight: DefaultUSEUnmatchedWeight}, "use", "")
		if err != nil {
			t.Fatal(err)
		}
		variants = append(variants, variant{s, u})
	}

	// Word statistics as the harness counts them (TestUSEProductionPath).
	dfOf := func(texts ...[]string) WordStats {
		n := 0
		for _, ts := range texts {
			n += len(ts)
		}
		return dfStats(stemDF(texts...), n)
	}
	sfStats, pStats, hStats := dfOf(sf.docs), dfOf(sf.docs, pd), dfOf(sf.docs, hd)
	claims := sciFactClaims(sf)
	qi := map[string]int{}
	for i, q := range sf.Queries {
		qi[q.ID] = i
	}

	type pv struct {
		doc int
		v   []float32
	}
	// ranks returns, per query, the documents' scores: -squared L2 to
	// their nearest passage.
	ranks := func(qs [][]float32, ps []pv, docs int) [][]float64 {
		out := make([][]float64, len(qs))
		strided(len(qs), func(q int) {
			s := make([]float64, docs)
			for i := range s {
				s[i] = math.Inf(-1)
			}
			for _, p := range ps {
				s[p.doc] = max(s[p.doc], -squaredL2(qs[q], p.v))
			}
			out[q] = s
		})
		return out
	}
	hits := func(sc [][]float64) (top1, top10 int) {
		for q, s := range sc {
			r := topByScore(s, 10)
			if r[0] == q {
				top1++
			}
			if slices.Contains(r, q) {
				top10++
			}
		}
		return
	}
	embedQ := func(u *USE, qs []string, stats WordStats) [][]float32 {
		v, err := u.EmbedQueriesWithStats(context.Background(), qs, stats)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Passages per abstract (the tokenizer alone): windows, and those
	// contentPassages keeps.
	for _, vr := range variants {
		windows, kept := 0, 0
		for _, text := range sf.docs {
			var ps []Passage
			for _, w := range vr.u.windows(text, DefaultMaxPassages) {
				ps = append(ps, Passage{Start: w[0], End: w[1], Vector: make([]float32, USEDimensions)})
			}
			windows += len(ps)
			kept += len(vr.u.contentPassages(text, ps))
		}
		t.Logf("window %-4s overlap %3d: %5d windows, %5d passages (%.2f per abstract)",
			vr.name, vr.u.overlap, windows, kept, float64(kept)/float64(len(sf.docs)))
	}
	for _, vr := range variants {
		if os.Getenv("DOCREPO_EMBED_TUNE_QUALITY") == "0" {
			break
		}
		u := vr.u
		dParts := embedParts(t, u, sf.docs, false, filepath.Join(tuneCacheDir, "docs-"+vr.name+".gob"))
		// The stored vectors, as EmbedPassages makes them.
		var sfDocs []pv
		stored, windows := storedPassages(t, u, sf.docs, dParts)
		for i, ps := range stored {
			for _, p := range ps {
				sfDocs = append(sfDocs, pv{i, p.Vector})
			}
		}
		// The sets' documents first, then SciFact's abstracts.
		withSet := func(set []string) []pv {
			pps, err := u.EmbedPassages(context.Background(), set, DefaultMaxPassages)
			if err != nil {
				t.Fatal(err)
			}
			var out []pv
			for i, ps := range pps {
				for _, p := range ps {
					out = append(out, pv{i, p.Vector})
				}
			}
			for _, p := range sfDocs {
				out = append(out, pv{len(set) + p.doc, p.v})
			}
			return out
		}
		cs := ranks(embedQ(u, claims, sfStats), sfDocs, len(sf.docs))
		s := splitScores(sf, func(q scifact.Query) []int { return topByScore(cs[qi[q.ID]], 100) })
		p1, p10 := hits(ranks(embedQ(u, pq, pStats), withSet(pd), len(pd)+len(sf.docs)))
		h1, h10 := hits(ranks(embedQ(u, hq, hStats), withSet(hd), len(hd)+len(sf.docs)))
		t.Logf("window %-4s overlap %3d | %5d windows, %5d passages (%.2f per abstract) | SciFact nDCG@10 odd %.4f even %.4f all %.4f R@100 odd %.4f even %.4f all %.4f | paraphrases (+5,183 abstracts) top-1 %2d/%d top-10 %2d | held-out top-1 %2d/%d top-10 %2d",
			vr.name, u.overlap, windows, len(sfDocs), float64(len(sfDocs))/float64(len(sf.docs)),
			s[splitOdd].NDCG10, s[splitEven].NDCG10, s[splitAll].NDCG10,
			s[splitOdd].Recall100, s[splitEven].Recall100, s[splitAll].Recall100,
			p1, len(pq), p10, h1, len(hq), h10)
	}

	// Index cost: EmbedPassages over a sample of abstracts, the windows
	// taking turns, three rounds.
	n := 120
	if s := os.Getenv("DOCREPO_EMBED_TUNE_SPEED_DOCS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	if n <= 0 {
		return
	}
	var sample []string
	for i := 0; i < len(sf.docs) && len(sample) < n; i += max(1, len(sf.docs)/n) {
		sample = append(sample, sf.docs[i])
	}
	type run struct {
		wall, cpu time.Duration
		passages  int
	}
	runs := make([][]run, len(variants))
	for round := range 3 {
		for i, vr := range variants {
			c0, w0 := cpuTime(), time.Now()
			pps, err := vr.u.EmbedPassages(context.Background(), sample, DefaultMaxPassages)
			if err != nil {
				t.Fatal(err)
			}
			r := run{wall: time.Since(w0), cpu: cpuTime() - c0}
			for _, ps := range pps {
				r.passages += len(ps)
			}
			runs[i] = append(runs[i], r)
			t.Logf("speed round %d window %-4s: %d abstracts, %d passages in %v (CPU %v, load %s)",
				round+1, vr.name, len(sample), r.passages, r.wall.Round(time.Millisecond), r.cpu.Round(time.Millisecond), loadAvg())
		}
	}
	for i, vr := range variants {
		rs := runs[i]
		slices.SortFunc(rs, func(a, b run) int { return int(a.wall - b.wall) })
		med := rs[len(rs)/2]
		slices.SortFunc(rs, func(a, b run) int { return int(a.cpu - b.cpu) })
		cpu := rs[len(rs)/2].cpu
		t.Logf("speed window %-4s (median of %d): %.1f passages/s, %.2f abstracts/s wall | CPU %.1f ms/passage, %.0f ms/abstract (2 idle cores: %.1f abstracts/s)",
			vr.name, len(rs), float64(med.passages)/med.wall.Seconds(), float64(len(sample))/med.wall.Seconds(),
			float64(cpu.Milliseconds())/float64(med.passages), float64(cpu.Milliseconds())/float64(len(sample)),
			2*float64(len(sample))/cpu.Seconds())
	}
}

// halvesEncoder embeds a sequence longer than the encoder reads as the
// mean of its first and last max ids' vectors (unit length).
type halvesEncoder struct {
	enc PieceEncoder
	max int
}

func (h halvesEncoder) Embed(ctx context.Context, ids [][]int32) ([][]float32, error) {
	var seqs [][]int32
	var of []int
	for i, s := range ids {
		seqs, of = append(seqs, s[:min(len(s), h.max)]), append(of, i)
		if len(s) > h.max {
			seqs, of = append(seqs, s[len(s)-h.max:]), append(of, i)
		}
	}
	vs, err := h.enc.Embed(ctx, seqs)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(ids))
	for k, v := range vs {
		i := of[k]
		if out[i] == nil {
			out[i] = slices.Clone(v)
			continue
		}
		for d, x := range v {
			out[i][d] += x
		}
	}
	for i := range out {
		glove.Normalize(out[i])
	}
	return out, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAvg is the one-minute load average ("?" where unknown).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b) + " ?")[0]
}
