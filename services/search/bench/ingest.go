package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// ingest measures the upload path as a new user of `make run` meets it:
// s.ingestDocs small text documents (about 1 KB) uploaded through the
// gateway by s.concurrency clients, with, during the upload, a probe that
// uploads one document at a time and times it until search finds it (index
// lag under load), and the CPU each stack process spent per document
// (utime+stime from /proc, pids from the supervisor's pid directory).
func (b *bench) ingest(ctx context.Context) error {
	if err := b.newTenant(ctx, "ingest"); err != nil {
		return err
	}
	typ, err := b.docType(ctx, "bench-ingest")
	if err != nil {
		return err
	}
	c := newCorpus([]string{typ})
	sci, what, err := b.ingestTexts()
	if err != nil {
		return err
	}
	doc := func(i int) (string, string, map[string]string) {
		name, text, fields := c.doc(i)
		if sci != nil {
			var title string
			name, text, title = sci.doc(i)
			fields["description"] = truncate(title, 400)
			return name, text, fields
		}
		for len(text) < 1000 { // about 1 KB of text, as in the measurement
			text += " " + strings.Join(c.words(i+len(text)), " ")
		}
		return name, text, fields
	}
	n := b.s.ingestDocs
	pids := b.stackPids()
	before := cpuTicks(pids)
	pgBefore, selfBefore := postgresTicks(), processTicks(os.Getpid())

	var (
		lags      []time.Duration
		lagErr    error
		probeWG   sync.WaitGroup
		uploading atomic.Bool
	)
	uploading.Store(true)
	probeCtx, stopProbe := context.WithCancel(ctx)
	probeWG.Add(1)
	go func() {
		defer probeWG.Done()
		for i := 0; uploading.Load() && probeCtx.Err() == nil; i++ {
			token := fmt.Sprintf("ingestprobe%dq%d", i, time.Now().UnixNano()%1e6)
			name, text, fields := doc(n + i)
			if _, err := b.upload(probeCtx, name, text+" "+token, fields); err != nil {
				if probeCtx.Err() == nil {
					lagErr = err
				}
				return
			}
			accepted := time.Now()
			for {
				r, err := b.search(probeCtx, client.SearchRequest{Where: client.FTS(token), Select: []string{"id"}})
				if err != nil {
					if probeCtx.Err() == nil {
						lagErr = err
					}
					return
				}
				if r.Total == 1 {
					lags = append(lags, time.Since(accepted))
					break
				}
				if time.Since(accepted) > 5*time.Minute {
					lagErr = fmt.Errorf("ingest probe %d not searchable after 5 minutes", i)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	// Other users' searches during the load: a full-text query and a
	// metadata query in turn, one every 50 ms.
	_, sampleText, _ := doc(0)
	queries := []client.SearchRequest{
		{Where: client.FTS(strings.Fields(sampleText)[0]), Limit: 10},
		{Where: client.Eq("doc_type", typ), Limit: 10},
	}
	var loaded []time.Duration
	var searchErr error
	probeWG.Add(1)
	go func() {
		defer probeWG.Done()
		for i := 0; uploading.Load() && probeCtx.Err() == nil; i++ {
			t0 := time.Now()
			if _, err := b.search(probeCtx, queries[i%len(queries)]); err != nil {
				if probeCtx.Err() == nil {
					searchErr = err
				}
				return
			}
			loaded = append(loaded, time.Since(t0))
			time.Sleep(50 * time.Millisecond)
		}
	}()

	fmt.Fprintf(os.Stderr, "bench: ingesting %d small documents with %d clients\n", n, b.s.concurrency)
	b.latencies = b.latencies[:0]
	_, took, err := b.uploadAll(ctx, n, doc)
	uploading.Store(false)
	if err != nil {
		stopProbe()
		return err
	}
	start := time.Now().Add(-took)
	b.ingestStart, b.ingestEnd = start, time.Now()
	if b.s.searchMetrics != "" {
		b.backlogAtEnd, _ = metricValue(ctx, "http://"+b.s.searchMetrics+"/metrics", "docrepo_indexer_vector_backlog")
	}
	stopProbe()
	probeWG.Wait()
	doneAt, err := b.waitAll(ctx, n+len(lags))
	// CPU until everything is searchable: an indexer that falls behind
	// does its work after the upload phase, and that work counts too.
	after := cpuTicks(pids)
	pgAfter, selfAfter := postgresTicks(), processTicks(os.Getpid())
	if err != nil {
		return err
	}
	if lagErr != nil {
		return lagErr
	}
	if searchErr != nil {
		return searchErr
	}
	// The same searches once the load is over, on the whole corpus.
	var idle []time.Duration
	for i := range 2 * len(loaded) {
		t0 := time.Now()
		if _, err := b.search(ctx, queries[i%len(queries)]); err != nil {
			return err
		}
		idle = append(idle, time.Since(t0))
		time.Sleep(10 * time.Millisecond)
	}
	sortDurations(loaded)
	sortDurations(idle)
	lat := append([]time.Duration(nil), b.latencies...)
	sortDurations(lat)
	sortDurations(lags)
	b.printf("\n## ingest: %d %s\n", n, what)
	b.printf("upload: %d clients, %v: %.0f docs/s accepted; upload latency p50 %s  p95 %s  p99 %s\n",
		b.s.concurrency, took.Round(time.Millisecond), float64(n)/took.Seconds(),
		ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms(percentile(lat, 99)))
	b.printf("all searchable %v after the first upload: %.0f docs/s end to end\n",
		doneAt.Sub(start).Round(time.Millisecond), float64(n)/doneAt.Sub(start).Seconds())
	if len(lags) > 0 {
		b.printf("index lag during the upload (%d probes, upload accepted -> searchable): p50 %s  p99 %s  max %s  (target p99 <= 1 s)\n",
			len(lags), ms(percentile(lags, 50)), ms(percentile(lags, 99)), ms(lags[len(lags)-1]))
	}
	if len(loaded) > 0 && len(idle) > 0 {
		b.printf("other searches (full text, metadata): during the upload (%d) p50 %s  p99 %s; after it, on all %d documents (%d) p50 %s  p99 %s\n",
			len(loaded), ms(percentile(loaded, 50)), ms(percentile(loaded, 99)), n, len(idle), ms(percentile(idle, 50)), ms(percentile(idle, 99)))
	}
	if len(pids) == 0 {
		b.printf("CPU per document: no pid directory (set -pid-dir or DOCREPO_PID_DIR to the stack's .data/pids)\n")
		return nil
	}
	names := make([]string, 0, len(pids))
	for name := range pids {
		names = append(names, name)
	}
	sort.Strings(names)
	var total float64
	var parts []string
	for _, name := range names {
		d := float64(after[name]-before[name]) * 10 / float64(n) // ticks are 10 ms
		total += d
		parts = append(parts, fmt.Sprintf("%s %.2f", name, d))
	}
	b.printf("CPU ms per uploaded document (until all searchable, probes included): %s; total %.2f\n", strings.Join(parts, ", "), total)
	b.printf("outside the stack's processes: postgres %.2f (every postgres process on the machine; backends that exited meanwhile not counted), benchmark client %.2f\n",
		float64(pgAfter-pgBefore)*10/float64(n), float64(selfAfter-selfBefore)*10/float64(n))
	return nil
}

// processTicks returns one process's utime+stime in clock ticks (0 when it
// cannot be read).
func processTicks(pid int) int64 {
	return cpuTicks(map[string]int{"p": pid})["p"]
}

// postgresTicks sums utime+stime of every process named postgres.
func postgresTicks() int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var sum int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		sum += processTicks(pid)
	}
	return sum
}

// stackPids reads the supervisor's pid files: name -> pid.
func (b *bench) stackPids() map[string]int {
	dir := b.s.pidDir
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".pid")
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			out[name] = pid
		}
	}
	return out
}

