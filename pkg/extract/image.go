package extract

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	_ "image/gif"  // GIF headers
	_ "image/jpeg" // JPEG headers
	_ "image/png"  // PNG headers
	"io"

	_ "golang.org/x/image/bmp"  // BMP headers
	_ "golang.org/x/image/webp" // WebP headers
)

// Image formats: read by OCR only (Tesseract's image library decodes them;
// this package reads no more than their headers).
const (
	FormatPNG  Format = "png"
	FormatJPEG Format = "jpeg"
	FormatTIFF Format = "tiff"
	FormatWebP Format = "webp"
	FormatGIF  Format = "gif"
	FormatBMP  Format = "bmp"
)

// IsImage reports whether f is an image format.
func (f Format) IsImage() bool {
	switch f {
	case FormatPNG, FormatJPEG, FormatTIFF, FormatWebP, FormatGIF, FormatBMP:
		return true
	}
	return false
}

// imageFormat recognises an image by its signature (never by its declared
// type: only content that really is an image goes to OCR).
func imageFormat(head []byte) Format {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return FormatPNG
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return FormatJPEG
	case bytes.HasPrefix(head, []byte("II*\x00")) || bytes.HasPrefix(head, []byte("MM\x00*")):
		return FormatTIFF
	case len(head) >= 12 && bytes.HasPrefix(head, []byte("RIFF")) && string(head[8:12]) == "WEBP":
		return FormatWebP
	case bytes.HasPrefix(head, []byte("GIF87a")) || bytes.HasPrefix(head, []byte("GIF89a")):
		return FormatGIF
	case bytes.HasPrefix(head, []byte("BM")) && len(head) >= 26:
		return FormatBMP
	}
	return ""
}

// imageDim is the size of one page of an image file, in pixels, and the
// index of its TIFF directory (0 for other formats). pixels, when larger
// than w x h, is what decoding the page costs (a GIF's frames are all
// decoded).
type imageDim struct {
	w, h, dir int
	pixels    int64
}

// area is the pixels decoding the page allocates.
func (d imageDim) area() int64 { return max(int64(d.w)*int64(d.h), d.pixels) }

// maxTIFFPages bounds the directories (pages) walked in a TIFF file.
const maxTIFFPages = 10000

