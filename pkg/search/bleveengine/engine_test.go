package bleveengine

import (
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/search/enginetest"
)

func newTestEngine(t *testing.T, dir string, opts Options) *Engine {
	t.Helper()
	e, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestConformanceInMemory(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) engine.Engine {
		return newTestEngine(t, "", Options{InMemory: true})
	})
}

func TestConformanceOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("in-memory conformance covers the semantics in -short mode")
	}
	enginetest.Run(t, func(t *testing.T) engine.Engine {
		return newTestEngine(t, t.TempDir()+"/index", Options{})
	})
}

// TestConformanceWithoutGrams runs the suite on engines without the common
// grams field, as an index of format 1 opens.
func TestConformanceWithoutGrams(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) engine.Engine {
		e := newTestEngine(t, "", Options{InMemory: true})
		e.features = indexFeatures{}
		return e
	})
}

// TestConformanceWithoutPairs runs the suite on engines without the pair
// field, as an index of format 3 opens.
func TestConformanceWithoutPairs(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) engine.Engine {
		e := newTestEngine(t, "", Options{InMemory: true})
		e.features.pairs = false
		return e
	})
}