// cpuTicks returns each process's utime+stime in clock ticks.
func cpuTicks(pids map[string]int) map[string]int64 {
	out := map[string]int64{}
	for name, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The command name may hold spaces: fields start after its ')'.
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		out[name] = u + st
	}
	return out
}

// ingestVectors follows an ingest with a deferred vector stage: how long
// the content vectors took to catch up (docrepo_indexer_vector_backlog
// back to 0) after the last and the first upload, at what rate, what CPU
// the search process spent meanwhile, and its resident memory.
func (b *bench) ingestVectors(ctx context.Context) error {
	if b.s.searchMetrics == "" {
		b.printf("vectors: no -search-metrics address, not measured\n")
		return nil
	}
	if emb, err := b.embedder(ctx); err == nil {
		b.printf("embedder (search /readyz): %s\n", emb)
	}
	pid, hasPid := b.stackPids()["search"]
	t0, ticks0 := time.Now(), int64(0)
	if hasPid {
		ticks0 = processTicks(pid)
	}
	// The backlog, once a second, until 0 or -vector-deadline: then the
	// rate so far says when it would be.
	backlog0, err := metricValue(ctx, "http://"+b.s.searchMetrics+"/metrics", "docrepo_indexer_vector_backlog")
	if err != nil {
		return err
	}
	backlog, done := backlog0, time.Now()
	for backlog > 0 && time.Since(t0) < b.s.vectorDeadline {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		if backlog, err = metricValue(ctx, "http://"+b.s.searchMetrics+"/metrics", "docrepo_indexer_vector_backlog"); err != nil {
			return err
		}
		done = time.Now()
		if int(done.Sub(t0).Seconds())%60 == 0 {
			fmt.Fprintf(os.Stderr, "bench: %.0f documents wait for their vectors\n", backlog)
		}
	}
	cpu := 0.0
	if hasPid {
		cpu = float64(processTicks(pid)-ticks0) * 10 / 1000
	}
	b.printf("vectors: %.0f documents waited for their vectors when the upload ended, %.0f when every text was searchable\n", b.backlogAtEnd, backlog0)
	rate := (backlog0 - backlog) / done.Sub(t0).Seconds()
	if backlog == 0 {
		b.printf("vectors: backlog 0 %.1f s after the last upload, %.1f s after the first (%.1f documents/s end to end with vectors)\n",
			done.Sub(b.ingestEnd).Seconds(), done.Sub(b.ingestStart).Seconds(), float64(b.s.ingestDocs)/done.Sub(b.ingestStart).Seconds())
	} else {
		b.printf("vectors: still %.0f waiting %.0f s after the last upload (-vector-deadline %v); at the rate since all were searchable, backlog 0 about %.0f s after the last upload\n",
			backlog, done.Sub(b.ingestEnd).Seconds(), b.s.vectorDeadline, done.Sub(b.ingestEnd).Seconds()+backlog/max(rate, 1e-9))
	}
	if hasPid && backlog0 > backlog {
		b.printf("vector stage after all were searchable: %.1f documents/s; search process %.1f s of CPU in %.1f s for %.0f documents' vectors (%.1f ms of CPU per document)\n",
			rate, cpu, done.Sub(t0).Seconds(), backlog0-backlog, cpu*1000/(backlog0-backlog))
	}
	b.printMemory("search process with the model, after the ingest")
	return nil
}

// ingestTexts are the ingest's texts (-ingest-corpus): nil for the
// synthetic ~1 KB texts, else the SciFact abstracts and their variations;
// and what they are, for the report.
func (b *bench) ingestTexts() (*sciTexts, string, error) {
	switch b.s.ingestCorpus {
	case "", "synthetic":
		return nil, "small documents (~1 KB of synthetic text each)", nil
	case "scifact":
		dir, ok := b.findSciFact()
		if !ok {
			return nil, "", errors.New("ingest: -ingest-corpus scifact, but shared/data/scifact was not found above the working directory (set -scifact or DOCREPO_SCIFACT_DIR)")
		}
		sf, err := scifact.Load(dir)
		if err != nil {
			return nil, "", err
		}
		return newSciTexts(sf.Docs), fmt.Sprintf("SciFact abstracts (%d, ~1.5 KB of English each) and their variations (sentences rotated, one sentence of another abstract added)", len(sf.Docs)), nil
	}
	return nil, "", fmt.Errorf("-ingest-corpus %q: want synthetic or scifact", b.s.ingestCorpus)
}
