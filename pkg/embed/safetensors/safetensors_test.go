package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestHalfRoundTripsEveryValue(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := HalfToFloat32(uint16(h))
		if math.IsNaN(float64(f)) {
			if back := Float32ToHalf(f); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back := Float32ToHalf(f); back != uint16(h) {
			t.Fatalf("%#04x -> %v -> %#04x", h, f, back)
		}
	}
}

func TestHalfKnownValues(t *testing.T) {
	tests := []struct {
		h uint16
		f float32
	}{
		{0x3c00, 1},
		{0xc000, -2},
		{0x7bff, 65504},
		{0x0001, float32(math.Ldexp(1, -24))}, // smallest subnormal
		{0x0400, float32(math.Ldexp(1, -14))}, // smallest normal
		{0x3555, 0.333251953125},
		{0x7c00, float32(math.Inf(1))},
		{0x8000, float32(math.Copysign(0, -1))},
	}
	for _, tc := range tests {
		if got := HalfToFloat32(tc.h); got != tc.f || math.Signbit(float64(got)) != math.Signbit(float64(tc.f)) {
			t.Errorf("HalfToFloat32(%#04x) = %v, want %v", tc.h, got, tc.f)
		}
	}
	rounding := []struct {
		f    float32
		want uint16
	}{
		{1 + 1.0/2048, 0x3c00},           // halfway, rounds to even (down)
		{1 + 3.0/2048, 0x3c02},           // halfway, rounds to even (up)
		{1 + 1.0/2048 + 1e-7, 0x3c01},    // just above halfway
		{70000, 0x7c00},                  // overflow
		{float32(math.Ldexp(1, -26)), 0}, // underflow
	}
	for _, tc := range rounding {
		if got := Float32ToHalf(tc.f); got != tc.want {
			t.Errorf("Float32ToHalf(%v) = %#04x, want %#04x", tc.f, got, tc.want)
		}
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	values := []float32{0, 1, -2.5, 3.25, 1e-3, -65504}
	tests := []struct {
		dtype DType
		tol   float64
	}{
		{F32, 0},
		{F16, 1e-3},
		{BF16, 1e-2},
	}
	for _, tc := range tests {
		t.Run(string(tc.dtype), func(t *testing.T) {
			a, err := FromFloat32s(tc.dtype, []int{2, 3}, values)
			if err != nil {
				t.Fatal(err)
			}
			b, err := FromFloat32s(tc.dtype, []int{3}, values[:3])
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Write(&buf, map[string]Tensor{"layer.a": a, "b": b}, map[string]string{"format": "pt"}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "model.safetensors")
			if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if f.Metadata["format"] != "pt" {
				t.Errorf("metadata = %v", f.Metadata)
			}
			if got := f.Names(); !slices.Equal(got, []string{"b", "layer.a"}) {
				t.Errorf("names = %v", got)
			}
			ta := f.Tensors["layer.a"]
			if ta.DType != tc.dtype || !slices.Equal(ta.Shape, []int{2, 3}) {
				t.Errorf("layer.a = %s %v", ta.DType, ta.Shape)
			}
			got, err := ta.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range values {
				if d := math.Abs(float64(got[i] - v)); d > tc.tol*math.Max(1, math.Abs(float64(v))) {
					t.Errorf("value %d = %v, want %v", i, got[i], v)
				}
			}
		})
	}
}

// file builds a safetensors file from a header string and data bytes.
func file(header string, data []byte) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func TestParseRejectsBadFiles(t *testing.T) {
	tests := []struct {
		name string
		file []byte
	}{
		{"too short", []byte{1, 2, 3}},
		{"header longer than file", binary.LittleEndian.AppendUint64(nil, 100)},
		{"huge header length", binary.LittleEndian.AppendUint64(nil, math.MaxUint64)},
		{"header not JSON", file("{nope", nil)},
		{"unknown dtype", file(`{"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1))},
		{"offsets past data", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 4))},
		{"size disagrees with shape", file(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8))},
		{"negative dimension", file(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, nil)},
		{"reversed offsets", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, make([]byte, 4))},
		{"overlapping tensors", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8))},
		{"overflowing shape", file(`{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}}`, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(tc.file); !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want ErrFormat", err)
			}
		})
	}
}

func TestFloat32sRejectsIntegerTensors(t *testing.T) {
	f, err := Parse(file(`{"ids":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Tensors["ids"].Float32s(); err == nil {
		t.Fatal("I64 converted to float32")
	}
}
