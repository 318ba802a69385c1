//go:build !(goexperiment.simd && amd64)

package uselite

// Without GOEXPERIMENT=simd there is no packed kernel: the dense layers
// run on bert.MatMulT.

func kernels() []string { return nil }

func setKernel(name string) bool { return name == "" }
