// Package events is the wire contract of docrepo's events on NATS JetStream:
// the stream and subject names, the message headers, and the encoding of the
// protobuf payloads (docrepo.event.v1) to and from NATS messages.
//
// Producers never publish directly: they write outbox rows (pkg/outbox) in
// their own transaction and a relay publishes them with [Encode]. Consumers
// decode what they receive with [Decode], [DecodeDocumentEvent] or
// [DecodeFolderEvent].
//
// Every event is published on docrepo.<aggregate>.<kind>, e.g.
// docrepo.document.updated, with Nats-Msg-Id set to the event id (the outbox
// row id). Delivery is at least once and, across several relays, not in
// global order: consumers must be idempotent and use the document's rev to
// discard stale events (docs/design.md §5).
package events

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	eventv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/event/v1"
)

// Stream and subjects.
const (
	// StreamName is the JetStream stream holding every docrepo event.
	StreamName = "DOCREPO"
	// SubjectPrefix starts every event subject.
	SubjectPrefix = "docrepo"
	// SubjectAll matches every event; it is the stream's subject filter.
	SubjectAll = "docrepo.>"
	// SubjectDocuments matches every document event.
	SubjectDocuments = "docrepo.document.*"
	// SubjectFolders matches every folder event.
	SubjectFolders = "docrepo.folder.*"
)

// Aggregates: the second subject token.
const (
	AggregateDocument = "document"
	AggregateFolder   = "folder"
)

// Document event kinds.
const (
	KindCreated             = "created"
	KindUpdated             = "updated"
	KindFileReplaced        = "file_replaced"
	KindLocked              = "locked"
	KindUnlocked            = "unlocked"
	KindFoldersChanged      = "folders_changed"
	KindCustomFieldsChanged = "customfields_changed"
	// A document moved to the trash (KindDeleted, below), back out of it,
	// or purged for good: for search, the first and the last remove it,
	// restored brings it back.
	KindRestored = "restored"
	KindPurged   = "purged"
)

// Folder event kinds (besides KindCreated); KindDeleted is also the
// document event of a move to the trash.
const (
	KindMoved   = "moved"
	KindDeleted = "deleted"
)

// Message headers set on every event. Nats-Msg-Id (the event id) is set by
// the publisher through jetstream.WithMsgID.
const (
	HeaderEventKind   = "Docrepo-Event-Kind"
	HeaderAggregateID = "Docrepo-Aggregate-Id"
	// HeaderRequestID carries the id of the API request that caused the
	// event; absent for events without one (e.g. written by a trigger).
	HeaderRequestID = "X-Request-Id"
	// HeaderTraceparent carries the W3C trace context of the write that
	// caused the event; consumers continue that trace (tracing.Extract
	// with a nats.Header carrier).
	HeaderTraceparent = "traceparent"
)

// ErrNotEvent is returned (wrapped) for a message that is not a docrepo
// event of the expected aggregate.
var ErrNotEvent = errors.New("events: not a docrepo event")

// Subject is the subject an event of aggregate and kind is published on.
func Subject(aggregate, kind string) string {
	return SubjectPrefix + "." + aggregate + "." + kind
}

