package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed/bert/berttest"
	"github.com/docrepo/docrepo/pkg/embed/hub"
	"github.com/docrepo/docrepo/pkg/embed/hub/hubtest"
)

// A user with internet runs model pull against the hub; here the hub is a
// local server serving a small model the test writes.
func TestModelPullFromALocalHub(t *testing.T) {
	src := t.TempDir()
	spec := berttest.Tiny()
	spec.Pooling = "mean"
	if _, err := berttest.Write(src, spec); err != nil {
		t.Fatal(err)
	}
	h := hubtest.NewServer(t, src)
	dir := filepath.Join(t.TempDir(), "models", "tiny")
	env := map[string]string{"DOCREPO_MODEL_HUB_URL": h.Hub.URL, "DOCREPO_EMBED_MODEL_DIR": dir}

	tests := []struct {
		name    string
		args    []string
		wantOut string
		wantErr string
	}{
		{name: "no revision", args: []string{"model", "pull", hubtest.Repo}, wantErr: "names no revision"},
		{name: "a branch without -resolve", args: []string{"model", "pull", hubtest.Repo + "@main"}, wantErr: "to be resolved (docrepoctl model pull -resolve)"},
		{name: "pinned commit", args: []string{"model", "pull", hubtest.Repo + "@" + hubtest.Commit}, wantOut: "32 dimensions"},
		{name: "again with the lock it wrote", args: []string{"model", "pull", "-lock", filepath.Join(dir, hub.LockFile), hubtest.Repo + "@" + hubtest.Commit}, wantOut: "DOCREPO_EMBEDDER=local"},
		{name: "a branch with -resolve", args: []string{"model", "pull", "-resolve", hubtest.Repo + "@main"}, wantOut: hubtest.Commit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := ctlEnv(t, env, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("model pull: %v", err)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Fatalf("output %q lacks %q", out, tt.wantOut)
			}
		})
	}
}
