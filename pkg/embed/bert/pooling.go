package bert

import (
	"fmt"
	"math"
	"strings"
)

// Pooling turns a sequence's hidden states into one vector.
type Pooling int

// Poolings.
const (
	// Mean averages every token's state ([CLS] and [SEP] included):
	// all-MiniLM, e5 and gte models.
	Mean Pooling = iota
	// CLS takes the [CLS] token's state: bge models.
	CLS
)

// String is the name ParsePooling reads.
func (p Pooling) String() string {
	if p == CLS {
		return "cls"
	}
	return "mean"
}

// ParsePooling reads "mean" or "cls".
func ParsePooling(s string) (Pooling, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "mean":
		return Mean, nil
	case "cls":
		return CLS, nil
	}
	return 0, fmt.Errorf("bert: pooling %q (want mean or cls)", s)
}

// Embed runs the encoder and returns one L2-normalised vector per
// sequence, pooled as p says.
func (m *Model) Embed(seqs [][]int32, p Pooling) ([][]float32, error) {
	states, err := m.Forward(seqs)
	if err != nil {
		return nil, err
	}
	H := m.cfg.HiddenSize
	out := make([][]float32, len(seqs))
	for i, st := range states {
		out[i] = Pool(st, len(seqs[i]), H, p)
	}
	return out, nil
}

// Pool pools one sequence's hidden states (n rows of H values) and
// normalises the result to unit L2 norm.
func Pool(states []float32, n, H int, p Pooling) []float32 {
	v := make([]float32, H)
	if p == CLS {
		copy(v, states[:H])
	} else {
		acc := make([]float64, H)
		for r := range n {
			for j, x := range states[r*H : (r+1)*H] {
				acc[j] += float64(x)
			}
		}
		for j := range v {
			v[j] = float32(acc[j] / float64(n))
		}
	}
	Normalize(v)
	return v
}

// Normalize scales v to unit L2 norm (a zero vector stays zero).
func Normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
}
