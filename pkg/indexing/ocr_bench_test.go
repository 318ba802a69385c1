package indexing

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/events"
	"github.com/docrepo/docrepo/pkg/ocr"
	"github.com/docrepo/docrepo/pkg/ocr/scantest"
	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/search/scifact"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// BenchmarkOCRWhileSearching is the embedded-mode picture of OCR: the
// SciFact corpus (5,183 abstracts) in the embedded engine, a client
// searching it without pause (each SciFact claim as an fts OR query, one
// at a time), and the event consumer with its OCR stage reading a 10-page
// scan of the real RA_CI.pdf (300 dpi) in the same process. It reports the
// scan's OCR lag (event published to the OCR text written), the lag of a text
// document published while the scan is read, and the p95 search latency
// before, during and after the OCR. The searches come at a steady rate
// (DOCREPO_BENCH_QPS, default 50 a second, an open loop: a slow answer
// does not slow the arrivals), or back to back with DOCREPO_BENCH_QPS=0
// (one client saturating a core: the worst case):
//
//	cd pkg && go test -run '^$' -bench BenchmarkOCRWhileSearching -benchtime 1x ./indexing/
func BenchmarkOCRWhileSearching(b *testing.B) {
	dir, ok := scifact.Find()
	if !ok {
		b.Skip("shared/data/scifact not found")
	}
	coll, err := scifact.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	docsDir, _ := testenv.RealDocuments(b)
	var pages []scantest.Page
	for p := 1; p <= 10; p++ {
		img, err := scantest.Rasterise(context.Background(), filepath.Join(docsDir, "RA_CI.pdf"), p, 300)
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, scantest.Page{Image: img, DPI: 300})
	}
	var pdf bytes.Buffer
	if err := scantest.ImagePDF(&pdf, pages, 85); err != nil {
		b.Fatal(err)
	}

	eng := newMemEngine(b)
	const corpusBase = 1_000_000
	batch := make([]engine.Document, 0, 512)
	for i, d := range coll.Docs {
		batch = append(batch, engine.Document{ID: corpusBase + int64(i), Rev: 1, GroupIDs: []int64{1}, Content: d.Content()})
		if len(batch) == cap(batch) || i == len(coll.Docs)-1 {
			if _, err := eng.Upsert(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	var reqs []engine.Request
	for _, q := range coll.Queries {
		reqs = append(reqs, ftsRequest(b, scifact.ORQuery(q.Text)))
	}
	qps := 50
	if v := os.Getenv("DOCREPO_BENCH_QPS"); v != "" {
		if qps, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	// search runs queries until stop says so and returns their latencies,
	// measured from when each query was due (so queueing behind a slow
	// one counts).
	search := func(stop func() bool) []time.Duration {
		var lat []time.Duration
		start := time.Now()
		for i := 0; !stop(); i++ {
			due := time.Now()
			if qps > 0 {
				due = start.Add(time.Duration(i) * time.Second / time.Duration(qps))
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				}
			}
			if _, err := eng.Search(context.Background(), reqs[i%len(reqs)]); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(due))
		}
		return lat
	}
	for range b.N {
		_, js, pub := newStream(b)
		store := newDocStore()
		store.put(1, scanDoc(1, pdf.Bytes()))
		store.put(2, textDoc(1, "a memo written while the scan is read"))
		oe, err := ocr.New(ocr.Config{OSD: true})
		if err != nil {
			testenv.Unavailable(b, "OCR: %v", err)
		}
		queue := newOCRQueue(b)
		ix := newTestIndexer(b, eng, store.serve(b), func(o *Options) { o.OCR = oe; o.OCRQueue = queue })

		before := search(deadline(10 * time.Second))

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = ix.Consume(ctx, ConsumerOptions{JetStream: js, Durable: "bench", AckWait: 30 * time.Second})
		}()
		staged := make(chan struct{})
		go func() { defer close(staged); ix.RunOCRStage(ctx) }()
		written := func(id int64) func() bool {
			return func() bool { _, ok, _ := eng.Revision(context.Background(), id); return ok }
		}
		start := time.Now()
		pub.event(1, 1, events.KindCreated)
		var textLag atomic.Int64
		go func() {
			time.Sleep(2 * time.Second)
			t0 := time.Now()
			pub.event(2, 1, events.KindCreated)
			for !written(2)() {
				time.Sleep(5 * time.Millisecond)
			}
			textLag.Store(int64(time.Since(t0)))
		}()
		during := search(func() bool { return store.source(1) == "ocr" })
		scanLag := time.Since(start)
		after := search(deadline(10 * time.Second))
		cancel()
		<-done
		<-staged
		oe.Close()

		p95 := func(l []time.Duration) float64 {
			sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
			return float64(l[len(l)*95/100]) / float64(time.Millisecond)
		}
		b.ReportMetric(scanLag.Seconds(), "scan-lag-s")
		b.ReportMetric(scanLag.Seconds()/float64(len(pages)), "s/page")
		b.ReportMetric(float64(textLag.Load())/float64(time.Millisecond), "text-lag-during-ocr-ms")
		b.ReportMetric(p95(before), "fts-p95-before-ms")
		b.ReportMetric(p95(during), "fts-p95-during-ms")
		b.ReportMetric(p95(after), "fts-p95-after-ms")
		b.ReportMetric(p95(during)/((p95(before)+p95(after))/2), "p95-ratio")
		b.Logf("%d queries/s (0: back to back): scan lag %v (10 pages), text lag during OCR %v; fts p95 %.2f ms before (%d queries), %.2f ms during (%d), %.2f ms after (%d)",
			qps, scanLag.Round(time.Millisecond), time.Duration(textLag.Load()).Round(time.Millisecond),
			p95(before), len(before), p95(during), len(during), p95(after), len(after))
		if err := eng.Delete(context.Background(), 1, 100); err != nil {
			b.Fatal(err)
		}
		if err := eng.Delete(context.Background(), 2, 100); err != nil {
			b.Fatal(err)
		}
	}
}

func deadline(d time.Duration) func() bool {
	end := time.Now().Add(d)
	return func() bool { return time.Now().After(end) }
}

// ftsRequest is an fts query over content, as the search service builds
// it, for an unrestricted caller.
func ftsRequest(b *testing.B, query string) engine.Request {
	body, _ := json.Marshal(map[string]any{"where": map[string]any{"fts": map[string]any{"field": "content", "query": query}}, "limit": 10})
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	dr, err := dsl.RequestFromMap(m)
	if err != nil {
		b.Fatal(err)
	}
	q, err := dsl.Parse(dr)
	if err != nil {
		b.Fatal(err)
	}
	plan, err := q.Plan()
	if err != nil {
		b.Fatal(err)
	}
	return engine.Request{Query: q, Plan: plan, Unrestricted: true}
}
