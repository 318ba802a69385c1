// Package safetensors reads and writes the safetensors format of Hugging
// Face model weights: an 8-byte little-endian header length N, N bytes of
// JSON header mapping tensor names to {dtype, shape, data_offsets}, and
// the raw little-endian tensor bytes the offsets point into. The optional
// "__metadata__" entry maps strings to strings.
//
// Read checks what a damaged or hostile file could get wrong (header size,
// offsets outside the data, sizes that disagree with shape and dtype,
// overlapping tensors) before any tensor is used. Tensors of dtype F32,
// F16 and BF16 convert to float32; other dtypes can be listed but not
// converted.
package safetensors

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
)

// DType names an element type as the header spells it.
type DType string

// Element types this package converts to float32.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
)

// MaxHeaderBytes bounds the JSON header (the reference implementation
// uses the same limit).
const MaxHeaderBytes = 100 << 20

// ErrFormat reports a file that is not valid safetensors.
var ErrFormat = errors.New("safetensors: invalid file")

// elemSize is the byte size of each dtype the format defines.
var elemSize = map[DType]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, F16: 2, BF16: 2,
	"I32": 4, "U32": 4, F32: 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// Tensor is one named tensor of a file.
type Tensor struct {
	DType DType
	Shape []int
	// Data is the tensor's raw little-endian bytes.
	Data []byte
}

// Len is the number of elements (the product of Shape; 1 for a scalar).
func (t Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Float32s converts the tensor to float32 values in row-major order.
func (t Tensor) Float32s() ([]float32, error) {
	n := t.Len()
	out := make([]float32, n)
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case F16:
		for i := range out {
			out[i] = HalfToFloat32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(t.Data[2*i:])) << 16)
		}
	default:
		return nil, fmt.Errorf("safetensors: dtype %s cannot be read as float32 (want F32, F16 or BF16)", t.DType)
	}
	return out, nil
}

// HalfToFloat32 converts an IEEE 754 binary16 value to float32, exactly
// (subnormals, infinities and NaN included).
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal: frac · 2^-24, normalised for float32.
	e := uint32(127 - 15 + 1)
	for frac&0x400 == 0 {
		frac <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
}

// Float32ToHalf converts float32 to binary16, rounding to nearest even;
// values too large become infinities.
func Float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	frac := b & 0x7fffff
	if exp == 0xff { // Inf or NaN
		h := sign | 0x7c00
		if frac != 0 {
			h |= 0x200 | uint16(frac>>13)
		}
		return h
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // subnormal or zero in half precision
		if e < -10 {
			return sign
		}
		m := frac | 0x800000 // implicit bit
		shift := uint32(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	h := uint32(e)<<10 | frac>>13
	rem := frac & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is still correct
	}
	return sign | uint16(h)
}

// File is a parsed safetensors file held in memory.
type File struct {
	Metadata map[string]string
	Tensors  map[string]Tensor
}

// Names lists the tensor names, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Tensors))
	for n := range f.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type headerEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// ReadFile reads and checks the file at path.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse parses a whole file held in b. Tensor data aliases b.
func Parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the 8-byte header length", ErrFormat, len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > MaxHeaderBytes || n > uint64(len(b)-8) {
		return nil, fmt.Errorf("%w: header length %d does not fit the %d-byte file", ErrFormat, n, len(b))
	}
	header := b[8 : 8+n]
	data := b[8+n:]
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	f := &File{Tensors: make(map[string]Tensor, len(raw))}
	type span struct {
		name       string
		start, end int64
	}
	spans := make([]span, 0, len(raw))
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("%w: __metadata__: %v", ErrFormat, err)
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
		}
		size, ok := elemSize[e.DType]
		if !ok {
			return nil, fmt.Errorf("%w: tensor %q: unknown dtype %q", ErrFormat, name, e.DType)
		}
		count := int64(1)
		for _, d := range e.Shape {
			if d < 0 || (d > 0 && count > math.MaxInt64/int64(size)/int64(d)) {
				return nil, fmt.Errorf("%w: tensor %q: bad shape %v", ErrFormat, name, e.Shape)
			}
			count *= int64(d)
		}
		start, end := e.DataOffsets[0], e.DataOffsets[1]
		if start < 0 || end < start || end > int64(len(data)) {
			return nil, fmt.Errorf("%w: tensor %q: offsets [%d, %d) outside the %d data bytes", ErrFormat, name, start, end, len(data))
		}
		if end-start != count*int64(size) {
			return nil, fmt.Errorf("%w: tensor %q: %d bytes for shape %v of %s (want %d)", ErrFormat, name, end-start, e.Shape, e.DType, count*int64(size))
		}
		f.Tensors[name] = Tensor{DType: e.DType, Shape: e.Shape, Data: data[start:end:end]}
		spans = append(spans, span{name, start, end})
	}
	slices.SortFunc(spans, func(a, b span) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			return nil, fmt.Errorf("%w: tensors %q and %q overlap", ErrFormat, spans[i-1].name, spans[i].name)
		}
	}
	return f, nil
}

// Write writes tensors (and optional metadata) in safetensors format,
// in name order, with the header padded to a multiple of 8 bytes as the
// reference writer does.
func Write(w io.Writer, tensors map[string]Tensor, metadata map[string]string) error {
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	header := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for _, n := range names {
		t := tensors[n]
		size, ok := elemSize[t.DType]
		if !ok {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", n, t.DType)
		}
		if len(t.Data) != t.Len()*size {
			return fmt.Errorf("safetensors: tensor %q: %d bytes for shape %v of %s", n, len(t.Data), t.Shape, t.DType)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[n] = headerEntry{DType: t.DType, Shape: shape, DataOffsets: [2]int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	var lenb [8]byte
	binary.LittleEndian.PutUint64(lenb[:], uint64(len(hb)))
	if _, err := w.Write(lenb[:]); err != nil {
		return err
	}
	if _, err := w.Write(hb); err != nil {
		return err
	}
	for _, n := range names {
		if _, err := w.Write(tensors[n].Data); err != nil {
			return err
		}
	}
	return nil
}

// FromFloat32s makes a tensor of dtype (F32, F16 or BF16) from values;
// F16 and BF16 round to nearest even.
func FromFloat32s(dtype DType, shape []int, values []float32) (Tensor, error) {
	t := Tensor{DType: dtype, Shape: slices.Clone(shape)}
	if t.Len() != len(values) {
		return Tensor{}, fmt.Errorf("safetensors: %d values for shape %v", len(values), shape)
	}
	switch dtype {
	case F32:
		t.Data = make([]byte, 4*len(values))
		for i, v := range values {
			binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(v))
		}
	case F16:
		t.Data = make([]byte, 2*len(values))
		for i, v := range values {
			binary.LittleEndian.PutUint16(t.Data[2*i:], Float32ToHalf(v))
		}
	case BF16:
		t.Data = make([]byte, 2*len(values))
		for i, v := range values {
			b := math.Float32bits(v)
			b += 0x7fff + (b>>16)&1 // round to nearest even
			binary.LittleEndian.PutUint16(t.Data[2*i:], uint16(b>>16))
		}
	default:
		return Tensor{}, fmt.Errorf("safetensors: cannot write float32 values as %s", dtype)
	}
	return t, nil
}