// ValidKind reports whether kind can be the last token of a subject:
// non-empty, without dots, wildcards, whitespace or control characters.
func ValidKind(kind string) bool {
	if kind == "" {
		return false
	}
	for _, r := range kind {
		if r == '.' || r == '*' || r == '>' || r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// ParseSubject splits an event subject into aggregate and kind.
func ParseSubject(subject string) (aggregate, kind string, err error) {
	parts := strings.Split(subject, ".")
	if len(parts) != 3 || parts[0] != SubjectPrefix || !ValidKind(parts[2]) {
		return "", "", fmt.Errorf("%w: subject %q", ErrNotEvent, subject)
	}
	switch parts[1] {
	case AggregateDocument, AggregateFolder:
		return parts[1], parts[2], nil
	}
	return "", "", fmt.Errorf("%w: unknown aggregate in subject %q", ErrNotEvent, subject)
}

// Encode returns the NATS message for ev, an *eventv1.DocumentEvent or an
// *eventv1.FolderEvent: subject, protobuf payload and the docrepo headers.
// The caller publishes it with jetstream.WithMsgID(strconv of the event id).
func Encode(ev proto.Message) (*nats.Msg, error) {
	var aggregate, kind, requestID string
	var aggregateID int64
	switch e := ev.(type) {
	case *eventv1.DocumentEvent:
		aggregate, kind, aggregateID, requestID = AggregateDocument, e.GetKind(), e.GetDocId(), e.GetRequestId()
	case *eventv1.FolderEvent:
		aggregate, kind, aggregateID, requestID = AggregateFolder, e.GetKind(), e.GetFolderId(), e.GetRequestId()
	default:
		return nil, fmt.Errorf("events: cannot encode %T", ev)
	}
	if !ValidKind(kind) {
		return nil, fmt.Errorf("events: invalid %s event kind %q", aggregate, kind)
	}
	data, err := proto.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("events: marshal %s event: %w", aggregate, err)
	}
	m := nats.NewMsg(Subject(aggregate, kind))
	m.Data = data
	m.Header.Set(HeaderEventKind, kind)
	m.Header.Set(HeaderAggregateID, strconv.FormatInt(aggregateID, 10))
	if requestID != "" {
		m.Header.Set(HeaderRequestID, requestID)
	}
	return m, nil
}

// Msg is what decoding needs of a message. jetstream.Msg satisfies it; wrap a
// core *nats.Msg with [NATSMsg].
type Msg interface {
	Subject() string
	Data() []byte
}

// NATSMsg adapts a core *nats.Msg to [Msg].
func NATSMsg(m *nats.Msg) Msg { return natsMsg{m} }

type natsMsg struct{ m *nats.Msg }

func (n natsMsg) Subject() string { return n.m.Subject }
func (n natsMsg) Data() []byte    { return n.m.Data }

// DecodeDocumentEvent decodes a message published on docrepo.document.<kind>.
// It fails with ErrNotEvent for any other subject, and when the payload's
// kind disagrees with the subject.
func DecodeDocumentEvent(m Msg) (*eventv1.DocumentEvent, error) {
	kind, err := expect(m, AggregateDocument)
	if err != nil {
		return nil, err
	}
	ev := &eventv1.DocumentEvent{}
	if err := proto.Unmarshal(m.Data(), ev); err != nil {
		return nil, fmt.Errorf("events: decode document event on %s: %w", m.Subject(), err)
	}
	if ev.GetKind() != kind {
		return nil, fmt.Errorf("%w: payload kind %q on subject %q", ErrNotEvent, ev.GetKind(), m.Subject())
	}
	return ev, nil
}

// DecodeFolderEvent decodes a message published on docrepo.folder.<kind>,
// with the same checks as DecodeDocumentEvent.
func DecodeFolderEvent(m Msg) (*eventv1.FolderEvent, error) {
	kind, err := expect(m, AggregateFolder)
	if err != nil {
		return nil, err
	}
	ev := &eventv1.FolderEvent{}
	if err := proto.Unmarshal(m.Data(), ev); err != nil {
		return nil, fmt.Errorf("events: decode folder event on %s: %w", m.Subject(), err)
	}
	if ev.GetKind() != kind {
		return nil, fmt.Errorf("%w: payload kind %q on subject %q", ErrNotEvent, ev.GetKind(), m.Subject())
	}
	return ev, nil
}

// Decode decodes any docrepo event by its subject: the result is an
// *eventv1.DocumentEvent or an *eventv1.FolderEvent.
func Decode(m Msg) (proto.Message, error) {
	aggregate, _, err := ParseSubject(m.Subject())
	if err != nil {
		return nil, err
	}
	if aggregate == AggregateFolder {
		return DecodeFolderEvent(m)
	}
	return DecodeDocumentEvent(m)
}

func expect(m Msg, aggregate string) (kind string, err error) {
	got, kind, err := ParseSubject(m.Subject())
	if err != nil {
		return "", err
	}
	if got != aggregate {
		return "", fmt.Errorf("%w: want a %s event, subject is %q", ErrNotEvent, aggregate, m.Subject())
	}
	return kind, nil
}

// HeaderCarrier adapts NATS message headers to OpenTelemetry propagation,
// so the writer's trace context can be read from (and written to) events.
type HeaderCarrier nats.Header

// Get returns the first value of key.
func (c HeaderCarrier) Get(key string) string { return nats.Header(c).Get(key) }

// Set sets key to value.
func (c HeaderCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }

// Keys lists the header names.
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
