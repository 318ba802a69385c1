package bert

import "math"

// The exponential and error functions of the encoder's softmax and GELU
// are computed here rather than with package math: math.Exp is assembly
// that, in a binary built with GOEXPERIMENT=simd, ran about 150 times
// slower on the development machine (880 ns instead of 6 ns a call,
// presumably an SSE/AVX transition penalty), which made softmax and GELU
// cost more than all the matrix products. These are plain Go, accurate
// to about one float32 ulp (exp) and 1.5e-7 absolute (erf), and are
// checked against package math in the tests.

// exp returns eˣ to float32 precision (relative error below 1e-7), 0
// below -104 and +Inf above 88.8.
func exp(x float64) float64 {
	switch {
	case x < -104:
		return 0
	case x > 88.8:
		return math.Inf(1)
	case x != x:
		return x
	}
	// x = n·ln2 + r, |r| ≤ ln2/2; eʳ by its Taylor series to degree 7
	// (truncation error below 5e-9 relative), times 2ⁿ.
	t := x * math.Log2E
	var n int
	if t >= 0 {
		n = int(t + 0.5)
	} else {
		n = int(t - 0.5)
	}
	r := x - float64(n)*math.Ln2
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	return p * math.Float64frombits(uint64(n+1023)<<52)
}

// erf is the error function by Abramowitz and Stegun 7.1.26 (absolute
// error at most 1.5e-7).
func erf(x float64) float64 {
	sign := 1.0
	if x < 0 {
		sign, x = -1, -x
	}
	if x > 6 {
		return sign
	}
	t := 1 / (1 + 0.3275911*x)
	y := 1 - t*(0.254829592+t*(-0.284496736+t*(1.421413741+t*(-1.453152027+t*1.061405429))))*exp(-x*x)
	return sign * y
}

// tanh is the hyperbolic tangent through exp.
func tanh(x float64) float64 {
	if x > 20 {
		return 1
	}
	if x < -20 {
		return -1
	}
	if math.Abs(x) < 1e-4 { // 1 - 2/(e^2x+1) cancels; tanh x ≈ x - x³/3
		return x - x*x*x/3
	}
	return 1 - 2/(exp(2*x)+1)
}
