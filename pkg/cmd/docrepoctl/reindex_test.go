package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
)

func TestRenderBar(t *testing.T) {
	tests := []struct {
		name                string
		done, total, failed int64
		elapsed             time.Duration
		want                string
	}{
		{name: "start", done: 0, total: 100, elapsed: time.Second, want: "[..............................]   0.0%  0/100  failed 0  0 docs/s"},
		{name: "half", done: 50, total: 100, failed: 2, elapsed: 2 * time.Second, want: "[###############...............]  50.0%  50/100  failed 2  25 docs/s"},
		{name: "done", done: 100, total: 100, elapsed: time.Second, want: "[##############################] 100.0%  100/100  failed 0  100 docs/s"},
		{name: "empty index", done: 0, total: 0, elapsed: 0, want: "[..............................]   0.0%  0/0  failed 0  0 docs/s"},
		{name: "total grew past done", done: 120, total: 100, elapsed: time.Second, want: "[##############################] 100.0%  120/100  failed 0  120 docs/s"},
	}
	for _, tc := range tests {
		if got := renderBar(tc.done, tc.total, tc.failed, tc.elapsed); got != tc.want {
			t.Errorf("%s: renderBar = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestProgressWriter(t *testing.T) {
	var term, plain bytes.Buffer
	pt, pp := newProgressWriter(&term, true), newProgressWriter(&plain, false)
	for i := int64(1); i <= 3; i++ {
		r := &indexerv1.ReindexResponse{Done: i, Total: 3}
		pt.update(r, time.Second)
		pp.update(r, time.Second)
	}
	final := &indexerv1.ReindexResponse{Done: 3, Total: 3, Finished: true}
	pt.done(final, time.Second)
	pp.done(final, time.Second)
	if n := strings.Count(term.String(), "\r"); n != 3 {
		t.Errorf("terminal output redraws %d times, want 3: %q", n, term.String())
	}
	if strings.Contains(plain.String(), "\r") {
		t.Errorf("plain output has carriage returns: %q", plain.String())
	}
	if lines := strings.Count(plain.String(), "\n"); lines != 2 {
		t.Errorf("plain output has %d lines, want 2 (one progress line, then the summary): %q", lines, plain.String())
	}
	for _, out := range []string{term.String(), plain.String()} {
		if !strings.HasSuffix(out, "reindexed 3 documents (0 failed) in 1s\n") {
			t.Errorf("output does not end with the summary: %q", out)
		}
	}
}
