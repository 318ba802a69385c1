package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/client"
)

// The scale runs of issue 23 (scale.sh): export writes the synthetic
// corpus as files for `docrepoctl import` (100 directories, a metadata
// side-file per file), and probe measures every search mode of the perf
// probe against whatever the key's user sees: one client in sequence
// (p50, p95, p99, q/s) and 8 clients at once (p99, q/s), the index lag of
// single uploads, and the search process's resident memory.

// exportTypes are the document types of the exported corpus, created in
// the schema service when missing.
var exportTypes = []string{"scale-invoice", "scale-contract", "scale-memo", "scale-report", "scale-letter"}

// export writes s.docs documents of the synthetic corpus under dir: file
// d%03d/f%07d.txt in directory i%100, with its .meta.json side-file.
func (b *bench) export(ctx context.Context, dir string) error {
	for _, t := range exportTypes {
		if _, err := b.types.CreateDocType(ctx, t); err != nil && !errors.Is(err, catalog.ErrExists) {
			return fmt.Errorf("create document type %s: %w", t, err)
		}
	}
	c := newCorpus(exportTypes)
	for d := range 100 {
		if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("d%03d", d)), 0o755); err != nil {
			return err
		}
	}
	for i := range b.s.docs {
		if i%100000 == 0 && i > 0 {
			fmt.Fprintf(os.Stderr, "bench: exported %d/%d\n", i, b.s.docs)
		}
		path := filepath.Join(dir, fmt.Sprintf("d%03d", i%100), fmt.Sprintf("f%07d.txt", i))
		if _, err := os.Stat(path + ".meta.json"); err == nil {
			continue // resumable
		}
		_, text, fields := c.doc(i)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
		meta, _ := json.Marshal(fields)
		if err := os.WriteFile(path+".meta.json", meta, 0o644); err != nil {
			return err
		}
	}
	b.printf("exported %d documents under %s\n", b.s.docs, dir)
	return nil
}

// probeMode is one search mode of the probe.
type probeMode struct {
	name string
	body func(r *rand.Rand) client.SearchRequest
}

// probeModes are the perf probe's modes over the synthetic corpus's
// vocabulary; folders are the ids of the corpus's 100 folders (for the
// filters admitting 10 % and 1 % of the documents).
func probeModes(c *corpus, folders []int64, n int) []probeMode {
	word := func(r *rand.Rand) string { return c.vocab[50+r.IntN(1500)] }
	vec := func(q string) client.Clause { return client.Vector("content", q) }
	where := func(w client.Clause) client.SearchRequest { return client.SearchRequest{Where: w} }
	meta := func(r *rand.Rand) client.Clause {
		d := time.Date(2020+r.IntN(4), time.Month(1+r.IntN(12)), 1, 0, 0, 0, 0, time.UTC)
		return client.And(client.Eq("doc_type", c.types[r.IntN(len(c.types))]),
			client.Compare("gte", "date", d.Format("2006-01-02")),
			client.Compare("lt", "date", d.AddDate(0, 3, 0).Format("2006-01-02")))
	}
	phrase := func(r *rand.Rand) (string, string, string) {
		w := c.words(r.IntN(n))
		p := r.IntN(len(w) - 10)
		return w[p], w[p+1], w[p+6]
	}
	fts := client.FTS
	modes := []probeMode{
		{"FTS AND (two words)", func(r *rand.Rand) client.SearchRequest { return where(fts(word(r) + " " + word(r))) }},
		{"FTS OR", func(r *rand.Rand) client.SearchRequest { return where(fts(word(r) + " OR " + word(r))) }},
		{"FTS phrase", func(r *rand.Rand) client.SearchRequest {
			a, b, _ := phrase(r)
			return where(fts(`"` + a + " " + b + `"`))
		}},
		{"FTS prefix", func(r *rand.Rand) client.SearchRequest { return where(fts(word(r)[:3] + "*")) }},
		{"FTS NEAR", func(r *rand.Rand) client.SearchRequest {
			a, _, b := phrase(r)
			return where(fts(`*N5"` + a + " " + b + `"`))
		}},
		{"vector (content)", func(r *rand.Rand) client.SearchRequest { return where(vec(word(r) + " " + word(r) + " " + word(r))) }},
		{"FTS + vector", func(r *rand.Rand) client.SearchRequest {
			return where(client.And(fts(word(r)), vec(word(r)+" "+word(r))))
		}},
		{"metadata (type + 3 months, sort date)", func(r *rand.Rand) client.SearchRequest {
			return client.SearchRequest{Where: meta(r), Sort: []client.Sort{{Field: "date", Direction: "desc"}}}
		}},
		{"FTS + metadata", func(r *rand.Rand) client.SearchRequest {
			return where(client.And(fts(word(r)), client.Eq("doc_status", "open")))
		}},
		{"FTS + highlights", func(r *rand.Rand) client.SearchRequest {
			return client.SearchRequest{Where: fts(word(r)), Options: &client.SearchOptions{IncludeHighlights: true}}
		}},
	}
	if len(folders) >= 10 {
		in := func(k int) client.Clause { return client.In("filesbelongto", folders[:k]...) }
		modes = append(modes,
			probeMode{"vector, filter 10 % (10 folders)", func(r *rand.Rand) client.SearchRequest {
				return where(client.And(in(10), vec(word(r)+" "+word(r)+" "+word(r))))
			}},
			probeMode{"vector, filter 1 % (1 folder)", func(r *rand.Rand) client.SearchRequest {
				return where(client.And(in(1), vec(word(r)+" "+word(r)+" "+word(r))))
			}},
			// A folder's contents as a listing shows them: every document
			// of one folder (1 %: 10,000 at 1 M), newest first, the first
			// page and a page deep in it.
			probeMode{"folder listing (1 folder, sort date)", func(r *rand.Rand) client.SearchRequest {
				return client.SearchRequest{Where: in(1), Sort: []client.Sort{{Field: "date", Direction: "desc"}}}
			}},
			probeMode{"folder listing, offset 5000", func(r *rand.Rand) client.SearchRequest {
				return client.SearchRequest{Where: in(1), Sort: []client.Sort{{Field: "date", Direction: "desc"}}, Offset: 5000}
			}})
	}
	return modes
}

