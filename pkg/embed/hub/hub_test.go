package hub_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/embed/bert/berttest"
	"github.com/docrepo/docrepo/pkg/embed/hub"
	"github.com/docrepo/docrepo/pkg/embed/hub/hubtest"
)

const (
	repo   = hubtest.Repo
	commit = hubtest.Commit
)

func tinyModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	spec := berttest.Tiny()
	spec.Pooling = "mean"
	if _, err := berttest.Write(dir, spec); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPullFetchesVerifiesAndLoads(t *testing.T) {
	src := tinyModel(t)
	h := hubtest.NewServer(t, src)
	h.Extra = []string{"../../escape.txt", "/etc/passwd", "README.md"}
	dir := filepath.Join(t.TempDir(), "models", "tiny")

	lock, err := hub.Pull(context.Background(), hub.Source{BaseURL: h.Hub.URL, Repo: repo, Revision: commit, Token: "hf_secret"}, dir, nil)
	if err != nil {
		t.Fatalf("Pull: %v", err)
	}
	if lock.Revision != commit || lock.Repo != repo {
		t.Fatalf("lock names %s@%s", lock.Repo, lock.Revision)
	}
	for _, f := range lock.Files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Name)))
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != f.SHA256 || string(b) != string(h.Files[f.Name]) {
			t.Errorf("%s: content or lock hash differs from the hub's file", f.Name)
		}
	}
	for _, name := range []string{"config.json", "model.safetensors", "vocab.txt", "1_Pooling/config.json", hub.LockFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s missing after pull: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err == nil {
		t.Error("a file the embedder does not read was fetched")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "..", "escape.txt")); err == nil {
		t.Error("a listed ../ name was written outside the model directory")
	}
	cdnHost := strings.Replace(strings.TrimPrefix(h.CDN.URL, "http://"), "127.0.0.1", "localhost", 1)
	if got, asked := h.AuthSeen[cdnHost]; !asked {
		t.Error("the weights were not fetched through the CDN redirect")
	} else if got != "" {
		t.Errorf("the bearer token was sent to the CDN host: %q", got)
	}
	if got := h.AuthSeen[strings.TrimPrefix(h.Hub.URL, "http://")]; got != "Bearer hf_secret" {
		t.Errorf("the hub saw Authorization %q", got)
	}

	l, err := embed.NewLocal(embed.LocalConfig{ModelDir: dir})
	if err != nil {
		t.Fatalf("the pulled directory does not load: %v", err)
	}
	vecs, err := l.Embed(context.Background(), []string{"a pulled model embeds text"})
	if err != nil || len(vecs) != 1 || len(vecs[0]) != berttest.Tiny().Hidden {
		t.Fatalf("Embed = %d vectors, %v", len(vecs), err)
	}

	// The lock demands the same bytes again: a second pull with it works
	// and replaces the directory.
	pin, err := hub.ReadLock(filepath.Join(dir, hub.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Pull(context.Background(), hub.Source{BaseURL: h.Hub.URL, Repo: repo, Revision: commit}, dir, pin); err != nil {
		t.Fatalf("Pull with the lock: %v", err)
	}
}

func TestPullRefusesWhatItCannotVerify(t *testing.T) {
	src := tinyModel(t)
	otherWeights := func(h *hubtest.Server) {
		b := append([]byte(nil), h.Files["model.safetensors"]...)
		b[len(b)-1] ^= 0xff
		h.Served["model.safetensors"] = b
	}
	tests := []struct {
		name     string
		revision string
		resolve  bool
		tamper   func(*hubtest.Server)
		pin      func(*hub.Lock)
		wantErr  string
		wantReqs bool // whether the hub may be asked at all
	}{
		{name: "a branch without asking to resolve it", revision: "main", wantErr: "not a commit id"},
		{name: "weights differing from the LFS sha256", revision: commit, tamper: otherWeights, wantErr: "sha256", wantReqs: true},
		{name: "a small file differing from its git blob id", revision: commit, wantReqs: true, wantErr: "git blob id",
			tamper: func(h *hubtest.Server) { h.Served["config.json"] = append([]byte(" "), h.Files["config.json"][1:]...) }},
		{name: "a truncated file", revision: commit, wantReqs: true, wantErr: "bytes",
			tamper: func(h *hubtest.Server) { h.Served["vocab.txt"] = h.Files["vocab.txt"][:10] }},
		{name: "weights differing from the lock", revision: commit, wantReqs: true, wantErr: "sha256",
			pin: func(l *hub.Lock) {
				for i := range l.Files {
					if l.Files[i].Name == "model.safetensors" {
						l.Files[i].SHA256 = strings.Repeat("0", 64)
					}
				}
			}},
		{name: "a lock of another commit", revision: commit, wantReqs: true, wantErr: "lock pins",
			pin: func(l *hub.Lock) { l.Revision = strings.Repeat("f", 40) }},
		{name: "a missing revision", revision: strings.Repeat("e", 40), wantReqs: true, wantErr: "404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hubtest.NewServer(t, src)
			dir := filepath.Join(t.TempDir(), "tiny")
			// A good pull first: a failed one must leave it as it was.
			good, err := hub.Pull(context.Background(), hub.Source{BaseURL: h.Hub.URL, Repo: repo, Revision: commit}, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			h.Requests = nil
			if tt.tamper != nil {
				tt.tamper(h)
			}
			var pin *hub.Lock
			if tt.pin != nil {
				cp := *good
				cp.Files = append([]hub.LockedFile(nil), good.Files...)
				tt.pin(&cp)
				pin = &cp
			}
			_, err = hub.Pull(context.Background(), hub.Source{BaseURL: h.Hub.URL, Repo: repo, Revision: tt.revision, Resolve: tt.resolve}, dir, pin)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Pull = %v, want an error mentioning %q", err, tt.wantErr)
			}
			if !tt.wantReqs && len(h.Requests) > 0 {
				t.Errorf("the hub was asked %v before the revision was refused", h.Requests)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("a failed pull changed the model directory:\nbefore %s\nafter  %s", before, after)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".tiny.pull-*")); len(leftovers) > 0 {
				t.Errorf("staging directories left behind: %v", leftovers)
			}
		})
	}
}

