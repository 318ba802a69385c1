package extract

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// formBombPDF is a one-page PDF of a few KB whose page draws form F1,
// which draws F2 perLevel times, which draws F3 perLevel times, and so on
// for levels forms: perLevel^(levels-1) invocations of the innermost form,
// which shows text (or draws a line when text is empty).
func formBombPDF(t testing.TB, levels, perLevel int, text string) []byte {
	t.Helper()
	var objs []string
	objs = append(objs, "<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /F 5 0 R >> >> /Contents 4 0 R >>")
	stream := func(dict, data string) string {
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		zw.Write([]byte(data))
		zw.Close()
		return fmt.Sprintf("<< %s /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", dict, z.Len(), z.Bytes())
	}
	objs = append(objs, stream("", "/F Do\n"))
	for l := range levels {
		id := 5 + l
		body, res := "0 0 m 1 1 l S\n", ""
		if text != "" {
			body = "BT (" + text + ") Tj ET\n"
		}
		if l < levels-1 {
			body = strings.Repeat("/F Do\n", perLevel)
			res = fmt.Sprintf("/Resources << /XObject << /F %d 0 R >> >>", id+1)
		}
		objs = append(objs, stream("/Type /XObject /Subtype /Form /BBox [0 0 612 792] "+res, body))
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// markupBombDOCX is a DOCX whose document part inflates to about n bytes
// of empty paragraphs: no text, all markup.
func markupBombDOCX(t testing.TB, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("word/document.xml")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(`<w:document ` + wNS + `><w:body>`))
	chunk := []byte(strings.Repeat("<w:p/>", 1<<18))
	for written := 0; written < n; written += len(chunk) {
		w.Write(chunk)
	}
	w.Write([]byte(`</w:body></w:document>`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// oversizedFrameGIF is a GIF of one white frame of w x h pixels whose
// logical screen says 1 x 1 pixel: a header check of the screen alone
// lets it through to a decoder that allocates and fills the frame.
func oversizedFrameGIF(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.White, color.Black})
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	binary.LittleEndian.PutUint16(data[6:], 1) // logical screen width
	binary.LittleEndian.PutUint16(data[8:], 1) // and height
	return data
}

// hostileInputs are the crafted files whose cost extraction must bound;
// the DOCX inflates to docxMiB MiB of markup.
func hostileInputs(t testing.TB, docxMiB int) []struct {
	name, mime string
	data       []byte
} {
	return []struct {
		name, mime string
		data       []byte
	}{
		{name: "PDF forms drawing each other 1000 times a level", mime: "application/pdf", data: formBombPDF(t, 4, 1000, "")},
		{name: fmt.Sprintf("DOCX of %d MiB of empty paragraphs", docxMiB), mime: docxMIME, data: markupBombDOCX(t, docxMiB<<20)},
		{name: "GIF frame of 81 MP on a 1-pixel screen", mime: "image/gif", data: oversizedFrameGIF(t, 9000, 9000)},
	}
}

const docxMIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

// TestHostileInputsAreRefusedByBudget: a PDF whose forms draw each other
// a thousand times a level, a DOCX whose few hundred KB inflate to 400 MiB
// of markup, and a GIF whose frame is far larger than its logical screen
// each end with their limit (ErrLimit, or ErrOCRLimit for OCR) well
// within the extraction timeout, and the GIF never reaches OCR.
func TestHostileInputsAreRefusedByBudget(t *testing.T) {
	// 100 MiB: 17 million tokens, past the default budget of 10 million.
	for _, in := range hostileInputs(t, 100) {
		t.Run(in.name, func(t *testing.T) {
			ocr := &recordingOCR{}
			res, err := extractBytes(t, in.data, in.mime, "", Options{Timeout: 30 * time.Second, OCR: ocr})
			switch {
			case strings.HasPrefix(in.name, "GIF"):
				if err != nil || !errors.Is(res.OCRErr, ErrOCRLimit) || len(ocr.asked) != 0 {
					t.Fatalf("err %v, OCR error %v, pages given to OCR %v: want the frame refused by the pixel limit, unread", err, res.OCRErr, ocr.asked)
				}
			case !errors.Is(err, ErrLimit):
				t.Fatalf("%d bytes: err %v (text %.40q), want ErrLimit", len(in.data), err, res.Text)
			}
		})
	}
}

// TestBudgetKeepsTheTextReadBeforeIt: a file that runs out of its budget
// after some text keeps that text, marked as stopped and truncated.
func TestBudgetKeepsTheTextReadBeforeIt(t *testing.T) {
	xml := "<doc><p>before the flood</p>" + strings.Repeat("<e/>", 1000) + "<p>after</p></doc>"
	res, err := extractBytes(t, []byte(xml), "application/xml", "", Options{MaxMarkupTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.Stopped, ErrLimit) || !res.Truncated || !strings.Contains(res.Text, "before the flood") || strings.Contains(res.Text, "after") {
		t.Errorf("stopped %v, truncated %v, text %q: want the text before the budget ran out, stopped by ErrLimit", res.Stopped, res.Truncated, res.Text)
	}
}

// TestBudgetLeavesRealFormsAlone: forms drawn a few hundred times in all
// (a letterhead on every page, nested a few deep) are read in full.
func TestBudgetLeavesRealFormsAlone(t *testing.T) {
	res, err := extractBytes(t, formBombPDF(t, 3, 20, "marker"), "application/pdf", "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(res.Text, "marker"); got != 400 {
		t.Errorf("the innermost form's text appears %d times, want 400", got)
	}
}

// BenchmarkHostileInputs records the cost of each crafted input: CPU
// seconds and peak resident memory of a process that extracts it with the
// indexer's options (one-minute timeout; images go to the tesseract
// program when it is installed, as the indexer's OCR would send them):
//
//	cd pkg && go test -run '^$' -bench BenchmarkHostileInputs -benchtime 1x ./extract/
func BenchmarkHostileInputs(b *testing.B) {
	dir := b.TempDir()
	for _, in := range hostileInputs(b, 400) {
		path := filepath.Join(dir, strings.ReplaceAll(in.name, " ", "_"))
		if err := os.WriteFile(path, in.data, 0o600); err != nil {
			b.Fatal(err)
		}
		b.Run(in.name, func(b *testing.B) {
			for range b.N {
				cmd := exec.Command(os.Args[0], "-test.run=^TestExtractChildProcessReportsOutcomeAndPeakMemory$", "-test.v")
				cmd.Env = append(os.Environ(), "DOCREPO_EXTRACT_CHILD="+path, "DOCREPO_EXTRACT_CHILD_MIME="+in.mime)
				start := time.Now()
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				// CPU time covers the child and the programs it ran. Peak
				// memory is the child's own (its rusage would start from
				// this process's, copied at fork) or its programs'.
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
				var selfKiB, childrenKiB int64
				if _, err := fmt.Sscanf(childField(out, "peak:"), "self %d KiB, programs %d KiB", &selfKiB, &childrenKiB); err != nil {
					b.Fatalf("no peak in %s", out)
				}
				b.ReportMetric(cpu.Seconds(), "cpu-s")
				b.ReportMetric(float64(max(selfKiB, childrenKiB))/1024, "peak-rss-MiB")
				b.ReportMetric(time.Since(start).Seconds(), "wall-s")
				b.Logf("%d bytes: %s", len(in.data), childField(out, "outcome:"))
			}
		})
	}
}

// childField is what TestExtractChildProcessReportsOutcomeAndPeakMemory printed after label.
func childField(out []byte, label string) string {
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, label); i >= 0 {
			return strings.TrimSpace(line[i+len(label):])
		}
	}
	return ""
}

// TestExtractChildProcessReportsOutcomeAndPeakMemory is BenchmarkHostileInputs' child process: it extracts
// the file DOCREPO_EXTRACT_CHILD names. Without it, it does nothing.
func TestExtractChildProcessReportsOutcomeAndPeakMemory(t *testing.T) {
	path := os.Getenv("DOCREPO_EXTRACT_CHILD")
	if path == "" {
		t.Skip("the child process of BenchmarkHostileInputs")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Timeout: time.Minute}
	if _, err := exec.LookPath("tesseract"); err == nil {
		opts.OCR = tesseractOCR{path: path}
	}
	res, err := Extract(context.Background(), bytes.NewReader(data), int64(len(data)), os.Getenv("DOCREPO_EXTRACT_CHILD_MIME"), "", opts)
	t.Logf("outcome: err %v, OCR err %v, %d bytes of text", err, res.OCRErr, len(res.Text))
	var children syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children); err != nil {
		t.Fatal(err)
	}
	t.Logf("peak: self %d KiB, programs %d KiB", peakRSS(t), children.Maxrss)
}

// peakRSS is this process's peak resident memory (VmHWM) in KiB.
func peakRSS(t *testing.T) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kib int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kib)
			return kib
		}
	}
	return 0
}

// tesseractOCR reads an image file's pages with the tesseract program, as
// the indexer's OCR engine does (without its pool and limits).
type tesseractOCR struct{ path string }

func (o tesseractOCR) Recognize(ctx context.Context, _ Format, pages []OCRPage) ([]OCRText, error) {
	out := make([]OCRText, len(pages))
	for i := range pages {
		text, err := exec.CommandContext(ctx, "tesseract", o.path, "stdout").Output()
		out[i] = OCRText{Text: string(text), Err: err}
	}
	return out, nil
}
