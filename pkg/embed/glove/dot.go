package glove

// Dot returns the dot product of the unit vector of rank r with v (of
// Dimensions values): the cosine of word r and v when v is a unit
// vector, without decoding the word's vector.
func (t *Table) Dot(r int, v []float32) float32 {
	c := t.codes[r*Dimensions : (r+1)*Dimensions]
	v = v[:Dimensions]
	var s float32
	for d, x := range c {
		s += float32(x) * v[d]
	}
	return s * t.scale[r]
}