// probe runs the modes against what the key's user sees (s.docs
// documents of the synthetic corpus in the 100 folders of s.folders).
func (b *bench) probe(ctx context.Context) error {
	// The lag probe uploads documents of the exported corpus's types
	// (created here when the probe follows an ingest).
	for _, t := range exportTypes {
		if _, err := b.types.CreateDocType(ctx, t); err != nil && !errors.Is(err, catalog.ErrExists) {
			return fmt.Errorf("create document type %s: %w", t, err)
		}
	}
	c := newCorpus(exportTypes)
	var folders []int64
	for _, f := range strings.Split(b.s.folders, ",") {
		if id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64); err == nil {
			folders = append(folders, id)
		}
	}
	total, err := b.search(ctx, client.SearchRequest{Limit: 1, Select: []string{"id"}})
	if err != nil {
		return err
	}
	b.printf("\n## perf probe: %d documents visible to the key's user\n", total.Total)
	b.printMemory("search process before the probe")
	modes := probeModes(c, folders, b.s.docs)
	if b.s.probeModes != "" {
		var keep []probeMode
		for _, m := range modes {
			for _, p := range strings.Split(b.s.probeModes, ",") {
				if strings.HasPrefix(m.name, strings.TrimSpace(p)) {
					keep = append(keep, m)
					break
				}
			}
		}
		modes = keep
	}
	stopSlow := func() {}
	if b.s.slowClients > 0 {
		// Stopped once the modes are timed, before the lag probe.
		stopSlow = sync.OnceFunc(b.slowSearches(ctx, heavySearch(c, b.s.slowWords), b.s.slowClients))
		defer stopSlow()
	}
	b.printf("%-40s %9s %9s %9s %8s | %-8s %9s %8s\n", "mode (limit 20)", "seq p50", "p95", "p99", "q/s", "clients", "p99", "q/s")
	for _, m := range modes {
		r := rand.New(rand.NewPCG(42, 42))
		for range 10 {
			if _, err := b.search(ctx, m.body(r)); err != nil && b.s.slowClients == 0 {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		seq, seqRate, err := b.timeQueries(ctx, m, b.s.queries, 1)
		if err != nil {
			return err
		}
		par, parRate, err := b.timeQueries(ctx, m, b.s.queries, b.s.concurrency)
		if err != nil {
			return err
		}
		b.printf("%-40s %9s %9s %9s %8.0f | %-8d %9s %8.0f\n", m.name, ms(percentile(seq, 50)), ms(percentile(seq, 95)), ms(percentile(seq, 99)), seqRate,
			b.s.concurrency, ms(percentile(par, 99)), parRate)
	}
	stopSlow()
	b.printf("targets at 1 M: sequential p95 <= 50 ms, %d-client p99 <= 200 ms\n", b.s.concurrency)
	b.printMemory("search process after the probe")

	// Index lag of single uploads into the first folder.
	if len(folders) > 0 {
		b.folder = folders[0]
	}
	lags, err := b.measureLags(ctx, c, "scaleprobe", b.s.docs)
	if err != nil {
		return err
	}
	if len(lags) > 0 {
		sortDurations(lags)
		b.printf("index lag of single uploads (%d sequential): p50 %s  p99 %s  max %s  (target p99 <= 1 s)\n",
			len(lags), ms(percentile(lags, 50)), ms(percentile(lags, 99)), ms(lags[len(lags)-1]))
	}
	return nil
}

// heavySearch is the probe's heavy search (-slow-clients): an OR of the
// corpus's commonest words (-slow-words, default 30: nearly every
// document matches), its 500 best hits with highlights of 2,000
// characters.
func heavySearch(c *corpus, words int) client.SearchRequest {
	return client.SearchRequest{
		Where:   client.FTS(strings.Join(c.vocab[:max(1, min(words, len(c.vocab)))], " OR ")),
		Limit:   500,
		Options: &client.SearchOptions{IncludeHighlights: true, HighlightLength: 2000},
	}
}

// slowSearches runs req on clients more clients, each in a loop, until
// the function it returns is called; that function stops them and
// prints how many ran, their p50 and slowest, and how many failed (a
// search past the server's timeout answers 504).
func (b *bench) slowSearches(ctx context.Context, req client.SearchRequest, clients int) (stop func()) {
	t0 := time.Now()
	if _, err := b.search(ctx, req); err != nil {
		b.printf("heavy search: the first one failed after %s: %v\n", ms(time.Since(t0)), err)
	} else {
		b.printf("heavy search (%d clients in a loop beside the timed ones): alone it takes %s\n", clients, ms(time.Since(t0)))
	}
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu     sync.Mutex
		lat    []time.Duration
		failed int
		wg     sync.WaitGroup
	)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				_, err := b.search(ctx, req)
				d := time.Since(t0)
				if ctx.Err() != nil {
					return // cut short by stop: not counted
				}
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
		sortDurations(lat)
		if len(lat) == 0 {
			b.printf("heavy searches: none finished while the modes were timed\n")
			return
		}
		b.printf("heavy searches beside the modes: %d finished (%d failed), p50 %s, slowest %s\n",
			len(lat), failed, ms(percentile(lat, 50)), ms(lat[len(lat)-1]))
	}
}

