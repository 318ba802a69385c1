package httpapi

import (
	"bytes"
	"testing"
)

// BenchmarkPumpSmallFile: forwarding a 1 KB file part costs a 1 KB
// message, not a zeroed 256 KiB buffer per upload (the garbage collector
// was a fifth of the gateway's CPU under the ingest benchmark).
func BenchmarkPumpSmallFile(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1024)
	var sent int
	b.ReportAllocs()
	for b.Loop() {
		if err := pump(bytes.NewReader(body), func(p []byte) error { sent += len(p); return nil }); err != nil {
			b.Fatal(err)
		}
	}
	if sent == 0 {
		b.Fatal("nothing sent")
	}
}
