package apierr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestRoundTripToHTTP(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantHTTP   int
		wantDetail string
	}{
		{name: "invalid", err: Invalid("No fields to update"), wantHTTP: 400, wantDetail: "No fields to update"},
		{name: "unauthenticated", err: Unauthenticated("Invalid or expired token"), wantHTTP: 401, wantDetail: "Invalid or expired token"},
		{name: "forbidden", err: PermissionDenied("Missing required scope: search"), wantHTTP: 403, wantDetail: "Missing required scope: search"},
		{name: "not found", err: NotFound("Document not found"), wantHTTP: 404, wantDetail: "Document not found"},
		{name: "too large", err: TooLarge("File too large"), wantHTTP: http.StatusRequestEntityTooLarge, wantDetail: "File too large"},
		{name: "unprocessable", err: Unprocessable("Missing or invalid name"), wantHTTP: 422, wantDetail: "Missing or invalid name"},
		{name: "locked", err: Locked("Document is locked"), wantHTTP: 423, wantDetail: "Document is locked"},
		{name: "rate limited", err: RateLimited("Too many requests"), wantHTTP: 429, wantDetail: "Too many requests"},
		{name: "timeout", err: Timeout("Gateway Timeout"), wantHTTP: 504, wantDetail: "Gateway Timeout"},
		{name: "wrapped domain error", err: fmt.Errorf("ctx: %w", Locked("Document is locked")), wantHTTP: 423, wantDetail: "Document is locked"},
		{name: "context deadline", err: fmt.Errorf("query: %w", context.DeadlineExceeded), wantHTTP: 504, wantDetail: "Gateway Timeout"},
		{name: "downstream status passes through", err: status.Error(codes.NotFound, "Folder not found"), wantHTTP: 404, wantDetail: "Folder not found"},
		{name: "unexpected error is hidden", err: errors.New("pq: connection refused"), wantHTTP: 500, wantDetail: "Internal server error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := ToStatus(tt.err)
			// Simulate the wire: the client sees the status proto.
			st = status.FromProto(st.Proto())
			if got := HTTPStatus(st); got != tt.wantHTTP {
				t.Errorf("HTTPStatus = %d, want %d", got, tt.wantHTTP)
			}
			if st.Message() != tt.wantDetail {
				t.Errorf("message = %q, want %q", st.Message(), tt.wantDetail)
			}
		})
	}
}

func TestIsKind(t *testing.T) {
	err := fmt.Errorf("wrap: %w", NotFound("x"))
	if !IsKind(err, KindNotFound) || IsKind(err, KindInvalid) {
		t.Fatal("IsKind does not see through wrapping")
	}
}