// timeQueries runs n queries of mode m with the given number of clients
// and returns the latencies (sorted) and the rate.
func (b *bench) timeQueries(ctx context.Context, m probeMode, n, clients int) ([]time.Duration, float64, error) {
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 7))
			for i := c; i < n; i += clients {
				body := m.body(r)
				t0 := time.Now()
				_, err := b.search(ctx, body)
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	rate := float64(n) / time.Since(start).Seconds()
	if len(errs) > 0 {
		if b.s.slowClients == 0 {
			return nil, 0, fmt.Errorf("%s: %w", m.name, errs[0])
		}
		// Beside heavy searches a timed one may time out (504): that
		// is the measurement, counted, with its time.
		b.printf("%s, %d client(s): %d of %d failed (first: %v)\n", m.name, clients, len(errs), n, errs[0])
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, rate, nil
}

// printMemory prints the search process's resident memory, anonymous and
// file-backed apart (from the stack's pid directory).
func (b *bench) printMemory(what string) {
	pid, ok := b.stackPids()["search"]
	if !ok {
		b.printf("%s: no pid (set -pid-dir or DOCREPO_PID_DIR)\n", what)
		return
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.printf("%s: %v\n", what, err)
		return
	}
	vals := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			vals[k] = strings.TrimSpace(v)
		}
	}
	b.printf("%s (pid %d): VmRSS %s = RssAnon %s + RssFile %s + RssShmem %s\n", what, pid, vals["VmRSS"], vals["RssAnon"], vals["RssFile"], vals["RssShmem"])
}
