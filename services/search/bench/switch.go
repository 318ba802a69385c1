package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// switchSample is one reading of the re-embedding's progress.
type switchSample struct {
	at          time.Duration
	done, total float64
	passages    float64
	running     bool
}

// switchQueries are the watch's searches: SciFact's claims (full text:
// the claim's words joined by OR; vector: the claim) judged against the
// qrels through the results' descriptions (the abstracts' titles, which
// every variation keeps), or synthetic words, not judged.
type switchQueries struct {
	sf      *scifact.Collection
	byTitle map[string]string // truncated title -> corpus id
	next    int
	c       *corpus
	r       *rand.Rand
}

func (b *bench) switchQueries() (*switchQueries, error) {
	q := &switchQueries{c: newCorpus(nil), r: rand.New(rand.NewPCG(3, 3))}
	if b.s.ingestCorpus != "scifact" {
		return q, nil
	}
	dir, ok := b.findSciFact()
	if !ok {
		return nil, errors.New("switch: -ingest-corpus scifact, but shared/data/scifact was not found")
	}
	sf, err := scifact.Load(dir)
	if err != nil {
		return nil, err
	}
	q.sf, q.byTitle = sf, map[string]string{}
	for _, d := range sf.Docs {
		q.byTitle[truncate(d.Title, 400)] = d.ID
	}
	return q, nil
}

// pick returns the next full-text and vector queries and the claim's id
// ("" when not judged).
func (q *switchQueries) pick() (fts, vector, id string) {
	if q.sf == nil {
		word := func() string { return q.c.vocab[50+q.r.IntN(1500)] }
		return word(), word() + " " + word() + " " + word(), ""
	}
	c := q.sf.Queries[q.next%len(q.sf.Queries)]
	q.next++
	return scifact.ORQuery(c.Text), c.Text, c.ID
}

// hit reports whether res holds an abstract (or a variation of one) the
// qrels judge relevant to claim id.
func (q *switchQueries) hit(id string, res *client.SearchResponse) bool {
	for _, r := range res.Results {
		d, _ := r["description"].(string)
		if q.sf.Relevant[id][q.byTitle[d]] {
			return true
		}
	}
	return false
}

// vectorTally counts the vector searches of one phase.
type vectorTally struct {
	lat                []time.Duration
	answered, nonEmpty int
	judged, hits       int
	unavailable        int
	others             int
}

func (t *vectorTally) String() string {
	sortDurations(t.lat)
	s := fmt.Sprintf("%d answered (%d with results), %d answered 503, %d other errors", t.answered, t.nonEmpty, t.unavailable, t.others)
	if len(t.lat) > 0 {
		s += fmt.Sprintf("; p50 %s  p95 %s  p99 %s  max %s", ms(percentile(t.lat, 50)), ms(percentile(t.lat, 95)), ms(percentile(t.lat, 99)), ms(percentile(t.lat, 100)))
	}
	if t.judged > 0 {
		s += fmt.Sprintf("; a relevant abstract among the top 20 for %d of %d judged claims (%.0f %%)", t.hits, t.judged, 100*float64(t.hits)/float64(t.judged))
	}
	return s
}

