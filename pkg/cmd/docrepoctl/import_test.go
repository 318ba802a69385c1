package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestImportRefusesSideFilesNamingNoFile: a user wrote boots.meta.json
// beside boots.txt (the side-file is boots.txt.meta.json); the import
// uploaded boots.txt without its fields and said nothing. It now stops
// before sending anything and names the side-file.
func TestImportRefusesSideFilesNamingNoFile(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, `{"detail":"not in this test"}`, http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"boots.txt":               "Receipt for winter boots.",
		"boots.meta.json":         `{"description": "Boots receipt"}`,
		"heating.txt":             "Letter about the heating.",
		"heating.txt.meta.json":   `{"description": "Heating"}`,
		".hidden/stray.meta.json": `{}`,
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := ctlEnv(t, nil, "import", "-url", srv.URL, "-token", "drk_x", "-state", filepath.Join(t.TempDir(), "state"), dir)
	if err == nil || !strings.Contains(err.Error(), "boots.meta.json") || strings.Contains(err.Error(), "heating") || strings.Contains(err.Error(), "stray") {
		t.Fatalf("err = %v, want the side-file boots.meta.json named, and only it", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the gateway got %d requests, want none", n)
	}
}
