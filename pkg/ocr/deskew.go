package ocr

import (
	"bufio"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"runtime"
)

// Deskew bounds: skews up to maxSkew degrees are searched in steps of
// skewStep; below minSkew a page is left as it is (Tesseract reads a skew
// of 1° as well as none, measured).
const (
	maxSkew  = 6.0
	skewStep = 0.2
	minSkew  = 0.6
	// skewSample is the width pages are reduced to for the estimate.
	skewSample = 1000
	// skewGain: the best angle must sharpen the line profile by this
	// factor over the page as it is, or the page is left alone (a page of
	// pictures or a table has no clear lines).
	skewGain = 1.15
)

// skewAngle estimates by how many degrees the text lines of a page are
// turned (counter-clockwise positive, in image coordinates where y grows
// downwards): the angle whose horizontal projection of the dark pixels has
// the sharpest profile (the largest sum of squared row counts), the way
// text lines line up into peaks and gaps. It returns 0 when no angle
// sharpens the profile clearly.
func skewAngle(img *image.Gray) float64 {
	b := img.Bounds()
	f := max(1, (b.Dx()+skewSample-1)/skewSample)
	// Dark pixels of the page reduced by f in each direction (a block is
	// dark when its darkest pixel is).
	var xs, ys []float64
	for by := b.Min.Y; by < b.Max.Y; by += f {
		for bx := b.Min.X; bx < b.Max.X; bx += f {
			dark := false
			for y := by; y < min(by+f, b.Max.Y) && !dark; y++ {
				row := img.Pix[img.PixOffset(bx, y):]
				for x := 0; x < min(f, b.Max.X-bx); x++ {
					if row[x] < 128 {
						dark = true
						break
					}
				}
			}
			if dark {
				xs = append(xs, float64((bx-b.Min.X)/f))
				ys = append(ys, float64((by-b.Min.Y)/f))
			}
		}
	}
	if len(xs) < 100 {
		return 0
	}
	h := b.Dy()/f + 1
	w := b.Dx()/f + 1
	bins := make([]float64, h+w+2)
	score := func(deg float64) float64 {
		s, c := math.Sincos(deg * math.Pi / 180)
		clear(bins)
		off := float64(w) // keeps rotated rows non-negative
		for i := range xs {
			// The row a pixel falls in once the page is turned back by deg.
			r := int(ys[i]*c - xs[i]*s + off*math.Abs(s))
			if r >= 0 && r < len(bins) {
				bins[r]++
			}
		}
		var sum float64
		for _, v := range bins {
			sum += v * v
		}
		return sum
	}
	base := score(0)
	best, bestScore := 0.0, base
	for deg := -maxSkew; deg <= maxSkew+1e-9; deg += skewStep {
		if sc := score(deg); sc > bestScore {
			best, bestScore = deg, sc
		}
	}
	if math.Abs(best) < minSkew || bestScore < skewGain*base {
		return 0
	}
	return best
}

// rotateGray turns img by deg degrees (the sense skewAngle measures, so
// rotateGray(img, -skewAngle(img)) straightens a page), filling with white,
// keeping the size. Bilinear interpolation keeps strokes smooth for OCR.
func rotateGray(img *image.Gray, deg float64) *image.Gray {
	b := img.Bounds()
	out := image.NewGray(b)
	s, c := math.Sincos(deg * math.Pi / 180)
	cx, cy := float64(b.Dx())/2, float64(b.Dy())/2
	for y := 0; y < b.Dy(); y++ {
		row := out.Pix[y*out.Stride:]
		for x := 0; x < b.Dx(); x++ {
			// The source of (x, y): rotate back by -deg around the centre.
			dx, dy := float64(x)-cx, float64(y)-cy
			sx := dx*c + dy*s + cx
			sy := -dx*s + dy*c + cy
			row[x] = sampleGray(img, sx, sy)
		}
	}
	return out
}

func sampleGray(img *image.Gray, x, y float64) uint8 {
	b := img.Bounds()
	x0, y0 := int(math.Floor(x)), int(math.Floor(y))
	if x0 < 0 || y0 < 0 || x0+1 >= b.Dx() || y0+1 >= b.Dy() {
		return 255
	}
	fx, fy := x-float64(x0), y-float64(y0)
	p := img.Pix[y0*img.Stride+x0:]
	q := img.Pix[(y0+1)*img.Stride+x0:]
	top := float64(p[0])*(1-fx) + float64(p[1])*fx
	bot := float64(q[0])*(1-fx) + float64(q[1])*fx
	return uint8(top*(1-fy) + bot*fy + 0.5)
}

// deskewNiced runs deskewPGM on an OS thread of its own at the OCR
// processes' priority: the work is done in the service's process (a
// search process in embedded mode), and must yield to searches as
// tesseract does. The thread is never unlocked, so it exits with the
// goroutine and its priority with it; the OCR programs, whose parent-death
// signal follows the thread that forked them, are forked by pkg/spawn on
// threads that never exit, so no thread that ends here has children.
func deskewNiced(path string, nice int) (float64, error) {
	type result struct {
		deg float64
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		lowerThreadPriority(nice)
		deg, err := deskewPGM(path)
		ch <- result{deg, err}
	}()
	r := <-ch
	return r.deg, r.err
}

// deskewPGM straightens the page in the PGM file at path in place when it
// is skewed; it reports the angle corrected (0 when none).
func deskewPGM(path string) (float64, error) {
	img, err := readPGM(path)
	if err != nil {
		return 0, err
	}
	deg := skewAngle(img)
	if deg == 0 {
		return 0, nil
	}
	return deg, writePGM(path, rotateGray(img, -deg))
}

// readPGM reads a binary 8-bit PGM (P5), as pdftoppm -gray writes it.
func readPGM(path string) (*image.Gray, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var magic string
	var w, h, maxv int
	if _, err := fmt.Fscan(r, &magic, &w, &h, &maxv); err != nil {
		return nil, fmt.Errorf("PGM header: %w", err)
	}
	if magic != "P5" || maxv != 255 || w <= 0 || h <= 0 || int64(w)*int64(h) > 1<<31 {
		return nil, fmt.Errorf("unsupported PGM %s %dx%d max %d", magic, w, h, maxv)
	}
	if _, err := r.ReadByte(); err != nil {
		return nil, err
	}
	img := image.NewGray(image.Rect(0, 0, w, h))
	if _, err := io.ReadFull(r, img.Pix); err != nil {
		return nil, fmt.Errorf("PGM pixels: %w", err)
	}
	return img, nil
}

func writePGM(path string, img *image.Gray) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	b := img.Bounds()
	fmt.Fprintf(w, "P5\n%d %d\n255\n", b.Dx(), b.Dy())
	for y := 0; y < b.Dy(); y++ {
		w.Write(img.Pix[y*img.Stride : y*img.Stride+b.Dx()])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
