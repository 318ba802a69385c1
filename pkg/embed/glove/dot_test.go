package glove

import (
	"math"
	"testing"
)

// TestDot checks Dot against the decoded vectors' dot product.
func TestDot(t *testing.T) {
	tab := testTable(t, 0)
	for a := range tab.Len() {
		va := tab.Vector(a)
		for b := range tab.Len() {
			var want float32
			for d, x := range tab.Vector(b) {
				want += x * va[d]
			}
			if got := tab.Dot(b, va); math.Abs(float64(got-want)) > 1e-5 {
				t.Errorf("Dot(%d, vector of %d) = %v, want %v", b, a, got, want)
			}
		}
	}
}
