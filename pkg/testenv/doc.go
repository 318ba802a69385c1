// Package testenv holds the real backing services docrepo's tests run
// against; each sub-package starts or connects to one of them.
//
// The environment variable DOCREPO_TEST_STRICT=1 (set by `make test`) turns
// "service unavailable, skipping" into a test failure, so a CI run can never
// pass by skipping.
package testenv

import (
	"os"
	"testing"
)

// Unavailable skips t, or fails it under DOCREPO_TEST_STRICT=1, because a
// backing service the test needs is not there.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("DOCREPO_TEST_STRICT") == "1" {
		t.Fatalf("DOCREPO_TEST_STRICT=1 and a required service is unavailable: "+format, args...)
	}
	t.Skipf("skipping: "+format, args...)
}
