// Package hub fetches a sentence-transformer model for the local embedder
// (DOCREPO_EMBEDDER=local) from a Hugging Face-compatible hub, at a pinned
// revision, and verifies every file before it is put in place.
//
// Contract:
//
//   - The revision is a 40-hex commit id. A branch or tag is only accepted
//     when the caller asks for it to be resolved (Source.Resolve); the
//     files are then fetched at the commit the hub names, never at the
//     moving name, and the lock records that commit.
//   - Only the files the local embedder reads are fetched (Files), named
//     by this package, never by the hub's answer: a hub listing
//     "../../etc/passwd" gets nothing written.
//   - Each file is checked against a SHA-256: the caller's lock
//     (Pull's pin, from an earlier pull) when given, else the hub's own
//     metadata — the LFS object's SHA-256 for large files, the git blob id
//     (SHA-1 of "blob <size>\x00" + content) for small ones. A mismatch,
//     a short read or a size over the limit fails the pull and leaves the
//     target directory as it was.
//   - The files are written to a staging directory beside the target and
//     swapped in only when all of them verified, with a lock file
//     (LockFile) listing name, size and SHA-256 of each, so the same bytes
//     can be demanded again elsewhere (docrepoctl model pull -lock).
//
// The protocol is the hub's public HTTP API as huggingface_hub uses it:
// GET {base}/api/models/{repo}/revision/{rev}?blobs=true for the file list
// and GET {base}/{repo}/resolve/{commit}/{file} for the bytes (redirects
// to a CDN are followed; the bearer token is not sent across hosts).
package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// LockFile is the name of the lock written into a pulled model directory.
const LockFile = "docrepo-model.lock.json"

// Size limits of one file.
const (
	maxWeightsBytes = 4 << 30  // model.safetensors
	maxOtherBytes   = 64 << 20 // configuration and tokenizer files
	maxListingBytes = 8 << 20  // the hub's JSON answer
)

// File is one file the local embedder reads.
type File struct {
	Name     string
	Required bool
}

// Files lists what Pull fetches when the hub has it: the encoder's
// configuration and weights, the tokenizer (tokenizer.json or vocab.txt;
// one of the two is required) and sentence-transformers' pooling, window
// and prompt settings.
var Files = []File{
	{Name: "config.json", Required: true},
	{Name: "model.safetensors", Required: true},
	{Name: "tokenizer.json"},
	{Name: "vocab.txt"},
	{Name: "modules.json"},
	{Name: "1_Pooling/config.json"},
	{Name: "sentence_bert_config.json"},
	{Name: "config_sentence_transformers.json"},
}

// Source names a model on a hub.
type Source struct {
	// BaseURL of the hub, e.g. https://huggingface.co.
	BaseURL string
	// Repo is "owner/name", e.g. BAAI/bge-small-en-v1.5.
	Repo string
	// Revision is a 40-hex commit id, or, with Resolve, a branch or tag.
	Revision string
	// Resolve allows a revision that is not a commit id; the hub's answer
	// names the commit, which is then used for every file.
	Resolve bool
	// Token, when set, is sent as a bearer token (gated models).
	Token string
	// Client makes the requests (default: one with a 30-minute overall
	// timeout per request).
	Client *http.Client
}

// Lock records what a pull fetched.
type Lock struct {
	Repo     string       `json:"repo"`
	Revision string       `json:"revision"`
	Files    []LockedFile `json:"files"`
}

// LockedFile is one verified file.
type LockedFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ReadLock reads a lock file.
func ReadLock(path string) (*Lock, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(l.Files) == 0 {
		return nil, fmt.Errorf("%s: lists no files", path)
	}
	for _, f := range l.Files {
		if !validSHA256(f.SHA256) {
			return nil, fmt.Errorf("%s: %s: sha256 %q is not 64 hex digits", path, f.Name, f.SHA256)
		}
	}
	return &l, nil
}