// imageDims reads the pixel size of every page of an image from its headers
// alone: nothing is decoded, so a decompression bomb is seen for what it is
// before any pixel is allocated. GIF animations count as one page (the
// first frame is what OCR reads), of every frame's pixels.
func imageDims(r io.ReaderAt, size int64, f Format) ([]imageDim, error) {
	switch f {
	case FormatTIFF:
		return tiffDims(r, size)
	case FormatGIF:
		return gifDims(r, size)
	}
	cfg, _, err := image.DecodeConfig(io.NewSectionReader(r, 0, size))
	if err != nil {
		return nil, fmt.Errorf("%w: %s header: %v", ErrMalformed, f, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, fmt.Errorf("%w: %s of %d x %d pixels", ErrMalformed, f, cfg.Width, cfg.Height)
	}
	return []imageDim{{w: cfg.Width, h: cfg.Height}}, nil
}

// tiffDims walks the image file directories of a TIFF (one per page) and
// reads each one's ImageWidth and ImageLength tags. Directories of reduced
// resolution (thumbnails, NewSubfileType bit 0) are not pages.
func tiffDims(r io.ReaderAt, size int64) ([]imageDim, error) {
	var hdr [8]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, fmt.Errorf("%w: TIFF header: %v", ErrMalformed, err)
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if hdr[0] == 'M' {
		bo = binary.BigEndian
	}
	off := int64(bo.Uint32(hdr[4:]))
	seen := map[int64]bool{}
	var dims []imageDim
	for off != 0 {
		if seen[off] {
			return nil, fmt.Errorf("%w: TIFF directories form a cycle", ErrMalformed)
		}
		if len(seen) >= maxTIFFPages {
			return nil, fmt.Errorf("%w: TIFF with more than %d directories", ErrLimit, maxTIFFPages)
		}
		seen[off] = true
		var nb [2]byte
		if off < 8 || off+2 > size {
			return nil, fmt.Errorf("%w: TIFF directory offset %d out of the file", ErrMalformed, off)
		}
		if _, err := r.ReadAt(nb[:], off); err != nil {
			return nil, fmt.Errorf("%w: TIFF directory: %v", ErrMalformed, err)
		}
		n := int64(bo.Uint16(nb[:]))
		if off+2+12*n+4 > size {
			return nil, fmt.Errorf("%w: TIFF directory runs past the end of the file", ErrMalformed)
		}
		ifd := make([]byte, 12*n+4)
		if _, err := r.ReadAt(ifd, off+2); err != nil {
			return nil, fmt.Errorf("%w: TIFF directory: %v", ErrMalformed, err)
		}
		var w, h, subfile uint32
		for i := int64(0); i < n; i++ {
			e := ifd[12*i : 12*i+12]
			tag, typ := bo.Uint16(e), bo.Uint16(e[2:])
			var v uint32
			switch typ {
			case 3: // SHORT
				v = uint32(bo.Uint16(e[8:]))
			case 4: // LONG
				v = bo.Uint32(e[8:])
			default:
				continue
			}
			switch tag {
			case 254:
				subfile = v
			case 256:
				w = v
			case 257:
				h = v
			}
		}
		if subfile&1 == 0 {
			if w == 0 || h == 0 {
				return nil, fmt.Errorf("%w: TIFF page %d without a size", ErrMalformed, len(dims)+1)
			}
			dims = append(dims, imageDim{w: int(min(w, 1<<30)), h: int(min(h, 1<<30)), dir: len(seen) - 1})
		}
		off = int64(bo.Uint32(ifd[12*n:]))
	}
	if len(dims) == 0 {
		return nil, fmt.Errorf("%w: TIFF without pages", ErrMalformed)
	}
	return dims, nil
}

// maxGIFFrames bounds the frames walked in a GIF file.
const maxGIFFrames = 10000

// gifDims walks a GIF's blocks and reads the logical screen and every
// frame's image descriptor: the screen says nothing of the frames (a frame
// of 20,000 x 20,000 pixels fits on a screen of one), and the decoder
// behind Tesseract allocates and decodes every frame. The page is the
// screen grown to hold every frame; its pixels are every frame's.
func gifDims(r io.ReaderAt, size int64) ([]imageDim, error) {
	br := bufio.NewReader(io.NewSectionReader(r, 0, size))
	var hdr [13]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: GIF header: %v", ErrMalformed, err)
	}
	le := binary.LittleEndian
	w, h := int(le.Uint16(hdr[6:])), int(le.Uint16(hdr[8:]))
	if hdr[10]&0x80 != 0 {
		if _, err := br.Discard(3 << (hdr[10]&7 + 1)); err != nil {
			return nil, fmt.Errorf("%w: GIF color table: %v", ErrMalformed, err)
		}
	}
	var pixels int64
	frames := 0
	for done := false; !done; {
		block, err := br.ReadByte()
		if err != nil {
			break // a truncated file: judge the frames described so far
		}
		switch block {
		case 0x21: // extension: label, then data sub-blocks
			if _, err := br.ReadByte(); err != nil {
				done = true
			} else if skipGIFSubBlocks(br) != nil {
				done = true
			}
		case 0x2c: // image descriptor
			var d [9]byte
			if _, err := io.ReadFull(br, d[:]); err != nil {
				return nil, fmt.Errorf("%w: GIF image descriptor: %v", ErrMalformed, err)
			}
			if frames++; frames > maxGIFFrames {
				return nil, fmt.Errorf("%w: GIF with more than %d frames", ErrLimit, maxGIFFrames)
			}
			left, top, fw, fh := int(le.Uint16(d[0:])), int(le.Uint16(d[2:])), int(le.Uint16(d[4:])), int(le.Uint16(d[6:]))
			w, h = max(w, left+fw), max(h, top+fh)
			pixels += int64(fw) * int64(fh)
			if d[8]&0x80 != 0 {
				if _, err := br.Discard(3 << (d[8]&7 + 1)); err != nil {
					done = true
					break
				}
			}
			// The LZW minimum code size, then the image data.
			if _, err := br.ReadByte(); err != nil || skipGIFSubBlocks(br) != nil {
				done = true
			}
		default: // 0x3b, the trailer, or damage after the last frame
			done = true
		}
	}
	if w <= 0 || h <= 0 || frames == 0 {
		return nil, fmt.Errorf("%w: GIF of %d x %d pixels and %d frames", ErrMalformed, w, h, frames)
	}
	return []imageDim{{w: w, h: h, pixels: pixels}}, nil
}

// skipGIFSubBlocks moves past a sequence of data sub-blocks (each a size
// byte and that many bytes; a size of 0 ends it).
func skipGIFSubBlocks(br *bufio.Reader) error {
	for {
		n, err := br.ReadByte()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if _, err := br.Discard(int(n)); err != nil {
			return err
		}
	}
}