func TestPullResolvesABranchToItsCommit(t *testing.T) {
	h := hubtest.NewServer(t, tinyModel(t))
	dir := filepath.Join(t.TempDir(), "tiny")
	lock, err := hub.Pull(context.Background(), hub.Source{BaseURL: h.Hub.URL, Repo: repo, Revision: "main", Resolve: true}, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lock.Revision != commit {
		t.Fatalf("lock revision %q, want the commit %s", lock.Revision, commit)
	}
	for _, r := range h.Requests {
		if strings.Contains(r, "/resolve/main/") {
			t.Errorf("a file was fetched at the branch, not the commit: %s", r)
		}
	}
}

func TestPullKeepsForeignDirectories(t *testing.T) {
	h := hubtest.NewServer(t, tinyModel(t))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := hub.Pull(context.Background(), hub.Source{BaseURL: h.Hub.URL, Repo: repo, Revision: commit}, dir, nil)
	if err == nil || !strings.Contains(err.Error(), "not made by a pull") {
		t.Fatalf("Pull into a foreign directory = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "mine" {
		t.Fatal("the foreign file was touched")
	}
}

func TestSourceRejectsHostileNames(t *testing.T) {
	tests := []struct{ name, base, repo, rev string }{
		{name: "repository climbing out", base: "http://hub", repo: "../etc", rev: commit},
		{name: "repository with a slash too many", base: "http://hub", repo: "a/b/c", rev: commit},
		{name: "revision with dots", base: "http://hub", repo: repo, rev: "../../x"},
		{name: "not http", base: "file:///etc", repo: repo, rev: commit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := hub.Pull(context.Background(), hub.Source{BaseURL: tt.base, Repo: tt.repo, Revision: tt.rev, Resolve: true}, t.TempDir(), nil)
			if err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// snapshot describes a directory's files and their hashes.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		c, _ := os.ReadFile(p)
		sum := sha256.Sum256(c)
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s=%x ", rel, sum[:4])
		return nil
	})
	return b.String()
}
