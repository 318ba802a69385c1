package extract

import (
	"archive/zip"
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"
)

// bigRunDOCX is a small DOCX whose document part holds one text run of n
// bytes (it compresses to about n/1000).
func bigRunDOCX(t *testing.T, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("word/document.xml")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(`<w:document ` + wNS + `><w:body><w:p><w:r><w:t>start `))
	chunk := []byte(strings.Repeat("a", 1<<20))
	for written := 0; written < n; written += len(chunk) {
		w.Write(chunk)
	}
	w.Write([]byte(`</w:t></w:r></w:p><w:p><w:r><w:t>after</w:t></w:r></w:p></w:body></w:document>`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A markup document whose single text run is far larger than the text cap
// costs memory in proportion to the cap, not to the run: the run is cut
// where the cap would have cut the text anyway.
func TestMarkupMemoryIsBoundedByTheTextCap(t *testing.T) {
	const run = 256 << 20 // bytes of text in one token
	const textCap = 1 << 20
	tests := []struct {
		name, mime string
		data       []byte
	}{
		{name: "DOCX", mime: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", data: bigRunDOCX(t, run)},
		{name: "XML", mime: "application/xml", data: []byte("<doc><p>start " + strings.Repeat("a", run) + "</p><p>after</p></doc>")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res Result
			var err error
			alloc := allocated(func() {
				res, err = extractBytes(t, tt.data, tt.mime, "", Options{MaxTextBytes: textCap, MaxDecompressedBytes: 1 << 30})
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Truncated || len(res.Text) < textCap/2 || !strings.HasPrefix(res.Text, "start aaa") {
				t.Fatalf("result: truncated %v, %d bytes of text starting %.20q", res.Truncated, len(res.Text), res.Text)
			}
			if limit := uint64(32 << 20); alloc > limit {
				t.Fatalf("extracting a %d MiB run with a %d MiB cap allocated %d MiB, want under %d MiB",
					run>>20, textCap>>20, alloc>>20, limit>>20)
			}
			t.Logf("allocated %d MiB for a %d MiB run", alloc>>20, run>>20)
		})
	}
}

func TestRunLimiterCutsLongRunsAcrossReads(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		// limit counts the bytes after each '<' (tag and text).
		{name: "short runs pass", in: "<a>xy</a><b>z</b>", limit: 4, want: "<a>xy</a><b>z</b>"},
		{name: "a long run is cut at the limit", in: "<a>abcdefgh</a>", limit: 4, want: "<a>ab</a>"},
		{name: "the limit counts from each <", in: "<p>aaaaaa<q>bb</q>", limit: 5, want: "<p>aaa<q>bb</q>"},
		{name: "a long tag is cut too", in: `<t attr="0123456789">x</t>`, limit: 6, want: `<t attr</t>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Read a byte at a time too: a run spans reads.
			for _, chunk := range []int{1, 3, 1 << 10} {
				l := &runLimiter{r: &chunkReader{s: tt.in, n: chunk}, limit: func() int { return tt.limit }}
				var out bytes.Buffer
				if _, err := out.ReadFrom(l); err != nil {
					t.Fatal(err)
				}
				if out.String() != tt.want {
					t.Fatalf("chunks of %d: %q, want %q", chunk, out.String(), tt.want)
				}
			}
		})
	}
}

type chunkReader struct {
	s string
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[n:]
	return n, nil
}
