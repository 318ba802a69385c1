package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// DataDir returns the shared benchmark/fixture folder ../shared/data/<name>
// beside the checkout (found by walking up from the working directory), or
// the folder named by the environment variable env when that is set. The
// files are public fixtures that are never copied into the repository; when
// the folder is absent (a user's fresh clone) the test is skipped with a
// message naming it — also under DOCREPO_TEST_STRICT, since absent fixtures
// are not a broken environment.
func DataDir(t testing.TB, name, env, probe string) string {
	t.Helper()
	if dir := os.Getenv(env); dir != "" {
		return dir
	}
	if dir, ok := FindDataDir(name, probe); ok {
		return dir
	}
	wd, _ := os.Getwd()
	t.Skipf("skipping: fixture folder shared/data/%s (with %s) not found in any parent of %s; set %s to point at it", name, probe, wd, env)
	return ""
}

// FindDataDir looks for shared/data/<name>/<probe> in the working directory
// and its parents.
func FindDataDir(name, probe string) (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		candidate := filepath.Join(dir, "shared", "data", name)
		if _, err := os.Stat(filepath.Join(candidate, probe)); err == nil {
			return candidate, true
		}
		if filepath.Dir(dir) == dir {
			return "", false
		}
	}
}
