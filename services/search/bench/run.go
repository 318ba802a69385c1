package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

type settings struct {
	url, dbURL    string
	scifactDir    string
	what          string
	docs          int
	concurrency   int
	queries       int
	lagSamples    int
	indexDeadline time.Duration
	ingestDocs    int
	pidDir        string
}

func run(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	var s settings
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&s.url, "url", getenv("DOCREPO_URL"), "gateway base URL (env DOCREPO_URL)")
	fs.StringVar(&s.dbURL, "database-url", getenv("DATABASE_URL"), "Postgres URL of the stack (env DATABASE_URL)")
	fs.StringVar(&s.scifactDir, "scifact", getenv("DOCREPO_SCIFACT_DIR"), "SciFact folder (default: shared/data/scifact above the working directory)")
	fs.StringVar(&s.what, "run", "scifact,synthetic", "what to run: scifact, synthetic, ingest (comma-separated)")
	fs.IntVar(&s.ingestDocs, "ingest-docs", 20000, "documents the ingest run uploads")
	fs.StringVar(&s.pidDir, "pid-dir", getenv("DOCREPO_PID_DIR"), "the stack's pid directory (.data/pids), for CPU per process (env DOCREPO_PID_DIR)")
	fs.IntVar(&s.docs, "docs", 100000, "synthetic corpus size")
	fs.IntVar(&s.concurrency, "concurrency", 8, "parallel uploads")
	fs.IntVar(&s.queries, "queries", 200, "timed queries per mode")
	fs.IntVar(&s.lagSamples, "lag-samples", 200, "index-lag samples")
	fs.DurationVar(&s.indexDeadline, "index-deadline", 2*time.Hour, "how long to wait for the indexer to catch up")
	if err := fs.Parse(args); err != nil {
		return err
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
	if strings.Contains(s.what, "ingest") {
		if err := b.ingest(ctx); err != nil {
			return err
		}
	}
	return nil
}

// bench is one run against a stack.
type bench struct {
	s      settings
	out    io.Writer
	http   *http.Client
	ids    *identity.Store
	types  *catalog.Store
	folder int64
	token  string

	mu        sync.Mutex
	latencies []time.Duration // of every upload of uploadAll
}

func newBench(ctx context.Context, s settings, out io.Writer) (*bench, error) {
	// The bench creates users, keys and doc types directly, as docrepoctl
	// does: the identity tables, and the schema service's in its schema.
	pool, err := database.Open(ctx, s.dbURL, catalog.Schema)
	if err != nil {
		return nil, err
	}
	b := &bench{s: s, out: out, ids: identity.NewStore(pool), types: catalog.NewStore(pool),
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 2 * time.Minute}}
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
	b.token = tok
	var f struct {
		FolderID int64 `json:"folder_id"`
	}
	if err := b.postJSON(ctx, "/apiv2/pub/folders", map[string]any{"name": user, "parent_id": 0}, &f); err != nil {
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

func (b *bench) postJSON(ctx context.Context, path string, body, into any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", b.s.url+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return b.do(req, into)
}

func (b *bench) do(req *http.Request, into any) error {
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, bytes.TrimSpace(data))
	}
	if into != nil {
		return json.Unmarshal(data, into)
	}
	return nil
}

// upload posts one text document and returns its id.
func (b *bench) upload(ctx context.Context, name, text string, fields map[string]string) (int64, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("folder_id", strconv.FormatInt(b.folder, 10))
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_ = w.WriteField(k, fields[k])
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
	h.Set("Content-Type", "text/plain")
	pw, err := w.CreatePart(h)
	if err != nil {
		return 0, err
	}
	_, _ = pw.Write([]byte(text))
	_ = w.Close()
	req, err := http.NewRequestWithContext(ctx, "POST", b.s.url+"/apiv2/pub/documents/upload", &buf)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	var res struct {
		DocID int64 `json:"doc_id"`
	}
	if err := b.do(req, &res); err != nil {
		return 0, err
	}
	return res.DocID, nil
}

type searchResult struct {
	Total   int64            `json:"total"`
	Results []map[string]any `json:"results"`
}

func (r searchResult) ids() []int64 {
	out := make([]int64, len(r.Results))
	for i, res := range r.Results {
		f, _ := res["id"].(float64)
		out[i] = int64(f)
	}
	return out
}

func (b *bench) search(ctx context.Context, body map[string]any) (searchResult, error) {
	var r searchResult
	err := b.postJSON(ctx, "/apiv2/pub/search", body, &r)
	return r, err
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
				var id int64
				var err error
				began := time.Now()
				for attempt := 0; attempt < 5; attempt++ {
					if id, err = b.upload(ctx, name, text, fields); err == nil {
						break
					}
					time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
				}
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
		r, err := b.search(ctx, map[string]any{"limit": 1, "select": []any{"id"}})
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
