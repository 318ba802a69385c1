package bert

import (
	"math"
	"testing"
)

func TestFastExpErfTanhMatchTheMathPackage(t *testing.T) {
	tests := []struct {
		name     string
		f, want  func(float64) float64
		lo, hi   float64
		relative bool
		tol      float64
	}{
		{"exp", exp, math.Exp, -100, 88, true, 2e-7},
		{"erf", erf, math.Erf, -8, 8, false, 2e-7},
		{"tanh", tanh, math.Tanh, -25, 25, false, 2e-7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const steps = 200_001
			var worst, at float64
			for i := range steps {
				x := tc.lo + (tc.hi-tc.lo)*float64(i)/(steps-1)
				got, want := tc.f(x), tc.want(x)
				d := math.Abs(got - want)
				if tc.relative {
					d /= want
				}
				if d > worst {
					worst, at = d, x
				}
			}
			if worst > tc.tol {
				t.Errorf("error up to %g (at %g), want ≤ %g", worst, at, tc.tol)
			}
			t.Logf("largest error %.2g at %g", worst, at)
		})
	}
	if exp(-200) != 0 || !math.IsInf(exp(100), 1) || !math.IsNaN(exp(math.NaN())) || exp(0) != 1 {
		t.Error("exp edge cases")
	}
}

func BenchmarkFastMath(b *testing.B) {
	var sink float64
	b.Run("exp", func(b *testing.B) {
		x := -3.7
		for b.Loop() {
			sink += exp(x)
			x += 1e-9
		}
	})
	b.Run("math.Exp", func(b *testing.B) {
		x := -3.7
		for b.Loop() {
			sink += math.Exp(x)
			x += 1e-9
		}
	})
	b.Run("erf", func(b *testing.B) {
		x := 1.3
		for b.Loop() {
			sink += erf(x)
			x += 1e-9
		}
	})
	_ = sink
}
