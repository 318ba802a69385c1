package database

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestUnreachableTellsLostServerFromBadStatement(t *testing.T) {
	// A real failed connection attempt: nothing listens on the port.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, connectErr := pgx.Connect(ctx, "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=5")
	if connectErr == nil {
		t.Fatal("connected to a closed port")
	}

	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", connectErr, true},
		{"wrapped, as services wrap it", fmt.Errorf("authenticate: %w", connectErr), true},
		{"conn closed", fmt.Errorf("outbox insert: %w", pgconn.ErrConnClosed), true},
		{"server gone mid-statement", fmt.Errorf("claim: %w", io.ErrUnexpectedEOF), true},
		{"socket reset", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}, true},
		{"immediate shutdown", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{"starting up", &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, false},
		{"no rows", pgx.ErrNoRows, false},
		{"other", errors.New("boom"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := Unreachable(tt.err); got != tt.want {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