var (
	repoRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)
	commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)
	refRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$`)
)

func validSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size
}

// sibling is one file of the hub's listing.
type sibling struct {
	Name   string `json:"rfilename"`
	Size   int64  `json:"size"`
	BlobID string `json:"blobId"`
	LFS    *struct {
		SHA256 string `json:"sha256"`
		Size   int64  `json:"size"`
	} `json:"lfs"`
}

type listing struct {
	SHA      string    `json:"sha"`
	Siblings []sibling `json:"siblings"`
}

// Pull fetches src into dir (created if missing). With pin, every file
// must be listed there and match its SHA-256 and size; the revision must
// be pin's. dir must be empty, missing, or a directory an earlier Pull
// made (it holds LockFile): its content is replaced only after every new
// file verified.
func Pull(ctx context.Context, src Source, dir string, pin *Lock) (*Lock, error) {
	if err := src.check(pin); err != nil {
		return nil, err
	}
	if err := checkTarget(dir); err != nil {
		return nil, err
	}
	c := src.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Minute}
	}
	list, err := src.list(ctx, c)
	if err != nil {
		return nil, err
	}
	commit := src.Revision
	if list.SHA != "" {
		if !commitRE.MatchString(list.SHA) {
			return nil, fmt.Errorf("hub: the hub names commit %q for %s@%s, not a commit id", list.SHA, src.Repo, src.Revision)
		}
		if commitRE.MatchString(src.Revision) && list.SHA != src.Revision {
			return nil, fmt.Errorf("hub: asked for commit %s, the hub answered for %s", src.Revision, list.SHA)
		}
		commit = list.SHA
	}
	if !commitRE.MatchString(commit) {
		return nil, fmt.Errorf("hub: the hub did not name the commit of %s@%s", src.Repo, src.Revision)
	}
	if pin != nil && pin.Revision != commit {
		return nil, fmt.Errorf("hub: the lock pins commit %s, %s@%s is %s", pin.Revision, src.Repo, src.Revision, commit)
	}
	want, err := selectFiles(list.Siblings, pin)
	if err != nil {
		return nil, fmt.Errorf("hub: %s@%s: %w", src.Repo, commit, err)
	}

	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	staging, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".pull-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staging)
	lock := &Lock{Repo: src.Repo, Revision: commit}
	for _, w := range want {
		lf, err := src.fetch(ctx, c, commit, w, staging)
		if err != nil {
			return nil, fmt.Errorf("hub: %s: %w", w.name, err)
		}
		lock.Files = append(lock.Files, lf)
	}
	b, err := json.MarshalIndent(lock, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(staging, LockFile), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := swapIn(staging, dir); err != nil {
		return nil, err
	}
	return lock, nil
}

func (s Source) check(pin *Lock) error {
	u, err := url.Parse(s.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("hub: base URL %q is not an http(s) URL", s.BaseURL)
	}
	if !repoRE.MatchString(s.Repo) || strings.Contains(s.Repo, "..") {
		return fmt.Errorf("hub: %q is not a repository name (owner/name)", s.Repo)
	}
	switch {
	case commitRE.MatchString(s.Revision):
	case s.Resolve && refRE.MatchString(s.Revision) && !strings.Contains(s.Revision, ".."):
	case s.Resolve:
		return fmt.Errorf("hub: %q is not a branch, tag or commit id", s.Revision)
	default:
		return fmt.Errorf("hub: revision %q is not a commit id (40 hex digits); pin one, or ask for the branch or tag to be resolved (docrepoctl model pull -resolve)", s.Revision)
	}
	if pin != nil && pin.Repo != "" && pin.Repo != s.Repo {
		return fmt.Errorf("hub: the lock is for %s, not %s", pin.Repo, s.Repo)
	}
	return nil
}

// checkTarget refuses a directory Pull did not make, so that a typo
// cannot replace someone's files.
func checkTarget(dir string) error {
	if strings.TrimSpace(dir) == "" {
		return errors.New("hub: no model directory given")
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("hub: model directory: %w", err)
	case len(entries) == 0:
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, LockFile)); err != nil {
		return fmt.Errorf("hub: %s is not empty and holds no %s (not made by a pull); choose a new or empty directory", dir, LockFile)
	}
	return nil
}

func (s Source) get(ctx context.Context, c *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}

func (s Source) base() string { return strings.TrimRight(s.BaseURL, "/") }

func (s Source) list(ctx context.Context, c *http.Client) (*listing, error) {
	u := fmt.Sprintf("%s/api/models/%s/revision/%s?blobs=true", s.base(), s.Repo, url.PathEscape(s.Revision))
	resp, err := s.get(ctx, c, u)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	defer resp.Body.Close()
	var l listing
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxListingBytes)).Decode(&l); err != nil {
		return nil, fmt.Errorf("hub: the file list of %s@%s: %w", s.Repo, s.Revision, err)
	}
	return &l, nil
}

// wanted is one file to fetch and how to check it.
type wanted struct {
	name   string
	size   int64  // expected size, -1 when unknown
	sha256 string // expected SHA-256 (hex), or ""
	blobID string // expected git blob id (hex SHA-1), or ""
	limit  int64
}

func selectFiles(sibs []sibling, pin *Lock) ([]wanted, error) {
	byName := make(map[string]sibling, len(sibs))
	for _, s := range sibs {
		byName[s.Name] = s
	}
	var pinned map[string]LockedFile
	if pin != nil {
		pinned = make(map[string]LockedFile, len(pin.Files))
		for _, f := range pin.Files {
			pinned[f.Name] = f
		}
	}
	var out []wanted
	var missing []string
	for _, f := range Files {
		s, ok := byName[f.Name]
		if !ok {
			if f.Required {
				missing = append(missing, f.Name)
			}
			if _, inLock := pinned[f.Name]; inLock {
				return nil, fmt.Errorf("the lock lists %s, the hub does not have it", f.Name)
			}
			continue
		}
		w := wanted{name: f.Name, size: -1, limit: maxOtherBytes}
		if f.Name == "model.safetensors" {
			w.limit = maxWeightsBytes
		}
		switch {
		case pin != nil:
			p, ok := pinned[f.Name]
			if !ok {
				return nil, fmt.Errorf("the hub has %s, the lock does not list it", f.Name)
			}
			w.sha256, w.size = p.SHA256, p.Size
		case s.LFS != nil:
			if !validSHA256(s.LFS.SHA256) {
				return nil, fmt.Errorf("%s: the hub gives no valid sha256 (%q)", f.Name, s.LFS.SHA256)
			}
			w.sha256, w.size = s.LFS.SHA256, s.LFS.Size
		default:
			if b, err := hex.DecodeString(s.BlobID); err != nil || len(b) != sha1.Size {
				return nil, fmt.Errorf("%s: the hub gives neither an LFS sha256 nor a blob id", f.Name)
			}
			w.blobID, w.size = s.BlobID, s.Size
		}
		if w.size > w.limit {
			return nil, fmt.Errorf("%s: %d bytes is over the limit of %d", f.Name, w.size, w.limit)
		}
		out = append(out, w)
	}
	if _, ok := byName["tokenizer.json"]; !ok {
		if _, ok := byName["vocab.txt"]; !ok {
			missing = append(missing, "tokenizer.json or vocab.txt")
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not a model the local embedder can run: no %s (only safetensors weights are read)", strings.Join(missing, ", "))
	}
	return out, nil
}

func (s Source) fetch(ctx context.Context, c *http.Client, commit string, w wanted, staging string) (LockedFile, error) {
	segs := strings.Split(w.name, "/")
	for i := range segs {
		segs[i] = url.PathEscape(segs[i])
	}
	u := fmt.Sprintf("%s/%s/resolve/%s/%s", s.base(), s.Repo, commit, strings.Join(segs, "/"))
	resp, err := s.get(ctx, c, u)
	if err != nil {
		return LockedFile{}, err
	}
	defer resp.Body.Close()
	path := filepath.Join(staging, filepath.FromSlash(w.name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return LockedFile{}, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return LockedFile{}, err
	}
	defer f.Close()
	sum := sha256.New()
	var blob hash.Hash
	sinks := []io.Writer{f, sum}
	if w.blobID != "" {
		if w.size < 0 {
			return LockedFile{}, errors.New("the hub gives a blob id without a size")
		}
		blob = sha1.New()
		io.WriteString(blob, "blob "+strconv.FormatInt(w.size, 10)+"\x00")
		sinks = append(sinks, blob)
	}
	n, err := io.Copy(io.MultiWriter(sinks...), io.LimitReader(resp.Body, w.limit+1))
	if err != nil {
		return LockedFile{}, err
	}
	switch {
	case n > w.limit:
		return LockedFile{}, fmt.Errorf("more than the limit of %d bytes", w.limit)
	case w.size >= 0 && n != w.size:
		return LockedFile{}, fmt.Errorf("got %d bytes, want %d", n, w.size)
	}
	got := hex.EncodeToString(sum.Sum(nil))
	if w.sha256 != "" && got != strings.ToLower(w.sha256) {
		return LockedFile{}, fmt.Errorf("sha256 %s, want %s", got, w.sha256)
	}
	if blob != nil {
		if b := hex.EncodeToString(blob.Sum(nil)); b != strings.ToLower(w.blobID) {
			return LockedFile{}, fmt.Errorf("git blob id %s, want %s", b, w.blobID)
		}
	}
	if err := f.Sync(); err != nil {
		return LockedFile{}, err
	}
	return LockedFile{Name: w.name, Size: n, SHA256: got}, f.Close()
}

// swapIn replaces dir by staging: the old content is moved aside first
// and removed only after the new one is in place.
func swapIn(staging, dir string) error {
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = staging + ".old"
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(staging, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir)
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}
