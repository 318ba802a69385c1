package ocr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/extract"
	"github.com/docrepo/docrepo/pkg/ocr"
	"github.com/docrepo/docrepo/pkg/ocr/scantest"
	"github.com/docrepo/docrepo/pkg/search/bleveengine"
	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// TestOCRRecallFindsNinetyPercentOfTextPhrasesInScans is the evidence run of the OCR path (minutes, so it runs
// only with DOCREPO_OCR_RECALL=1; see docs/benchmarks.md §4):
//
//	cd pkg && DOCREPO_OCR_RECALL=1 go test -run TestOCRRecallFindsNinetyPercentOfTextPhrasesInScans -v -timeout 30m ./ocr/
//
// Every PDF of the shared real documents is rasterised with pdftoppm
// (DOCREPO_OCR_RECALL_DPI, default 300) and wrapped into an image-only PDF;
// the smaller ones (up to 10 pages) also become a multi-page TIFF and one
// PNG per page. Each version is extracted (the scans with OCR) and indexed
// in the embedded search engine, and every manifest phrase is searched as
// a phrase query restricted to that version. It reports, per document and
// in total, the phrases found in the text version and in the scans, the
// share of the former found in the latter (the goal is 90%), and the word
// agreement of the OCR text with pdftotext on the original (the share of
// pdftotext's words, as a multiset, that OCR produced: recall; and the
// share of OCR's words that pdftotext has: precision).
func TestOCRRecallFindsNinetyPercentOfTextPhrasesInScans(t *testing.T) {
	if os.Getenv("DOCREPO_OCR_RECALL") != "1" {
		t.Skip("set DOCREPO_OCR_RECALL=1 to run the OCR recall evaluation (minutes)")
	}
	dpi := 300
	if v := os.Getenv("DOCREPO_OCR_RECALL_DPI"); v != "" {
		var err error
		if dpi, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	e := newEngine(t, ocr.Config{Workers: runtime.NumCPU(), OSD: true})
	dir, docs := testenv.RealDocuments(t)
	eng, err := bleveengine.Open("", bleveengine.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()

	type version struct {
		name string
		id   int64
	}
	var totalText, totalScan, totalPhrases int
	foundIn := map[string]int{}
	var refWords, ocrWords, agreeWords int
	var ocrSeconds float64
	var ocrPages int
	nextID := int64(1)
	index := func(text string) int64 {
		id := nextID
		nextID++
		if _, err := eng.Upsert(context.Background(), []engine.Document{{ID: id, Rev: 1, Content: text}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, d := range docs {
		if !strings.HasSuffix(strings.ToLower(d.File), ".pdf") || d.File == "blank-scan.pdf" {
			continue
		}
		path := filepath.Join(dir, d.File)
		textRes := extractFile(t, nil, path, extract.Options{})
		versions := []version{{"text", index(textRes.Text)}}
		var pages []scantest.Page
		for p := 1; p <= d.Pages; p++ {
			img, err := scantest.Rasterise(context.Background(), path, p, dpi)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, scantest.Page{Image: img, DPI: dpi})
		}
		start := time.Now()
		scanRes := extractFile(t, e, writeTemp(t, "scan.pdf", imagePDF(t, pages)), extract.Options{})
		ocrSeconds += time.Since(start).Seconds()
		ocrPages += len(pages)
		if scanRes.OCRErr != nil || scanRes.Source != extract.SourceOCR {
			t.Errorf("%s: scan source %s, OCR error %v", d.File, scanRes.Source, scanRes.OCRErr)
		}
		versions = append(versions, version{"pdf scan", index(scanRes.Text)})
		if len(pages) <= 10 {
			var imgs []*image.Gray
			var pngText []string
			for _, p := range pages {
				imgs = append(imgs, p.Image)
				var b bytes.Buffer
				if err := png.Encode(&b, p.Image); err != nil {
					t.Fatal(err)
				}
				pngText = append(pngText, extractFile(t, e, writeTemp(t, "page.png", b.Bytes()), extract.Options{}).Text)
			}
			var tb bytes.Buffer
			if err := scantest.TIFF(&tb, imgs, dpi); err != nil {
				t.Fatal(err)
			}
			tiffRes := extractFile(t, e, writeTemp(t, "scan.tiff", tb.Bytes()), extract.Options{})
			if tiffRes.OCRPages != len(pages) {
				t.Errorf("%s: TIFF OCR pages %d of %d (%v)", d.File, tiffRes.OCRPages, len(pages), tiffRes.OCRErr)
			}
			versions = append(versions, version{"tiff scan", index(tiffRes.Text)}, version{"png pages", index(strings.Join(pngText, "\f"))})
		}

		ref, err := exec.Command("pdftotext", "-enc", "UTF-8", path, "-").Output()
		if err != nil {
			t.Fatalf("pdftotext %s: %v", d.File, err)
		}
		r, o, a := wordAgreement(string(ref), scanRes.Text)
		refWords, ocrWords, agreeWords = refWords+r, ocrWords+o, agreeWords+a

		var line []string
		for _, v := range versions {
			found := 0
			for _, p := range d.Phrases {
				if phraseFound(t, eng, v.id, p) {
					found++
				} else if v.name != "text" {
					t.Logf("%s: %s: phrase %q not found", d.File, v.name, p)
				}
			}
			foundIn[v.name] += found
			line = append(line, fmt.Sprintf("%s %d/%d", v.name, found, len(d.Phrases)))
			if v.name == "text" {
				totalText += found
			}
			if v.name == "pdf scan" {
				totalScan += found
			}
		}
		totalPhrases += len(d.Phrases)
		t.Logf("%-32s %3d pages  %s  words: recall %.3f precision %.3f", d.File, d.Pages, strings.Join(line, ", "), float64(a)/float64(max(r, 1)), float64(a)/float64(max(o, 1)))
	}
	share := float64(totalScan) / float64(max(totalText, 1))
	t.Logf("phrases found: text versions %d/%d; pdf scans %d (%.1f%% of the text versions'); tiff scans %d, png pages %d (documents up to 10 pages)",
		totalText, totalPhrases, totalScan, 100*share, foundIn["tiff scan"], foundIn["png pages"])
	t.Logf("word agreement with pdftotext at %d dpi: recall %.3f (%d of %d words), precision %.3f; OCR %.2f s/page on %d workers (%d pages)",
		dpi, float64(agreeWords)/float64(refWords), agreeWords, refWords, float64(agreeWords)/float64(ocrWords), ocrSeconds/float64(ocrPages), runtime.NumCPU(), ocrPages)
	if share < 0.9 {
		t.Errorf("the scans' OCR text has %.1f%% of the phrases found in the text versions; the goal is 90%%", 100*share)
	}
}

// phraseFound runs the phrase as an fts phrase query, as a user's search
// does, restricted to document id.
func phraseFound(t *testing.T, eng engine.Engine, id int64, phrase string) bool {
	t.Helper()
	body := map[string]any{"where": map[string]any{"and": []any{
		map[string]any{"fts": map[string]any{"field": "content", "query": `"` + phrase + `"`}},
		map[string]any{"eq": map[string]any{"field": "id", "value": id}},
	}}}
	b, _ := json.Marshal(body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	dr, err := dsl.RequestFromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	q, err := dsl.Parse(dr)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := q.Plan()
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Search(context.Background(), engine.Request{Query: q, Plan: plan, Unrestricted: true})
	if err != nil {
		t.Fatal(err)
	}
	return res.Total > 0
}

// wordAgreement counts the reference's words, the OCR text's words, and
// the words they share as multisets.
func wordAgreement(ref, got string) (refN, gotN, common int) {
	count := map[string]int{}
	rw := wordTokens(ref)
	for _, w := range rw {
		count[w]++
	}
	gw := wordTokens(got)
	for _, w := range gw {
		if count[w] > 0 {
			count[w]--
			common++
		}
	}
	return len(rw), len(gw), common
}

// peakChildMemory samples, until stop is closed, the peak resident memory
// (VmHWM) of this process's running children (tesseract, pdftoppm) and
// returns the largest seen, in bytes. getrusage's children maximum cannot
// be used: a child started with vfork and exec reports the parent's
// resident memory at the exec as its own.
func peakChildMemory(stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	self := strconv.Itoa(os.Getpid())
	go func() {
		var peak int64
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			dirs, _ := filepath.Glob("/proc/[0-9]*/status")
			for _, st := range dirs {
				b, err := os.ReadFile(st)
				if err != nil || !strings.Contains(string(b), "\nPPid:\t"+self+"\n") {
					continue
				}
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
						peak = max(peak, kb*1024)
					}
				}
			}
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// BenchmarkOCRPages reads a 10-page scan of the real RA_CI.pdf (300 dpi) with
// one worker (one core) and with one worker per CPU (the whole machine), and
// reports seconds per page and the peak memory of one OCR process (sampled
// from /proc):
//
//	cd pkg && go test -run '^$' -bench BenchmarkOCRPages -benchtime 1x ./ocr/
func BenchmarkOCRPages(b *testing.B) {
	path, _ := realDoc(b, "RA_CI.pdf")
	pages := scan(b, path, 300, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	scanPath := writeTemp(b, "scan.pdf", imagePDF(b, pages))
	for _, workers := range []int{1, runtime.NumCPU()} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			e := newEngine(b, ocr.Config{Workers: workers, OSD: true, Nice: benchNice})
			stop := make(chan struct{})
			peak := peakChildMemory(stop)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				res := extractFile(b, e, scanPath, extract.Options{})
				if res.OCRPages != len(pages) {
					b.Fatalf("%d of %d pages read (%v)", res.OCRPages, len(pages), res.OCRErr)
				}
			}
			perPage := time.Since(start).Seconds() / float64(b.N*len(pages))
			b.ReportMetric(perPage, "s/page")
			close(stop)
			b.ReportMetric(float64(<-peak)/(1<<20), "MiB-peak/page")
		})
	}
}

// benchNice is the OCR processes' nice value in BenchmarkOCRPages:
// DOCREPO_BENCH_NICE, default the engine's (10). On a shared machine, nice
// 10 yields to everyone else's work; -1 measures Tesseract itself.
var benchNice = func() int {
	n, _ := strconv.Atoi(os.Getenv("DOCREPO_BENCH_NICE"))
	return n
}()
