// Package ctxio makes a plain io.Reader give up once a context is done,
// so the blob stores can honour cancellation between reads of a body.
package ctxio
