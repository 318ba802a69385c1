package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrepo/docrepo/pkg/events"
)

// Stream defaults.
const (
	// DefaultDuplicateWindow is how long JetStream remembers a Nats-Msg-Id.
	// A row published but not marked (relay or database failure) is
	// deduplicated only if it is published again within the window, so it
	// must cover a database outage as well as a relay restart; it costs
	// memory proportional to the events published within it.
	DefaultDuplicateWindow = time.Hour
	// MinDuplicateWindow is the smallest duplicate window EnsureStream
	// accepts.
	MinDuplicateWindow = 10 * time.Minute
	// DefaultMaxAge is how long the stream keeps events. Consumers that are
	// down longer than this must reindex.
	DefaultMaxAge = 7 * 24 * time.Hour
)

// StreamOption adjusts the stream configuration of EnsureStream.
type StreamOption func(*jetstream.StreamConfig)

// WithDuplicateWindow sets the duplicate window (at least
// MinDuplicateWindow, at most the max age).
func WithDuplicateWindow(d time.Duration) StreamOption {
	return func(c *jetstream.StreamConfig) { c.Duplicates = d }
}

// WithMaxAge sets how long events are kept.
func WithMaxAge(d time.Duration) StreamOption {
	return func(c *jetstream.StreamConfig) { c.MaxAge = d }
}

// WithMaxBytes caps the stream's size; the oldest events are discarded
// first. The default is no cap beyond the max age.
func WithMaxBytes(n int64) StreamOption {
	return func(c *jetstream.StreamConfig) { c.MaxBytes = n }
}

// WithReplicas sets the number of replicas in a clustered deployment.
func WithReplicas(n int) StreamOption {
	return func(c *jetstream.StreamConfig) { c.Replicas = n }
}

// StreamConfig returns the configuration EnsureStream applies.
func StreamConfig(opts ...StreamOption) jetstream.StreamConfig {
	c := jetstream.StreamConfig{
		Name:        events.StreamName,
		Description: "docrepo events, published from the Postgres outbox",
		Subjects:    []string{events.SubjectAll},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		Storage:     jetstream.FileStorage,
		MaxAge:      DefaultMaxAge,
		MaxBytes:    -1,
		MaxMsgs:     -1,
		Duplicates:  DefaultDuplicateWindow,
		Replicas:    1,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// EnsureStream creates the DOCREPO stream, or updates it to the current
// configuration; services call it at startup before running a Relay.
func EnsureStream(ctx context.Context, js jetstream.JetStream, opts ...StreamOption) (jetstream.Stream, error) {
	c := StreamConfig(opts...)
	if c.Duplicates < MinDuplicateWindow {
		return nil, fmt.Errorf("outbox: duplicate window %v is shorter than %v", c.Duplicates, MinDuplicateWindow)
	}
	if c.MaxAge > 0 && c.MaxAge < c.Duplicates {
		return nil, fmt.Errorf("outbox: max age %v is shorter than the duplicate window %v", c.MaxAge, c.Duplicates)
	}
	s, err := js.CreateOrUpdateStream(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("outbox: ensure stream %s: %w", c.Name, err)
	}
	return s, nil
}
