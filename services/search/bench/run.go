package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

type settings struct {
	url, dbURL     string
	scifactDir     string
	what           string
	docs           int
	concurrency    int
	queries        int
	lagSamples     int
	indexDeadline  time.Duration
	vectorDeadline time.Duration
	ingestDocs     int
	pidDir         string
	searchMetrics  string
	exportDir      string
	folders        string
	probeModes     string
	slowClients    int
	slowWords      int
	tenantFile     string
	switchFor      string
	ingestCorpus   string
	switchMax      time.Duration
	scifactState   string
	paraSets       string
}

func run(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	var s settings
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&s.url, "url", getenv("DOCREPO_URL"), "gateway base URL (env DOCREPO_URL)")
	fs.StringVar(&s.dbURL, "database-url", getenv("DATABASE_URL"), "Postgres URL of the stack (env DATABASE_URL)")
	fs.StringVar(&s.scifactDir, "scifact", getenv("DOCREPO_SCIFACT_DIR"), "SciFact folder (default: shared/data/scifact above the working directory)")
	fs.StringVar(&s.what, "run", "scifact,synthetic", "what to run: scifact, synthetic, ingest, export, probe, switch (comma-separated); or total alone: print how many documents search sees for DOCREPO_TOKEN's user, and nothing else")
	fs.StringVar(&s.exportDir, "export-dir", "", "export: the directory the corpus is written to (for docrepoctl import)")
	fs.StringVar(&s.folders, "folders", "", "probe: comma-separated ids of the corpus's folders (filters of 10 % and 1 %)")
	fs.StringVar(&s.probeModes, "probe-modes", "", "probe: only the modes whose names start with one of these comma-separated prefixes (default: all)")
	fs.IntVar(&s.slowClients, "slow-clients", 0, "probe: this many more clients run the heavy search (heavySearch: an OR of -slow-words of the commonest words, 500 hits with highlights) in a loop while the modes are timed, as a caller with pathological queries would; the timed searches that fail beside them (a timeout) are counted instead of failing the probe")
	fs.IntVar(&s.slowWords, "slow-words", 30, "probe: the heavy search (-slow-clients) is an OR of this many of the corpus's commonest words")
	fs.StringVar(&s.tenantFile, "tenant-file", "", "ingest: write the ingest tenant's key to this file (for a later -run switch)")
	fs.StringVar(&s.switchFor, "switch-to", "use:", "switch: the prefix of the embedder /readyz names once the index is re-embedded")
	fs.StringVar(&s.scifactState, "scifact-state", "", "scifact: after uploading, write the tenant's key and the document ids to this file; when it exists, score the corpus it names again without uploading (the same index searched with other query settings)")
	fs.StringVar(&s.paraSets, "paraphrase-sets", "paraphrase.tsv,paraphrase_heldout.tsv", "scifact: the paraphrase sets of pkg/embed/testdata uploaded beside the abstracts and scored (comma-separated; issue 20's target is paraphrase.tsv alone among the abstracts, the default both, each set's documents then distractors for the other's queries)")
	fs.IntVar(&s.ingestDocs, "ingest-docs", 20000, "documents the ingest run uploads")
	fs.StringVar(&s.ingestCorpus, "ingest-corpus", "synthetic", "ingest: the texts, synthetic (~1 KB of made-up words) or scifact (the SciFact abstracts and variations of them); switch: scifact searches with SciFact's claims and judges them")
	fs.DurationVar(&s.switchMax, "switch-max", 0, "switch: stop watching after this long (0: -index-deadline) and report the rate and the projected end instead of failing")
	fs.StringVar(&s.searchMetrics, "search-metrics", getenv("DOCREPO_SEARCH_METRICS_ADDR"), "the search process's metrics address, to wait for its content vectors (env DOCREPO_SEARCH_METRICS_ADDR, in devstack.env)")
	fs.StringVar(&s.pidDir, "pid-dir", getenv("DOCREPO_PID_DIR"), "the stack's pid directory (.data/pids), for CPU per process (env DOCREPO_PID_DIR)")
	fs.IntVar(&s.docs, "docs", 100000, "synthetic corpus size")
	fs.IntVar(&s.concurrency, "concurrency", 8, "parallel uploads")
	fs.IntVar(&s.queries, "queries", 200, "timed queries per mode")
	fs.IntVar(&s.lagSamples, "lag-samples", 200, "index-lag samples")
	fs.DurationVar(&s.vectorDeadline, "vector-deadline", 2*time.Hour, "ingest: how long to wait for the content vectors after all text is searchable (then the rate says when they would be done)")
	fs.DurationVar(&s.indexDeadline, "index-deadline", 2*time.Hour, "how long to wait for the indexer to catch up")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if s.what == "total" {
		if s.url == "" {
			return errors.New("total: DOCREPO_URL is required")
		}
		return printTotal(ctx, s.url, getenv("DOCREPO_TOKEN"), out)
	}
	if s.url == "" || s.dbURL == "" {
		return errors.New("DOCREPO_URL and DATABASE_URL are required (source .data/devstack.env of `make run`, or use run.sh)")
	}
	b, err := newBench(ctx, s, out)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	b.printf("# docrepo search benchmark, %s\n", time.Now().UTC().Format(time.RFC3339))
	b.printf("machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s, %s; gateway %s\n", host, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version(), s.url)
	if strings.Contains(s.what, "scifact") {
		if err := b.scifact(ctx); err != nil {
			return err
		}
	}
	if strings.Contains(s.what, "synthetic") {
		if err := b.synthetic(ctx); err != nil {
			return err
		}
	}
	if strings.Contains(s.what, "export") {
		if err := b.export(ctx, s.exportDir); err != nil {
			return err
		}
	}
	if strings.Contains(s.what, "ingest") {
		if err := b.ingest(ctx); err != nil {
			return err
		}
		if err := b.ingestVectors(ctx); err != nil {
			return err
		}
		if s.tenantFile != "" {
			if err := os.WriteFile(s.tenantFile, []byte(b.token+"\n"), 0o600); err != nil {
				return err
			}
		}
	}
	if strings.Contains(s.what, "probe") {
		// The probe searches as the key's user (DOCREPO_TOKEN): the one
		// who imported the corpus, or the ingest's tenant when the
		// ingest ran first in this process.
		if token := getenv("DOCREPO_TOKEN"); token != "" {
			b.api = b.api.WithToken(token)
		} else if !strings.Contains(s.what, "ingest") {
			return errors.New("probe: DOCREPO_TOKEN is required (a key of the user who imported the corpus, with the search scope), unless -run ingest,probe")
		}
		if err := b.probe(ctx); err != nil {
			return err
		}
	}
	if strings.Contains(s.what, "switch") {
		if err := b.watchSwitch(ctx, getenv("DOCREPO_TOKEN")); err != nil {
			return err
		}
	}
	return nil
}

