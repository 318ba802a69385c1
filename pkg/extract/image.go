package extract

import (
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
// index of its TIFF directory (0 for other formats).
type imageDim struct{ w, h, dir int }

// maxTIFFPages bounds the directories (pages) walked in a TIFF file.
const maxTIFFPages = 10000

// imageDims reads the pixel size of every page of an image from its headers
// alone: nothing is decoded, so a decompression bomb is seen for what it is
// before any pixel is allocated. GIF animations count as one page (the
// first frame is what OCR reads).
func imageDims(r io.ReaderAt, size int64, f Format) ([]imageDim, error) {
	if f == FormatTIFF {
		return tiffDims(r, size)
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
