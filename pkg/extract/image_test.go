package extract

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"testing"

	"github.com/docrepo/docrepo/pkg/ocr/scantest"
)

// tiffOf returns a TIFF of n small gray pages.
func tiffOf(t *testing.T, n int) []byte {
	t.Helper()
	var pages []*image.Gray
	for i := 0; i < n; i++ {
		pages = append(pages, image.NewGray(image.Rect(0, 0, 40+i, 30)))
	}
	var b bytes.Buffer
	if err := scantest.TIFF(&b, pages, 200); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// lastIFDNext is the offset of the last directory's next-directory field.
func lastIFDNext(data []byte) int {
	off := int(binary.LittleEndian.Uint32(data[4:]))
	for {
		n := int(binary.LittleEndian.Uint16(data[off:]))
		next := off + 2 + 12*n
		if binary.LittleEndian.Uint32(data[next:]) == 0 {
			return next
		}
		off = int(binary.LittleEndian.Uint32(data[next:]))
	}
}

func TestTIFFDimsReadsEveryPageAndRejectsBrokenDirectories(t *testing.T) {
	three := tiffOf(t, 3)
	cycle := bytes.Clone(three)
	binary.LittleEndian.PutUint32(cycle[lastIFDNext(cycle):], binary.LittleEndian.Uint32(cycle[4:]))
	outside := bytes.Clone(three)
	binary.LittleEndian.PutUint32(outside[lastIFDNext(outside):], 1<<30)
	tests := []struct {
		name     string
		data     []byte
		wantDims []imageDim
		wantErr  error
	}{
		{name: "three pages", data: three, wantDims: []imageDim{{w: 40, h: 30, dir: 0}, {w: 41, h: 30, dir: 1}, {w: 42, h: 30, dir: 2}}},
		{name: "directories in a cycle", data: cycle, wantErr: ErrMalformed},
		{name: "directory outside the file", data: outside, wantErr: ErrMalformed},
		{name: "header only", data: three[:8], wantErr: ErrMalformed},
	}
	for _, tc := range tests {
		dims, err := tiffDims(bytes.NewReader(tc.data), int64(len(tc.data)))
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.wantErr)
			continue
		}
		if len(dims) != len(tc.wantDims) {
			t.Errorf("%s: dims = %v, want %v", tc.name, dims, tc.wantDims)
			continue
		}
		for i := range dims {
			if dims[i] != tc.wantDims[i] {
				t.Errorf("%s: dims = %v, want %v", tc.name, dims, tc.wantDims)
				break
			}
		}
	}
}

// TestImageBombRefusedUnread: a TIFF page whose header claims 100,000 x
// 100,000 pixels is refused from its header; OCR is never asked.
func TestImageBombRefusedUnread(t *testing.T) {
	data := tiffOf(t, 2)
	// Raise the first page's ImageWidth and ImageLength (LONG values).
	off := int(binary.LittleEndian.Uint32(data[4:]))
	n := int(binary.LittleEndian.Uint16(data[off:]))
	for i := 0; i < n; i++ {
		e := data[off+2+12*i:]
		if tag := binary.LittleEndian.Uint16(e); tag == 256 || tag == 257 {
			binary.LittleEndian.PutUint32(e[8:], 100000)
		}
	}
	rec := &recordingOCR{}
	res, err := Extract(context.Background(), bytes.NewReader(data), int64(len(data)), "image/tiff", "scan.tif", Options{OCR: rec})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.OCRErr, ErrOCRLimit) || res.OCRFailed != 1 {
		t.Errorf("OCRErr %v, failed %d; want the pixel limit for one page", res.OCRErr, res.OCRFailed)
	}
	if len(rec.asked) != 1 || rec.asked[0].Number != 2 {
		t.Errorf("OCR asked for %+v, want only page 2", rec.asked)
	}
}