// bench is one run against a stack.
type bench struct {
	s      settings
	out    io.Writer
	api    *client.Client // as the current tenant
	token  string         // the current tenant's key
	ids    *identity.Store
	types  *catalog.Store
	folder int64
	// run and keys make every upload's Idempotency-Key.
	run  string
	keys atomic.Int64

	mu        sync.Mutex
	latencies []time.Duration // of every upload of uploadAll
	// ingest's upload phase and the vector backlog when it ended.
	ingestStart, ingestEnd time.Time
	backlogAtEnd           float64
}

func newBench(ctx context.Context, s settings, out io.Writer) (*bench, error) {
	// The bench creates users, keys and doc types directly, as docrepoctl
	// does: the identity tables, and the schema service's in its schema.
	pool, err := database.Open(ctx, s.dbURL, catalog.Schema)
	if err != nil {
		return nil, err
	}
	// Uploads carry a key each, so the client retries them (and searches)
	// after a 5xx, 429 or network error: about 3 s in all.
	api, err := client.New(s.url, "", client.Options{
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 2 * time.Minute},
		Retry: client.Retry{Attempts: 5, Backoff: 200 * time.Millisecond, MaxBackoff: time.Second, MaxWait: 10 * time.Second,
			Statuses: []int{429, 500, 502, 503, 504}},
	})
	if err != nil {
		pool.Close()
		return nil, err
	}
	b := &bench{s: s, out: out, ids: identity.NewStore(pool), types: catalog.NewStore(pool), api: api,
		run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	return b, nil
}

func (b *bench) printf(format string, args ...any) { fmt.Fprintf(b.out, format, args...) }

// newTenant creates a user in a group of its own, with a key and a folder:
// every document of one measurement is visible to it and nothing else is.
func (b *bench) newTenant(ctx context.Context, name string) error {
	user := fmt.Sprintf("bench-%s-%d", name, time.Now().UnixNano())
	if _, err := b.ids.CreateUser(ctx, user, []string{user}); err != nil {
		return err
	}
	tok, _, err := b.ids.CreateKey(ctx, user, []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite, auth.ScopeSearch}, 0)
	if err != nil {
		return err
	}
	b.api, b.token = b.api.WithToken(tok), tok
	f, err := b.api.CreateFolder(ctx, user, 0)
	if err != nil {
		return err
	}
	b.folder = f.FolderID
	return nil
}

