package bleveengine

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

func TestTmpProf(t *testing.T) {
	dir := os.Getenv("DOCREPO_BENCH_INDEX")
	if dir == "" {
		t.Skip()
	}
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	q := queryOf(t, os.Getenv("Q"))
	for i := range 15 {
		s := time.Now()
		res, err := e.Search(context.Background(), engine.Request{Query: q, Unrestricted: true, QueryVector: make([]float32, 512)})
		if i < 3 {
			t.Log(time.Since(s), res.Total, err)
		}
	}
}
