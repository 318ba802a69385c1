package outbox

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
)

// RunRelay is how every service that writes events publishes them: it
// waits until the DOCREPO stream exists (creating it when missing; NATS may
// start after the service, or be restarting), then relays the outbox of
// pool's schema until ctx ends, creating the stream again when it is
// found gone (a NATS server restarted with an empty store). It returns nil when ctx ends and never
// gives up before: every failure is retried with a capped back-off.
func RunRelay(ctx context.Context, pool *pgxpool.Pool, js jetstream.JetStream, log *slog.Logger, opts Options, streamOpts ...StreamOption) error {
	if log == nil {
		log = slog.Default()
	}
	wait := 100 * time.Millisecond
	for {
		_, err := EnsureStream(ctx, js, streamOpts...)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		log.Warn("JetStream not ready; retrying", "error", err, "retry_in", wait)
		if !sleep(ctx, wait) {
			return nil
		}
		wait = min(2*wait, 10*time.Second)
	}
	r := NewRelay(pool, js, log, opts)
	r.streamOpts, r.recreate = streamOpts, true
	return r.Run(ctx)
}
