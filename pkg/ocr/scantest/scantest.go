// Package scantest makes real scans for tests and benchmarks: it rasterises
// the pages of real PDFs with poppler's pdftoppm and wraps the images into
// image-only PDFs, PNG and multi-page TIFF files, the way a scanner would.
// No text is ever written by hand: whatever OCR finds in these files was
// rendered from a real document.
package scantest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// Rasterise renders one page (1-based) of the PDF at path at dpi into a
// gray image, with pdftoppm.
func Rasterise(ctx context.Context, path string, page, dpi int) (*image.Gray, error) {
	dir, err := os.MkdirTemp("", "scantest-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	prefix := filepath.Join(dir, "p")
	cmd := exec.CommandContext(ctx, "pdftoppm", "-r", strconv.Itoa(dpi), "-gray",
		"-f", strconv.Itoa(page), "-l", strconv.Itoa(page), "-singlefile", path, prefix)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pdftoppm %s page %d: %v: %s", path, page, err, out)
	}
	f, err := os.Open(prefix + ".pgm")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadPGM(f)
}

// ReadPGM decodes a binary 8-bit PGM (P5) image.
func ReadPGM(r io.Reader) (*image.Gray, error) {
	br := bufio.NewReader(r)
	var magic string
	var w, h, maxv int
	if _, err := fmt.Fscan(br, &magic, &w, &h, &maxv); err != nil {
		return nil, fmt.Errorf("PGM header: %w", err)
	}
	if magic != "P5" || maxv != 255 || w <= 0 || h <= 0 || w*h > 1<<28 {
		return nil, fmt.Errorf("unsupported PGM %s %dx%d max %d", magic, w, h, maxv)
	}
	if _, err := br.ReadByte(); err != nil {
		return nil, err
	}
	img := image.NewGray(image.Rect(0, 0, w, h))
	if _, err := io.ReadFull(br, img.Pix); err != nil {
		return nil, fmt.Errorf("PGM pixels: %w", err)
	}
	return img, nil
}

// Page is one scanned page: its image and the resolution it was scanned at.
type Page struct {
	Image *image.Gray
	DPI   int
	// DeclaredWidth and DeclaredHeight, when set, replace the image's size
	// in its PDF dictionary (a hostile file's lie, for limit tests).
	DeclaredWidth, DeclaredHeight int
}

// ImagePDF writes an image-only PDF, one page per image, each page as large
// as its image at its resolution, the image JPEG-compressed (DCTDecode) at
// the given quality, as scanners write them. There is no text layer.
func ImagePDF(w io.Writer, pages []Page, quality int) error {
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string, stream []byte) {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s", len(offsets), body)
		if stream != nil {
			buf.WriteString("\nstream\n")
			buf.Write(stream)
			buf.WriteString("\nendstream")
		}
		buf.WriteString("\nendobj\n")
	}
	buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	// Objects: 1 catalog, 2 pages, then per page: page, content, image.
	kids := ""
	for i := range pages {
		kids += fmt.Sprintf("%d 0 R ", 3+3*i)
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>", nil)
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids, len(pages)), nil)
	for i, p := range pages {
		b := p.Image.Bounds()
		wPt := float64(b.Dx()) * 72 / float64(p.DPI)
		hPt := float64(b.Dy()) * 72 / float64(p.DPI)
		var jp bytes.Buffer
		if err := jpeg.Encode(&jp, p.Image, &jpeg.Options{Quality: quality}); err != nil {
			return err
		}
		content := fmt.Sprintf("q %.2f 0 0 %.2f 0 0 cm /Im0 Do Q", wPt, hPt)
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.2f %.2f] /Resources << /XObject << /Im0 %d 0 R >> >> /Contents %d 0 R >>",
			wPt, hPt, 5+3*i, 4+3*i), nil)
		obj(fmt.Sprintf("<< /Length %d >>", len(content)), []byte(content))
		iw, ih := b.Dx(), b.Dy()
		if p.DeclaredWidth > 0 {
			iw, ih = p.DeclaredWidth, p.DeclaredHeight
		}
		obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode /Length %d >>",
			iw, ih, jp.Len()), jp.Bytes())
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	_, err := w.Write(buf.Bytes())
	return err
}

// TIFF writes the images as one uncompressed 8-bit gray TIFF with a page
// (image file directory) per image, with the given resolution.
func TIFF(w io.Writer, pages []*image.Gray, dpi int) error {
	var buf bytes.Buffer
	le := binary.LittleEndian
	buf.WriteString("II*\x00")
	binary.Write(&buf, le, uint32(0)) // patched: first IFD offset
	prevNext := 4
	for _, img := range pages {
		b := img.Bounds()
		// Pixels first, then the resolution rational, then the IFD.
		pixOff := buf.Len()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			i := img.PixOffset(b.Min.X, y)
			buf.Write(img.Pix[i : i+b.Dx()])
		}
		resOff := buf.Len()
		binary.Write(&buf, le, uint32(dpi))
		binary.Write(&buf, le, uint32(1))
		if buf.Len()%2 == 1 {
			buf.WriteByte(0)
		}
		ifdOff := buf.Len()
		le.PutUint32(buf.Bytes()[prevNext:], uint32(ifdOff))
		type entry struct {
			tag, typ uint16
			count    uint32
			value    uint32
		}
		entries := []entry{
			{256, 4, 1, uint32(b.Dx())},          // ImageWidth
			{257, 4, 1, uint32(b.Dy())},          // ImageLength
			{258, 3, 1, 8},                       // BitsPerSample
			{259, 3, 1, 1},                       // Compression: none
			{262, 3, 1, 1},                       // Photometric: black is zero
			{273, 4, 1, uint32(pixOff)},          // StripOffsets
			{277, 3, 1, 1},                       // SamplesPerPixel
			{278, 4, 1, uint32(b.Dy())},          // RowsPerStrip
			{279, 4, 1, uint32(b.Dx() * b.Dy())}, // StripByteCounts
			{282, 5, 1, uint32(resOff)},          // XResolution
			{283, 5, 1, uint32(resOff)},          // YResolution
			{296, 3, 1, 2},                       // ResolutionUnit: inch
		}
		binary.Write(&buf, le, uint16(len(entries)))
		for _, e := range entries {
			binary.Write(&buf, le, e.tag)
			binary.Write(&buf, le, e.typ)
			binary.Write(&buf, le, e.count)
			if e.typ == 3 {
				binary.Write(&buf, le, uint16(e.value))
				binary.Write(&buf, le, uint16(0))
			} else {
				binary.Write(&buf, le, e.value)
			}
		}
		prevNext = buf.Len()
		binary.Write(&buf, le, uint32(0)) // next IFD, patched by the next page
	}
	_, err := w.Write(buf.Bytes())
	return err
}
