package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func extractBytes(t *testing.T, data []byte, mimeType, filename string, opts Options) (Result, error) {
	t.Helper()
	return Extract(context.Background(), bytes.NewReader(data), int64(len(data)), mimeType, filename, opts)
}

// minimalPDF builds a one-page PDF with a correct xref table whose page
// draws content with Helvetica.
func minimalPDF(content string) []byte {
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
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

type zipPart struct{ name, body string }

func makeDOCX(t *testing.T, parts ...zipPart) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, p := range parts {
		w, err := zw.Create(p.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(p.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const wNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"`

func TestExtractReturnsTheVisibleTextOfGeneratedFiles(t *testing.T) {
	docx := makeDOCX(t,
		zipPart{"word/document.xml", `<w:document ` + wNS + `><w:body>
			<w:p><w:r><w:t>First</w:t></w:r><w:r><w:t xml:space="preserve"> paragraph &amp; more</w:t></w:r></w:p>
			<w:p><w:r><w:t>Second</w:t></w:r><w:r><w:tab/><w:t>tabbed</w:t></w:r></w:p>
			<w:tbl><w:tr><w:tc><w:p><w:r><w:t>cell A</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>cell B</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
			<w:p><w:del><w:r><w:delText>deleted words</w:delText></w:r></w:del><w:r><w:instrText>PAGE \* MERGEFORMAT</w:instrText></w:r><w:r><w:t>kept</w:t></w:r></w:p>
			<w:p><mc:AlternateContent><mc:Choice><w:r><w:t>choice text</w:t></w:r></mc:Choice><mc:Fallback><w:r><w:t>fallback text</w:t></w:r></mc:Fallback></mc:AlternateContent></w:p>
			</w:body></w:document>`},
		zipPart{"word/header1.xml", `<w:hdr ` + wNS + `><w:p><w:r><w:t>Header words</w:t></w:r></w:p></w:hdr>`},
		zipPart{"word/footer1.xml", `<w:ftr ` + wNS + `><w:p><w:r><w:t>Footer words</w:t></w:r></w:p></w:ftr>`},
	)
	tests := []struct {
		name       string
		data       []byte
		mimeType   string
		filename   string
		wantFormat Format
		wantText   string // exact, when set
		contains   []string
		absent     []string
		wantPages  int
	}{
		{
			name:       "HTML visible text only",
			data:       []byte(`<!DOCTYPE html><html><head><title>Page &amp; Title</title><style>body{color:red}</style><script>var hidden = "script text";</script></head><body><h1>Caf&eacute; &lt;menu&gt;</h1><p>Fish&nbsp;&amp;&#32;chips &#8364;5</p><div hidden>secret</div><p style="display: none">invisible</p><noscript>enable js</noscript><template>tpl</template><ul><li>one</li><li>two</li></ul></body></html>`),
			mimeType:   "text/html; charset=utf-8",
			wantFormat: FormatHTML,
			wantText:   "Page & Title\nCafé <menu>\nFish & chips €5\none\ntwo",
		},
		{
			name:       "HTML in a legacy charset",
			data:       []byte("<html><head><meta charset=\"iso-8859-1\"></head><body><p>na\xefve caf\xe9</p></body></html>"),
			filename:   "page.htm",
			wantFormat: FormatHTML,
			wantText:   "naïve café",
		},
		{
			name:       "invalid UTF-8 in plain text",
			data:       []byte("valid caf\xc3\xa9, then caf\xe9 \xff\xfe broken \x93quoted\x94 bell\x07less"),
			mimeType:   "text/plain",
			wantFormat: FormatText,
			wantText:   "valid café, then café ÿþ broken “quoted” bellless",
		},
		{
			name:       "UTF-16 with BOM",
			data:       []byte("\xff\xfeH\x00i\x00 \x00\xe9\x00"),
			filename:   "notes.txt",
			wantFormat: FormatText,
			wantText:   "Hi é",
		},
		{
			name:       "markdown by extension",
			data:       []byte("# Title\n\nSome *emphasis* here.\n"),
			mimeType:   "application/octet-stream",
			filename:   "README.md",
			wantFormat: FormatMarkdown,
			wantText:   "# Title\n\nSome *emphasis* here.",
		},
		{
			name:       "CSV",
			data:       []byte("name,city\nAda,London\n"),
			mimeType:   "text/csv",
			wantFormat: FormatCSV,
			contains:   []string{"Ada,London"},
		},
		{
			name:       "JSON strings and numbers",
			data:       []byte(`{"title": "Caf\u00e9 report", "year": 2024, "ok": true, "tags": ["alpha", "beta"]}`),
			mimeType:   "application/json",
			wantFormat: FormatJSON,
			wantText:   "title\nCafé report\nyear\n2024\nok\ntags\nalpha\nbeta",
		},
		{
			name:       "malformed JSON falls back to text",
			data:       []byte(`{"broken": `),
			filename:   "x.json",
			wantFormat: FormatJSON,
			contains:   []string{"broken"},
		},
		{
			name:       "XML character data",
			data:       []byte(`<?xml version="1.0" encoding="ISO-8859-1"?><note><to>Tove</to><body>Don&apos;t forget</body><!-- comment --></note>`),
			mimeType:   "application/xml",
			wantFormat: FormatXML,
			wantText:   "Tove\nDon't forget",
		},
		{
			name:       "truncated image without OCR",
			data:       []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R'},
			mimeType:   "image/png",
			wantFormat: FormatPNG,
			wantText:   "",
		},
		{
			name:       "unknown binary",
			data:       []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			mimeType:   "application/octet-stream",
			wantFormat: FormatBinary,
			wantText:   "",
		},
		{
			name:       "zip that is not DOCX",
			data:       makeDOCX(t, zipPart{"readme.txt", "hello"}),
			filename:   "archive.zip",
			wantFormat: FormatBinary,
			wantText:   "",
		},
		{
			name:       "DOCX body, table, header and footer",
			data:       docx,
			filename:   "report.docx",
			wantFormat: FormatDOCX,
			wantText:   "First paragraph & more\nSecond tabbed\ncell A\ncell B\nkept\nchoice text\n\nHeader words\n\nFooter words",
			absent:     []string{"deleted", "MERGEFORMAT", "fallback"},
		},
		{
			name:       "DOCX detected from content despite the declared type",
			data:       docx,
			mimeType:   "application/octet-stream",
			filename:   "blob",
			wantFormat: FormatDOCX,
			contains:   []string{"First paragraph"},
		},
		{
			name:       "PDF with kerning and word gaps",
			data:       minimalPDF("BT /F1 12 Tf 72 720 Td [(Hel) -20 (lo) -600 (World)] TJ 0 -14 Td (second line) Tj ET"),
			mimeType:   "application/octet-stream",
			wantFormat: FormatPDF,
			wantText:   "Hello World\nsecond line",
			wantPages:  1,
		},
		{
			name:       "PDF declared as text is still a PDF",
			data:       minimalPDF("BT /F1 12 Tf 72 720 Td (abc) Tj ET"),
			mimeType:   "text/plain",
			wantFormat: FormatPDF,
			wantText:   "abc",
			wantPages:  1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := extractBytes(t, tc.data, tc.mimeType, tc.filename, Options{})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if res.Format != tc.wantFormat {
				t.Errorf("Format = %q, want %q", res.Format, tc.wantFormat)
			}
			if res.Pages != tc.wantPages {
				t.Errorf("Pages = %d, want %d", res.Pages, tc.wantPages)
			}
			if tc.wantText != "" || len(tc.contains) == 0 {
				if res.Text != tc.wantText {
					t.Errorf("Text = %q\nwant   %q", res.Text, tc.wantText)
				}
			}
			for _, s := range tc.contains {
				if !strings.Contains(res.Text, s) {
					t.Errorf("Text = %q, want it to contain %q", res.Text, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(res.Text, s) {
					t.Errorf("Text = %q, must not contain %q", res.Text, s)
				}
			}
		})
	}
}

func TestExtractStopsHostileInputsAtLimitsOrAsMalformed(t *testing.T) {
	// A DOCX whose document.xml inflates to 64 MiB from a few KiB.
	var bomb bytes.Buffer
	bomb.WriteString(`<w:document ` + wNS + `><w:body><w:p><w:r><w:t>`)
	bomb.Write(bytes.Repeat([]byte(" "), 64<<20))
	bomb.WriteString(`</w:t></w:r></w:p></w:body></w:document>`)
	bombDOCX := makeDOCX(t, zipPart{"word/document.xml", bomb.String()})
	if len(bombDOCX) > 1<<20 {
		t.Fatalf("bomb is %d bytes compressed; the test wants a small one", len(bombDOCX))
	}
	pdf := minimalPDF("BT /F1 12 Tf 72 720 Td (Hello World) Tj ET")

	tests := []struct {
		name    string
		data    []byte
		mime    string
		opts    Options
		wantErr error // nil: must succeed
	}{
		{name: "zip bomb DOCX", data: bombDOCX, mime: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", opts: Options{MaxDecompressedBytes: 8 << 20}, wantErr: ErrLimit},
		{name: "DOCX that is not a zip", data: []byte("PK\x03\x04garbage"), mime: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", wantErr: nil},
		{name: "PDF larger than allowed", data: pdf, mime: "application/pdf", opts: Options{MaxPDFBytes: 100}, wantErr: ErrLimit},
		{name: "PDF header and nothing else", data: []byte("%PDF-1.7\n"), mime: "application/pdf", wantErr: ErrMalformed},
		{name: "PDF with garbage body", data: append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("obj << [ ( \\"), 1000)...), mime: "application/pdf", wantErr: ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := extractBytes(t, tc.data, tc.mime, "", tc.opts)
			if tc.wantErr == nil {
				if err != nil {
					t.Errorf("Extract: %v, want success", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Extract = %q, %v; want error %v", res.Text, err, tc.wantErr)
			}
		})
	}
}

// TestExtractTruncatedPDF cuts a valid PDF at every length: each must give
// text or a clean error, never a panic or a hang.
func TestExtractTruncatedPDF(t *testing.T) {
	pdf := minimalPDF("BT /F1 12 Tf 72 720 Td (Hello World) Tj ET")
	for n := 0; n < len(pdf); n++ {
		res, err := extractBytes(t, pdf[:n], "application/pdf", "doc.pdf", Options{})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("cut at %d: error %v does not wrap ErrMalformed", n, err)
		}
		if n >= len("%PDF-") && err == nil && res.Text != "" && res.Text != "Hello World" {
			t.Errorf("cut at %d: text %q", n, res.Text)
		}
		if _, err := PageCount(bytes.NewReader(pdf[:n]), int64(n)); err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNotPDF) {
			t.Errorf("PageCount cut at %d: error %v", n, err)
		}
	}
}

func TestExtractTextCap(t *testing.T) {
	data := []byte(strings.Repeat("word ", 1000))
	res, err := extractBytes(t, data, "text/plain", "", Options{MaxTextBytes: 101})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Text) > 101 || !strings.HasPrefix(res.Text, "word word") {
		t.Errorf("Truncated = %v, %d bytes %q; want true and at most 101 bytes", res.Truncated, len(res.Text), res.Text)
	}
	res, err = extractBytes(t, data, "text/plain", "", Options{})
	if err != nil || res.Truncated || len(res.Text) != len(data)-1 {
		t.Errorf("without a cap: Truncated %v, %d bytes, err %v", res.Truncated, len(res.Text), err)
	}
}

func TestExtractWithCancelledContextFails(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	data := minimalPDF("BT /F1 12 Tf (x) Tj ET")
	if _, err := Extract(ctx, bytes.NewReader(data), int64(len(data)), "application/pdf", "", Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Extract with cancelled ctx: err = %v, want context.Canceled", err)
	}
}

func TestPageCountGenerated(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		want    int
		wantErr error
	}{
		{name: "one page", data: minimalPDF("BT ET"), want: 1},
		{name: "not a PDF", data: []byte("hello"), wantErr: ErrNotPDF},
		{name: "empty", data: nil, wantErr: ErrNotPDF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := PageCount(bytes.NewReader(tc.data), int64(len(tc.data)))
			if !errors.Is(err, tc.wantErr) || n != tc.want {
				t.Errorf("PageCount = %d, %v; want %d, %v", n, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestDetectTrustsContentSignaturesOverDeclaredTypes(t *testing.T) {
	tests := []struct {
		name     string
		mimeType string
		filename string
		head     string
		want     Format
	}{
		{name: "pdf signature wins", mimeType: "text/plain", head: "%PDF-1.7\n", want: FormatPDF},
		{name: "declared pdf that is text", mimeType: "application/pdf", head: "just text", want: FormatText},
		{name: "mime with parameters", mimeType: "Text/HTML; charset=UTF-8", head: "<p>x</p>", want: FormatHTML},
		{name: "extension only", filename: `C:\Users\me\notes.MD`, head: "# x", want: FormatMarkdown},
		{name: "path-like name is only a name", filename: "../../etc/passwd.json", head: "{}", want: FormatJSON},
		{name: "sniffed html", head: "  <!DOCTYPE html><html>", want: FormatHTML},
		{name: "sniffed xml", head: "<?xml version=\"1.0\"?><a/>", want: FormatXML},
		{name: "unknown text", mimeType: "application/x-unknown", head: "plain words", want: FormatText},
		{name: "unknown binary", mimeType: "application/octet-stream", head: "\x00\x01\x02binary", want: FormatBinary},
		{name: "image signature wins", mimeType: "text/plain", filename: "a.txt", head: "\xff\xd8\xff\xe0\x00\x10JFIF", want: FormatJPEG},
		{name: "big-endian tiff", head: "MM\x00*\x00\x00\x00\x08", want: FormatTIFF},
		{name: "webp", head: "RIFF\x10\x00\x00\x00WEBPVP8 ", want: FormatWebP},
		{name: "declared image that is text", mimeType: "image/png", head: "not an image", want: FormatText},
		{name: "text type with binary content", mimeType: "text/plain", head: "\x00\x00\x00\x00", want: FormatBinary},
		{name: "empty", want: FormatText},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Detect(tc.mimeType, tc.filename, []byte(tc.head)); got != tc.want {
				t.Errorf("Detect(%q, %q, %q) = %q, want %q", tc.mimeType, tc.filename, tc.head, got, tc.want)
			}
		})
	}
}
