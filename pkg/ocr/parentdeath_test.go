package ocr_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/extract"
	"github.com/docrepo/docrepo/pkg/ocr"
)

// TestOCRProgramsDieWithTheirParent: a process killed with SIGKILL while
// tesseract reads a page for it leaves no tesseract running. The parent is
// this test binary run again (TestOCRParentProcess), reading an image with
// a tesseract that records its process id and never finishes.
func TestOCRProgramsDieWithTheirParent(t *testing.T) {
	if _, err := exec.LookPath("pdftoppm"); err != nil {
		t.Skip("pdftoppm not installed (make test installs poppler-utils)")
	}
	dir := t.TempDir()
	parent := exec.Command(os.Args[0], "-test.run=^TestOCRParentProcess$")
	parent.Env = append(os.Environ(), "DOCREPO_OCR_PARENT_DIR="+dir)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "tesseract.pid")
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			parent.Process.Kill()
			t.Fatal("the parent never started tesseract")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	for deadline := time.Now().Add(10 * time.Second); running(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("tesseract (pid %d) still runs 10 s after its parent was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// running reports whether pid is a live process (a zombie is not).
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// TestOCRParentProcess is TestOCRProgramsDieWithTheirParent's parent: it
// reads a page with a tesseract that never finishes, until it is killed.
func TestOCRParentProcess(t *testing.T) {
	dir := os.Getenv("DOCREPO_OCR_PARENT_DIR")
	if dir == "" {
		t.Skip("the parent process of TestOCRProgramsDieWithTheirParent")
	}
	bin := filepath.Join(dir, "tesseract")
	script := "#!/bin/sh\nif [ \"$1\" = --list-langs ]; then echo 'List of available languages (1):'; echo eng; exit 0; fi\n" +
		"echo $$ > " + filepath.Join(dir, "tesseract.pid") + "\nexec sleep 600\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := ocr.New(ocr.Config{Tesseract: bin, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "page.png")
	if err := os.WriteFile(img, []byte("not read"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _ = e.File(img, "", 1).Recognize(context.Background(), extract.FormatPNG, []extract.OCRPage{{Number: 1, Width: 10, Height: 10}})
}

// TestNewSweepsPagesOfGoneProcesses: the page directories a killed
// process left in the OCR temporary directory are removed when an engine
// starts.
func TestNewSweepsPagesOfGoneProcesses(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("no true program: %v", err)
	}
	left := filepath.Join(dir, fmt.Sprintf("%s%d-1234", ocr.TempPrefix, gone.Process.Pid))
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "p1.pgm"), []byte("P5"), 0o600); err != nil {
		t.Fatal(err)
	}
	newEngine(t, ocr.Config{TempDir: dir})
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("%s still there after the engine started (%v)", left, err)
	}
}
