package ctxio

import (
	"context"
	"io"
)

// Reader returns a reader that reads from r but fails with the context's
// error (see context.Cause) once ctx is done. It checks before every Read,
// so a copy loop stops within one buffer of cancellation; a Read already
// blocked inside r is not interrupted.
func Reader(ctx context.Context, r io.Reader) io.Reader {
	if ctx.Done() == nil {
		return r // never cancelled
	}
	return &reader{ctx: ctx, r: r}
}

type reader struct {
	ctx context.Context
	r   io.Reader
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, context.Cause(r.ctx)
	}
	return r.r.Read(p)
}