// docType creates a unique document type.
func (b *bench) docType(ctx context.Context, base string) (string, error) {
	d, err := b.types.CreateDocType(ctx, fmt.Sprintf("%s-%d", base, time.Now().UnixNano()%1e9))
	return d.Name, err
}

// upload posts one text document and returns its id.
func (b *bench) upload(ctx context.Context, name, text string, fields map[string]string) (int64, error) {
	res, err := b.api.Upload(ctx, client.Upload{FolderID: b.folder, File: strings.NewReader(text), Filename: name,
		ContentType: "text/plain", Metadata: client.Metadata{Extra: fields},
		IdempotencyKey: fmt.Sprintf("bench-%s-%d", b.run, b.keys.Add(1))})
	if err != nil {
		return 0, err
	}
	return res.DocID, nil
}

func (b *bench) search(ctx context.Context, req client.SearchRequest) (*client.SearchResponse, error) {
	return b.api.Search(ctx, req)
}

// uploadAll uploads n documents with the given concurrency; doc(i) builds
// document i. It returns the ids by index and the upload throughput.
func (b *bench) uploadAll(ctx context.Context, n int, doc func(i int) (string, string, map[string]string)) ([]int64, time.Duration, error) {
	ids := make([]int64, n)
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	var done atomic.Int64
	for w := 0; w < b.s.concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				name, text, fields := doc(i)
				began := time.Now()
				id, err := b.upload(ctx, name, text, fields)
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				ids[i] = id
				b.mu.Lock()
				b.latencies = append(b.latencies, time.Since(began))
				b.mu.Unlock()
				if d := done.Add(1); d%10000 == 0 {
					fmt.Fprintf(os.Stderr, "bench: uploaded %d/%d (%.0f/s)\n", d, n, float64(d)/time.Since(start).Seconds())
				}
			}
		}()
	}
	wg.Wait()
	return ids, time.Since(start), firstErr
}

// waitAll waits until the tenant's search sees n documents.
func (b *bench) waitAll(ctx context.Context, n int) (time.Time, error) {
	deadline := time.Now().Add(b.s.indexDeadline)
	last := int64(-1)
	for {
		r, err := b.search(ctx, client.SearchRequest{Limit: 1, Select: []string{"id"}})
		if err != nil {
			return time.Time{}, err
		}
		if r.Total >= int64(n) {
			return time.Now(), nil
		}
		if r.Total != last && r.Total/5000 != last/5000 {
			fmt.Fprintf(os.Stderr, "bench: %d/%d indexed\n", r.Total, n)
		}
		last = r.Total
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("only %d of %d documents indexed after %v", r.Total, n, b.s.indexDeadline)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// findDataDir locates shared/data/scifact.
func (b *bench) findSciFact() (string, bool) {
	if b.s.scifactDir != "" {
		return b.s.scifactDir, true
	}
	return scifact.Find()
}

// percentile of sorted durations.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(p/100*float64(len(d)) + 0.5)
	return d[min(max(i-1, 0), len(d)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// waitVectors waits until the search process's embedding stage has no
// backlog (docrepo_indexer_vector_backlog 0 on its metrics address),
// reporting when that was; without the address it returns at once,
// saying vectors may lag.
func (b *bench) waitVectors(ctx context.Context) (time.Time, bool, error) {
	if b.s.searchMetrics == "" {
		b.printf("note: no -search-metrics address: vector searches may run before every content vector is made\n")
		return time.Now(), false, nil
	}
	deadline := time.Now().Add(b.s.indexDeadline)
	last := -1.0
	for {
		backlog, err := metricValue(ctx, "http://"+b.s.searchMetrics+"/metrics", "docrepo_indexer_vector_backlog")
		if err != nil {
			return time.Time{}, false, err
		}
		if backlog == 0 {
			return time.Now(), true, nil
		}
		if int(backlog)/500 != int(last)/500 {
			fmt.Fprintf(os.Stderr, "bench: %.0f documents wait for their vectors\n", backlog)
		}
		last = backlog
		if time.Now().After(deadline) {
			return time.Time{}, false, fmt.Errorf("%.0f documents still without vectors after %v", backlog, b.s.indexDeadline)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, false, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// metricValue reads one unlabelled gauge from a Prometheus text page (0
// when the page does not have it).
func metricValue(ctx context.Context, url, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, nil
}
