package faulttest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/auth"
	rest "github.com/docrepo/docrepo/pkg/client"
)

// TestRandomTokenFlood sends 10,000 uploads (256 KiB each, 32 at a time)
// with random well-formed tokens from one address to the stack of `make
// run`, and reports what they cost: token lookups in Postgres (the
// services' docrepo_token_cache_misses_total), the database's
// transactions beyond its idle rate, and the gateway's resident memory.
// It is evidence, not a check of a bound: run it with
// DOCREPO_FAULTS_AUTH_FLOOD=1 (results: gateway/faulttest/results/).
func TestRandomTokenFlood(t *testing.T) {
	if os.Getenv("DOCREPO_FAULTS_AUTH_FLOOD") == "" {
		t.Skip("set DOCREPO_FAULTS_AUTH_FLOOD=1 to measure a flood of random tokens")
	}
	const requests, workers, bodySize = 10_000, 32, 256 << 10
	s := startStack(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	xacts := func() int64 {
		var n int64
		if err := conn.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	gw, err := s.pid("gateway")
	if err != nil {
		t.Fatal(err)
	}
	// The idle rate of transactions (relays, listeners, probes).
	idle0, idleStart := xacts(), time.Now()
	time.Sleep(5 * time.Second)
	idleRate := float64(xacts()-idle0) / time.Since(idleStart).Seconds()

	misses0, rss0 := s.tokenLookups(t), procStatus(t, gw, "VmRSS")
	x0, start := xacts(), time.Now()
	base, err := rest.New(s.url, "", rest.Options{Retry: rest.NoRetry,
		HTTPClient: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}})
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("flood "), bodySize/6)
	var next atomic.Int64
	var mu sync.Mutex
	statuses := map[string]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= requests {
				token, _ := auth.NewToken()
				_, err := base.WithToken(token).Upload(ctx, rest.Upload{File: bytes.NewReader(body), Filename: "flood.txt"})
				key := strconv.Itoa(rest.StatusOf(err))
				if rest.StatusOf(err) == 0 {
					key = "transport error"
					if err == nil {
						key = "200"
					}
				}
				mu.Lock()
				statuses[key]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	lookups := s.tokenLookups(t) - misses0
	extra := float64(xacts()-x0) - idleRate*took.Seconds()
	hwm, rss := procStatus(t, gw, "VmHWM"), procStatus(t, gw, "VmRSS")

	var keys []string
	for k := range statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var answers []string
	for _, k := range keys {
		answers = append(answers, fmt.Sprintf("%s: %d", k, statuses[k]))
	}
	report := fmt.Sprintf("%d uploads of %d KiB with random tokens, %d at a time, from one address, in %.1f s (%.0f/s)\n"+
		"answers: %s\n"+
		"token lookups in Postgres (services' docrepo_token_cache_misses_total): %d\n"+
		"database transactions beyond the idle rate (%.1f/s): %.0f\n"+
		"gateway resident memory: %d MiB before, %d MiB after, peak %d MiB\n",
		requests, bodySize>>10, workers, took.Seconds(), float64(requests)/took.Seconds(), strings.Join(answers, ", "),
		lookups, idleRate, extra, rss0>>10, rss>>10, hwm>>10)
	t.Log("\n" + report)
	if out := os.Getenv("DOCREPO_FAULTS_AUTH_FLOOD_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tokenLookups sums docrepo_token_cache_misses_total over the services'
// metrics endpoints (devstack: base port + 11…14).
func (s *stack) tokenLookups(t *testing.T) int64 {
	t.Helper()
	var sum int64
	for i := 11; i <= 14; i++ {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.ports["document"]-1+i))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "docrepo_token_cache_misses_total "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				sum += int64(f)
			}
		}
		resp.Body.Close()
	}
	return sum
}

// procStatus reads a kB field of /proc/<pid>/status.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
