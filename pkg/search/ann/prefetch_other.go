//go:build !amd64

package ann

// prefetchTile does nothing where there is no prefetch instruction in
// this package's assembly (prefetch_amd64.s).
func prefetchTile(p *int8) {}
