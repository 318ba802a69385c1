package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// parseDockerfile splits a Dockerfile into instructions (comments and
// parser directives dropped, backslash continuations joined).
func parseDockerfile(content string) []instruction {
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(content, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			continue // comment inside a continued instruction
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\"))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// stages splits instructions at each FROM.
func stages(ins []instruction) [][]instruction {
	var out [][]instruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			out = append(out, nil)
		}
		if len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], in)
		}
	}
	return out
}

var mountFlag = regexp.MustCompile(`--mount=\S+\s*`)

// buildScript is the shell script of the build stage's RUN that selects
// the command, with its --mount flags removed.
func buildScript(t *testing.T, build []instruction) string {
	t.Helper()
	for _, in := range build {
		if in.cmd == "RUN" && strings.Contains(in.args, "case ") {
			return strings.TrimSpace(mountFlag.ReplaceAllString(in.args, ""))
		}
	}
	t.Fatal("deploy/Dockerfile: no RUN instruction selects the command (case on CMD)")
	return ""
}

// runBuildScript runs the Dockerfile's build script for one CMD with a fake
// go that records its arguments, in a temporary directory standing for /out.
func runBuildScript(t *testing.T, script, cmd string) (goCalls []string, err error) {
	t.Helper()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "fakebin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(tmp, "go.log")
	fake := "#!/bin/sh\necho \"$*\" >> " + log + "\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "out")
	sh := exec.Command("sh", "-c", strings.ReplaceAll(script, "/out/", out+"/"))
	sh.Dir = root
	sh.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "CMD="+cmd, "TARGETOS=linux", "TARGETARCH=amd64")
	output, err := sh.CombinedOutput()
	if err != nil {
		return nil, &scriptError{err: err, output: string(output)}
	}
	data, _ := os.ReadFile(log)
	for _, state := range []string{"state/index", "state/blobs"} {
		if fi, err := os.Stat(filepath.Join(out, state)); err != nil || !fi.IsDir() {
			t.Errorf("CMD=%s: the build does not create /out/%s (the writable volume mount points)", cmd, state)
		}
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n"), nil
}

type scriptError struct {
	err    error
	output string
}

func (e *scriptError) Error() string { return e.err.Error() + ": " + e.output }

func TestDockerfile(t *testing.T) {
	content, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	st := stages(parseDockerfile(string(content)))
	if len(st) < 2 {
		t.Fatalf("deploy/Dockerfile has %d stages, want a build stage, runtime bases and the runtime stage", len(st))
	}
	build, final := st[0], st[len(st)-1]
	// Named stages by name ("FROM base AS name"), with the base they start
	// from.
	named := map[string][]instruction{}
	baseOf := map[string]string{}
	for _, s := range st[1 : len(st)-1] {
		from, name, ok := strings.Cut(s[0].args, " AS ")
		if !ok {
			from, name, ok = strings.Cut(s[0].args, " as ")
		}
		if !ok {
			t.Fatalf("deploy/Dockerfile: stage %q has no name", s[0].args)
		}
		named[strings.TrimSpace(name)] = s
		baseOf[strings.TrimSpace(name)] = strings.TrimSpace(from)
	}

	t.Run("static build", func(t *testing.T) {
		found := false
		for _, in := range build {
			if in.cmd == "ENV" && strings.Contains(in.args, "CGO_ENABLED=0") {
				found = true
			}
		}
		if !found {
			t.Error("the build stage does not set CGO_ENABLED=0: the binaries must be static for a distroless image")
		}
	})

	// Each command's runtime base: the OCR base (Tesseract and poppler, as
	// programs the static binaries run) for the two commands that run the
	// indexing pipeline, distroless static for the others.
	t.Run("runtime bases", func(t *testing.T) {
		if from := baseOf["runtime-static"]; !strings.HasPrefix(from, "gcr.io/distroless/static") || !strings.Contains(from, "nonroot") {
			t.Errorf("runtime-static is %q: want distroless static, nonroot", from)
		}
		ocrRun := ""
		for _, in := range named["runtime-ocr"] {
			if in.cmd == "RUN" {
				ocrRun += in.args + "\n"
			}
		}
		for _, want := range []string{"tesseract-ocr", "tesseract-ocr-$", "poppler-utils", "useradd -u 65532", "rm -rf /var/lib/apt/lists"} {
			if !strings.Contains(ocrRun, want) {
				t.Errorf("runtime-ocr does not %q: %s", want, ocrRun)
			}
		}
		for _, cmd := range append(slices.Clone(services), "docrepoctl") {
			want := "runtime-static"
			if cmd == "search" || cmd == "indexer" {
				want = "runtime-ocr"
			}
			if got := baseOf["runtime-"+cmd]; got != want {
				t.Errorf("CMD=%s runs on %q, want %s", cmd, got, want)
			}
		}
	})

	t.Run("runtime image", func(t *testing.T) {
		var from, user, entrypoint string
		copiesBin := false
		for _, in := range final {
			switch in.cmd {
			case "FROM":
				from = in.args
			case "USER":
				user = in.args
			case "ENTRYPOINT":
				entrypoint = in.args
			case "COPY":
				if strings.Contains(in.args, "/out/bin/ /usr/local/bin/") {
					copiesBin = true
				}
			}
		}
		if from != "runtime-${CMD}" {
			t.Errorf("runtime image %q: want runtime-${CMD} (the command's base)", from)
		}
		if u, _, _ := strings.Cut(user, ":"); u == "" || u == "0" || u == "root" {
			t.Errorf("USER %q: the image must run as a non-root user", user)
		}
		if entrypoint != `["/usr/local/bin/docrepo"]` {
			t.Errorf("ENTRYPOINT %s, want [\"/usr/local/bin/docrepo\"]", entrypoint)
		}
		if !copiesBin {
			t.Error("the runtime stage does not copy /out/bin/ to /usr/local/bin/ (docrepo and the docrepoctl health check)")
		}
	})

	// The build script, run for real with a fake go: every command the
	// deployments build selects its own main package, and the image always
	// gets docrepoctl for its health check.
	script := buildScript(t, build)
	dirs := commandDirs(t)
	for _, cmd := range append(slices.Clone(services), "docrepoctl") {
		t.Run("CMD="+cmd, func(t *testing.T) {
			calls, err := runBuildScript(t, script, cmd)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				"build -ldflags=-s -w -o " + "OUT/bin/docrepo ./" + dirs[cmd],
				"build -ldflags=-s -w -o " + "OUT/bin/docrepoctl ./" + dirs["docrepoctl"],
			}
			for i := range calls {
				calls[i] = regexp.MustCompile(`-o \S*/out/bin/`).ReplaceAllString(calls[i], "-o OUT/bin/")
			}
			if !slices.Equal(calls, want) {
				t.Fatalf("go was run as\n  %s\nwant\n  %s", strings.Join(calls, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
	t.Run("unknown CMD", func(t *testing.T) {
		for _, cmd := range []string{"", "devstack", "gateway; rm -rf /"} {
			if _, err := runBuildScript(t, script, cmd); err == nil || !strings.Contains(err.Error(), "is not a docrepo command") {
				t.Errorf("CMD=%q: err = %v, want the build to refuse it", cmd, err)
			}
		}
	})
}
