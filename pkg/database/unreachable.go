package database

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unreachable reports whether err says the database could not be reached
// or went away during the statement — a restart, a crash, a network cut —
// rather than refusing the statement: the same request may well succeed
// once the server is back, so callers get 503 Service Unavailable (which
// clients retry) instead of 500. It recognises a failed connection
// attempt, a connection the driver already closed, the connection
// exceptions (SQLSTATE class 08) and the server shutting down, crashed or
// starting (57P01–57P03), and the socket failing under a statement (an
// unexpected EOF, a reset).
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08")
	}
	var opErr *net.OpError
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &opErr)
}
