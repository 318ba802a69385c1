package events_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/docrepo/docrepo/pkg/events"
	eventv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/event/v1"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	at := timestamppb.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tests := []struct {
		name        string
		ev          proto.Message
		wantSubject string
		wantHeaders map[string]string // "" means absent
	}{
		{
			name:        "document with request id",
			ev:          &eventv1.DocumentEvent{EventId: 7, DocId: 42, Rev: 3, Kind: events.KindUpdated, OccurredAt: at, ActorUserId: 9, RequestId: "req-1"},
			wantSubject: "docrepo.document.updated",
			wantHeaders: map[string]string{events.HeaderEventKind: "updated", events.HeaderAggregateID: "42", events.HeaderRequestID: "req-1"},
		},
		{
			name:        "document without request id",
			ev:          &eventv1.DocumentEvent{EventId: 8, DocId: 5, Rev: 2, Kind: events.KindFoldersChanged},
			wantSubject: "docrepo.document.folders_changed",
			wantHeaders: map[string]string{events.HeaderEventKind: "folders_changed", events.HeaderAggregateID: "5", events.HeaderRequestID: ""},
		},
		{
			name:        "folder deletion",
			ev:          &eventv1.FolderEvent{EventId: 9, FolderId: 11, Kind: events.KindDeleted, OccurredAt: at, FolderIds: []int64{11, 12, 13}, RequestId: "r"},
			wantSubject: "docrepo.folder.deleted",
			wantHeaders: map[string]string{events.HeaderEventKind: "deleted", events.HeaderAggregateID: "11", events.HeaderRequestID: "r"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := events.Encode(tt.ev)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if m.Subject != tt.wantSubject {
				t.Errorf("subject = %q, want %q", m.Subject, tt.wantSubject)
			}
			for k, want := range tt.wantHeaders {
				if got := m.Header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			got, err := events.Decode(events.NATSMsg(m))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !proto.Equal(got, tt.ev) {
				t.Errorf("Decode = %v, want %v", got, tt.ev)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	doc, _ := proto.Marshal(&eventv1.DocumentEvent{EventId: 1, DocId: 2, Kind: "updated"})
	folder, _ := proto.Marshal(&eventv1.FolderEvent{EventId: 1, FolderId: 2, Kind: "moved"})
	tests := []struct {
		name         string
		subject      string
		data         []byte
		decode       func(events.Msg) (proto.Message, error)
		wantNotEvent bool // errors.Is(err, ErrNotEvent); otherwise a payload error
	}{
		{name: "folder subject to document decoder", subject: "docrepo.folder.moved", data: folder, decode: decodeDocument, wantNotEvent: true},
		{name: "document subject to folder decoder", subject: "docrepo.document.updated", data: doc, decode: decodeFolder, wantNotEvent: true},
		{name: "foreign prefix", subject: "other.document.updated", data: doc, decode: events.Decode, wantNotEvent: true},
		{name: "unknown aggregate", subject: "docrepo.user.updated", data: doc, decode: events.Decode, wantNotEvent: true},
		{name: "too many tokens", subject: "docrepo.document.updated.x", data: doc, decode: events.Decode, wantNotEvent: true},
		{name: "kind disagrees with subject", subject: "docrepo.document.locked", data: doc, decode: events.Decode, wantNotEvent: true},
		{name: "garbage payload", subject: "docrepo.document.updated", data: []byte{0xff, 0xff, 0xff}, decode: events.Decode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &nats.Msg{Subject: tt.subject, Data: tt.data}
			got, err := tt.decode(events.NATSMsg(m))
			if err == nil {
				t.Fatalf("decode succeeded with %v, want an error", got)
			}
			if errors.Is(err, events.ErrNotEvent) != tt.wantNotEvent {
				t.Errorf("error %v: errors.Is(ErrNotEvent) = %v, want %v", err, !tt.wantNotEvent, tt.wantNotEvent)
			}
		})
	}
}

func decodeDocument(m events.Msg) (proto.Message, error) { return events.DecodeDocumentEvent(m) }
func decodeFolder(m events.Msg) (proto.Message, error)   { return events.DecodeFolderEvent(m) }

func TestEncodeRejects(t *testing.T) {
	tests := []struct {
		name string
		ev   proto.Message
	}{
		{name: "not an event", ev: timestamppb.Now()},
		{name: "empty kind", ev: &eventv1.DocumentEvent{DocId: 1}},
		{name: "kind with a dot", ev: &eventv1.FolderEvent{FolderId: 1, Kind: "a.b"}},
		{name: "kind with a wildcard", ev: &eventv1.DocumentEvent{DocId: 1, Kind: "*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m, err := events.Encode(tt.ev); err == nil {
				t.Errorf("Encode = %v, want an error", m.Subject)
			}
		})
	}
}
