// Package blobtest is the conformance suite every [blob.Store]
// implementation must pass, and a Put benchmark that reports throughput and
// heap growth.
//
// An implementation's tests call [Run] with a constructor that returns a
// fresh, empty store for each case:
//
//	func TestConformance(t *testing.T) {
//		blobtest.Run(t, func(t *testing.T) blob.Store { return newStore(t) }, blobtest.Options{})
//	}
//
// and its benchmarks call [BenchmarkPut].
package blobtest