// watchSwitch follows an embedder switch on a live index (switch.sh): the
// stack was restarted with another embedder and
// DOCREPO_EMBEDDER_CHANGE=rebuild over an index holding the documents of
// the tenant whose key is token. Until a vector search is answered by the
// re-embedded index (no Docrepo-Reembedding header) it sends, one after
// the other every 100 ms, a full-text search and a vector search, without
// retries, and records their latencies and answers (and, with SciFact's
// claims, whether a relevant abstract is among the top 20); every 2 s it
// reads docrepo_indexer_reembed_done / _total and
// docrepo_indexer_passages_embedded_total from the search process, and
// its /readyz once a minute. With -switch-max it stops watching after
// that long and reports the rate and the projected end. Then it checks
// that /readyz names the new embedder (prefix s.switchFor) and times both
// kinds of search on the switched index.
func (b *bench) watchSwitch(ctx context.Context, token string) error {
	if token == "" {
		return errors.New("switch: DOCREPO_TOKEN is required (a key of the tenant whose documents the index holds: the ingest's -tenant-file)")
	}
	if b.s.searchMetrics == "" {
		return errors.New("switch: the search process's metrics address is required (-search-metrics or DOCREPO_SEARCH_METRICS_ADDR)")
	}
	api := b.api.WithToken(token).WithRetry(client.NoRetry)
	queries, err := b.switchQueries()
	if err != nil {
		return err
	}
	metric := func(name string) float64 {
		v, _ := metricValue(ctx, "http://"+b.s.searchMetrics+"/metrics", name)
		return v
	}
	sample := func(start time.Time) switchSample {
		return switchSample{at: time.Since(start), done: metric("docrepo_indexer_reembed_done"), total: metric("docrepo_indexer_reembed_total"),
			passages: metric("docrepo_indexer_passages_embedded_total"), running: metric("docrepo_indexer_reembed_running") == 1}
	}
	pid, hasPid := b.stackPids()["search"]
	var ticks0 int64
	if hasPid {
		ticks0 = processTicks(pid)
	}
	loadBefore := loadAverage()

	var (
		fts        []time.Duration
		ftsErrs    int
		during     vectorTally
		headers    = map[string]int{}
		firstErr   error
		samples    []switchSample
		readys     []string
		lastSample time.Time
		lastReady  time.Time
		switched   time.Duration
		gaveUp     bool
	)
	start := time.Now()
	limit := b.s.indexDeadline
	if b.s.switchMax > 0 {
		limit = b.s.switchMax
	}
	for switched == 0 {
		if time.Since(lastSample) >= 2*time.Second {
			lastSample = time.Now()
			s := sample(start)
			samples = append(samples, s)
			fmt.Fprintf(os.Stderr, "bench: %5.0f s: re-embedded %.0f/%.0f, %.0f passages (running %v); searches: full text %d (%d errors), vector %s\n",
				s.at.Seconds(), s.done, s.total, s.passages, s.running, len(fts), ftsErrs, during.String())
		}
		if time.Since(lastReady) >= time.Minute {
			lastReady = time.Now()
			readys = append(readys, fmt.Sprintf("%.0fs %s", time.Since(start).Seconds(), readyzReembedding(ctx, b.s.searchMetrics)))
		}
		ftsQ, vecQ, claim := queries.pick()
		t0 := time.Now()
		_, err := api.Search(ctx, client.SearchRequest{Where: client.FTS(ftsQ), Limit: 20})
		if err != nil {
			ftsErrs++
			firstErr = cmpErr(firstErr, err)
		} else {
			fts = append(fts, time.Since(t0))
		}
		t0 = time.Now()
		res, err := api.Search(ctx, client.SearchRequest{Where: client.Vector("content", vecQ), Select: []string{"id", "description"}, Limit: 20})
		var apiErr *client.Error
		switch {
		case err == nil && res.Reembedding == "":
			switched = time.Since(start)
		case err == nil:
			during.lat = append(during.lat, time.Since(t0))
			during.answered++
			headers[res.Reembedding]++
			if len(res.Results) > 0 {
				during.nonEmpty++
			}
			if claim != "" && len(queries.sf.Relevant[claim]) > 0 {
				during.judged++
				if queries.hit(claim, res) {
					during.hits++
				}
			}
		case errors.As(err, &apiErr) && apiErr.Status == 503:
			during.unavailable++
		default:
			during.others++
			firstErr = cmpErr(firstErr, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Since(start) > limit {
			gaveUp = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	final := sample(start)
	samples = append(samples, final)
	cpu := 0.0
	if hasPid {
		cpu = float64(processTicks(pid)-ticks0) * 10 / 1000
	}

	b.printf("\n## embedder switch on a live index (restarted with DOCREPO_EMBEDDER_CHANGE=rebuild)\n")
	b.printf("load average (1/5/15 min): %s when the watch began, %s at its end\n", loadBefore, loadAverage())
	emb, err := b.embedder(ctx)
	if err != nil {
		return err
	}
	b.printf("embedder (search /readyz): %s\n", emb)
	first := samples[0]
	if gaveUp {
		b.printf("re-embedding: %.0f of %.0f documents done when the watch began (the stack answering again); NOT switched after %.1f s of watching (-switch-max)\n",
			first.done, final.total, final.at.Seconds())
	} else {
		b.printf("re-embedding: %.0f of %.0f documents done when the watch began (the stack answering again); the re-embedded index answered after %.1f s of watching\n",
			first.done, final.total, switched.Seconds())
	}
	// The rate over the samples that saw it running.
	var r0, r1 *switchSample
	for i := range samples {
		if samples[i].running || samples[i].done > 0 {
			if r0 == nil {
				r0 = &samples[i]
			}
			r1 = &samples[i]
		}
	}
	if r0 != nil && r1 != nil && r1.at > r0.at {
		secs := (r1.at - r0.at).Seconds()
		rate := (r1.done - r0.done) / secs
		b.printf("rate: %.2f documents/s, %.1f passages/s re-embedded (%.0f documents, %.0f passages in %.1f s between the first and the last reading; %.2f passages a document)\n",
			rate, (r1.passages-r0.passages)/secs, r1.done-r0.done, r1.passages-r0.passages, secs, (r1.passages-r0.passages)/max(1, r1.done-r0.done))
		if gaveUp && rate > 0 && final.total > final.done {
			left := (final.total - final.done) / rate
			b.printf("projection: %.0f documents left, %.0f min more at this rate (re-embedding done ~%.0f min after the watch began), then the catch-up and the switch\n",
				final.total-final.done, left/60, (final.at.Seconds()+left)/60)
		}
	}
	if hasPid {
		b.printf("search process CPU while watched: %.1f s in %.1f s (%.2f of a core)\n", cpu, final.at.Seconds(), cpu/final.at.Seconds())
	}
	b.printf("progress (docrepo_indexer_reembed_done / _total, every ~60 s):")
	var shown time.Duration = -time.Hour
	for _, s := range samples {
		if s.at-shown >= 60*time.Second || s == final {
			b.printf(" %.0fs %.0f/%.0f;", s.at.Seconds(), s.done, s.total)
			shown = s.at
		}
	}
	b.printf("\n")
	for i, r := range readys {
		if i < 3 || i == len(readys)-1 {
			b.printf("/readyz %s\n", r)
		}
	}
	sortDurations(fts)
	b.printf("during the switch: full-text searches %d answered, %d errors: p50 %s  p95 %s  p99 %s  max %s\n",
		len(fts), ftsErrs, ms(percentile(fts, 50)), ms(percentile(fts, 95)), ms(percentile(fts, 99)), ms(percentile(fts, 100)))
	b.printf("during the switch: vector searches %s\n", during.String())
	for h, n := range headers {
		b.printf("during the switch: %d vector answers said Docrepo-Reembedding: %s\n", n, h)
	}
	if firstErr != nil {
		b.printf("first error: %v\n", firstErr)
	}
	if gaveUp {
		b.printMemory("search process at the end of the watch")
		return nil
	}
	if !strings.HasPrefix(emb, b.s.switchFor) {
		return fmt.Errorf("switch: the re-embedded index answers but /readyz names %q, not %s…", emb, b.s.switchFor)
	}

	// After: both kinds on the switched index, one at a time.
	after := map[string][]time.Duration{}
	var afterVec vectorTally
	for i := range 200 {
		ftsQ, vecQ, claim := queries.pick()
		kind, req := "full text", client.SearchRequest{Where: client.FTS(ftsQ), Limit: 20}
		if i%2 == 1 {
			kind, req = "vector", client.SearchRequest{Where: client.Vector("content", vecQ), Select: []string{"id", "description"}, Limit: 20}
		}
		t0 := time.Now()
		res, err := api.Search(ctx, req)
		if err != nil {
			return fmt.Errorf("switch: %s search after the switch: %w", kind, err)
		}
		after[kind] = append(after[kind], time.Since(t0))
		if kind == "vector" {
			afterVec.answered++
			afterVec.lat = append(afterVec.lat, time.Since(t0))
			if len(res.Results) > 0 {
				afterVec.nonEmpty++
			}
			if claim != "" && len(queries.sf.Relevant[claim]) > 0 {
				afterVec.judged++
				if queries.hit(claim, res) {
					afterVec.hits++
				}
			}
		}
	}
	sortDurations(after["full text"])
	b.printf("after the switch: full text search p50 %s  p99 %s (%d sequential)\n", ms(percentile(after["full text"], 50)), ms(percentile(after["full text"], 99)), len(after["full text"]))
	b.printf("after the switch: vector searches (sequential) %s\n", afterVec.String())
	b.printMemory("search process after the switch")
	return nil
}

// readyzReembedding is the "reembedding" member of the search process's
// /readyz ("-" when it has none).
func readyzReembedding(ctx context.Context, addr string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var r map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return err.Error()
	}
	if v, ok := r["reembedding"]; ok {
		return `"reembedding":` + string(v)
	}
	return "-"
}

// loadAverage is /proc/loadavg's three load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
