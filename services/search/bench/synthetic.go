package main

import (
	"context"
	"fmt"
	"github.com/docrepo/docrepo/pkg/client"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"
)

// corpus generates a deterministic synthetic corpus: words drawn from a
// Zipf distribution over a vocabulary of pronounceable pseudo-words, and
// metadata spread over a few types, statuses, senders and five years.
type corpus struct {
	vocab    []string
	types    []string
	statuses []string
	senders  []string
}

func newCorpus(types []string) *corpus {
	r := rand.New(rand.NewPCG(1, 2))
	cons := "bcdfghjklmnprstvz"
	vows := "aeiou"
	seen := map[string]bool{}
	c := &corpus{types: types, statuses: []string{"open", "closed", "pending"}}
	for len(c.vocab) < 20000 {
		var b strings.Builder
		for s := 0; s < 2+r.IntN(3); s++ {
			b.WriteByte(cons[r.IntN(len(cons))])
			b.WriteByte(vows[r.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			c.vocab = append(c.vocab, w)
		}
	}
	for i := 0; i < 50; i++ {
		c.senders = append(c.senders, fmt.Sprintf("%s %s Ltd", strings.ToUpper(c.vocab[i*7][:1])+c.vocab[i*7][1:], c.vocab[i*11+3]))
	}
	return c
}

// words returns document i's words.
func (c *corpus) words(i int) []string {
	r := rand.New(rand.NewPCG(uint64(i), 99))
	z := rand.NewZipf(r, 1.1, 2, uint64(len(c.vocab)-1))
	n := 60 + r.IntN(60)
	out := make([]string, n)
	for j := range out {
		out[j] = c.vocab[z.Uint64()]
	}
	return out
}

func (c *corpus) doc(i int) (string, string, map[string]string) {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	date := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(5*365))
	w := c.words(i)
	return fmt.Sprintf("doc-%d.txt", i), strings.Join(w, " "), map[string]string{
		"description": strings.Join(w[:4], " "),
		"doc_type":    c.types[r.IntN(len(c.types))],
		"doc_status":  c.statuses[r.IntN(len(c.statuses))],
		"from_entity": c.senders[r.IntN(len(c.senders))],
		"date":        date.Format("2006-01-02"),
	}
}

// synthetic loads s.docs documents, then measures index lag and the
// latency of each search mode.
func (b *bench) synthetic(ctx context.Context) error {
	if err := b.newTenant(ctx, "synthetic"); err != nil {
		return err
	}
	var types []string
	for _, t := range []string{"invoice", "contract", "memo", "report", "letter"} {
		name, err := b.docType(ctx, "bench-"+t)
		if err != nil {
			return err
		}
		types = append(types, name)
	}
	c := newCorpus(types)
	n := b.s.docs
	fmt.Fprintf(os.Stderr, "bench: uploading %d synthetic documents\n", n)
	_, took, err := b.uploadAll(ctx, n, c.doc)
	if err != nil {
		return err
	}
	start := time.Now().Add(-took)
	doneAt, err := b.waitAll(ctx, n)
	if err != nil {
		return err
	}
	b.printf("\n## %d synthetic documents\n", n)
	b.printf("upload: %d documents (60-120 words each) through the gateway with %d parallel clients in %v: %.0f docs/s accepted\n",
		n, b.s.concurrency, took.Round(time.Millisecond), float64(n)/took.Seconds())
	b.printf("indexing throughput: all %d searchable %v after the first upload: %.0f docs/s end to end (upload, outbox, NATS, indexer, engine)\n",
		n, doneAt.Sub(start).Round(time.Millisecond), float64(n)/doneAt.Sub(start).Seconds())

	// Index lag: one document at a time, from the upload's 200 to the
	// first search that finds it.
	lags, err := b.measureLags(ctx, c, "lagprobe", n)
	if err != nil {
		return err
	}
	sortDurations(lags)
	b.printf("index lag (upload accepted -> searchable, %d sequential samples): p50 %s  p99 %s  max %s  (target p99 <= 1 s)\n",
		len(lags), ms(percentile(lags, 50)), ms(percentile(lags, 99)), ms(lags[len(lags)-1]))

	// Latency per mode.
	r := rand.New(rand.NewPCG(42, 42))
	word := func() string { return c.vocab[50+r.IntN(1500)] } // mid-frequency words
	vec := func(q string) client.Clause { return client.Vector("content", q) }
	meta := func() client.Clause {
		d := time.Date(2020+r.IntN(4), time.Month(1+r.IntN(12)), 1, 0, 0, 0, 0, time.UTC)
		return client.And(client.Eq("doc_type", types[r.IntN(len(types))]),
			client.Compare("gte", "date", d.Format("2006-01-02")),
			client.Compare("lt", "date", d.AddDate(0, 3, 0).Format("2006-01-02")))
	}
	phraseNear := func() client.Clause {
		w := c.words(r.IntN(n))
		p := r.IntN(len(w) - 10)
		return client.FTS(fmt.Sprintf(`"%s %s" *N5"%s %s"`, w[p], w[p+1], w[p+3], w[p+8]))
	}
	modes := []struct {
		name string
		body func() client.SearchRequest
	}{
		{"FTS (two words)", func() client.SearchRequest { return client.SearchRequest{Where: client.FTS(word() + " " + word())} }},
		{"FTS phrase + NEAR", func() client.SearchRequest { return client.SearchRequest{Where: phraseNear()} }},
		{"vector (content)", func() client.SearchRequest {
			return client.SearchRequest{Where: vec(word() + " " + word() + " " + word())}
		}},
		{"FTS + vector", func() client.SearchRequest {
			return client.SearchRequest{Where: client.And(client.FTS(word()), vec(word()+" "+word()))}
		}},
		{"metadata only (type + 3-month range, sort date)", func() client.SearchRequest {
			return client.SearchRequest{Where: meta(), Sort: []client.Sort{{Field: "date", Direction: "desc"}}}
		}},
		{"FTS + metadata", func() client.SearchRequest {
			return client.SearchRequest{Where: client.And(client.FTS(word()), client.Eq("doc_status", "open"))}
		}},
	}
	b.printf("search latency through the gateway (one client, sequential, %d queries per mode after 20 warm-up; limit 20, default select):\n", b.s.queries)
	for _, m := range modes {
		for i := 0; i < 20; i++ {
			if _, err := b.search(ctx, m.body()); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		var lat []time.Duration
		var totals int64
		for i := 0; i < b.s.queries; i++ {
			body := m.body()
			t0 := time.Now()
			res, err := b.search(ctx, body)
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			lat = append(lat, time.Since(t0))
			totals += res.Total
		}
		sortDurations(lat)
		b.printf("  %-48s p50 %8s  p99 %8s  (mean total %d)\n", m.name, ms(percentile(lat, 50)), ms(percentile(lat, 99)), totals/int64(b.s.queries))
	}
	b.printf("targets: p99 <= 50 ms for the FTS and metadata modes\n")
	return nil
}

func sortDurations(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }

// measureLags uploads b.s.lagSamples documents (corpus docs first, first+1,
// ...) one at a time, each with a unique token "<prefix><i>q<nonce>", and
// returns for each the time from the accepted upload to the first search
// that finds it (unsorted). A document not searchable after a minute is an
// error.
func (b *bench) measureLags(ctx context.Context, c *corpus, prefix string, first int) ([]time.Duration, error) {
	var lags []time.Duration
	for i := 0; i < b.s.lagSamples; i++ {
		token := fmt.Sprintf("%s%dq%d", prefix, i, time.Now().UnixNano()%1e6)
		name, text, fields := c.doc(first + i)
		if _, err := b.upload(ctx, name, text+" "+token, fields); err != nil {
			return nil, err
		}
		accepted := time.Now()
		for {
			r, err := b.search(ctx, client.SearchRequest{Where: client.FTS(token), Select: []string{"id"}})
			if err != nil {
				return nil, err
			}
			if r.Total == 1 {
				lags = append(lags, time.Since(accepted))
				break
			}
			if time.Since(accepted) > time.Minute {
				return nil, fmt.Errorf("lag probe %d not searchable after a minute", i)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return lags, nil
}
