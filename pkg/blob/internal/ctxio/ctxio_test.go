package ctxio

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReaderStopsWithTheCancelCause(t *testing.T) {
	errStop := errors.New("stop")
	tests := []struct {
		name     string
		cancel   bool
		wantRead string
		wantErr  error
	}{
		{name: "live context reads everything", wantRead: "hello"},
		{name: "cancelled context reads nothing", cancel: true, wantErr: errStop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			if tt.cancel {
				cancel(errStop)
			}
			got, err := io.ReadAll(Reader(ctx, strings.NewReader("hello")))
			if string(got) != tt.wantRead || !errors.Is(err, tt.wantErr) {
				t.Fatalf("ReadAll = %q, %v; want %q, %v", got, err, tt.wantRead, tt.wantErr)
			}
		})
	}
}
