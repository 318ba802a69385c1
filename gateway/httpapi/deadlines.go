package httpapi

import (
	"io"
	"net/http"
	"time"
)

// DefaultStallTimeout is the default of Config.StallTimeout.
const DefaultStallTimeout = time.Minute

// stallDeadlines cuts connections that stop moving bytes, without limiting
// how long a transfer may take: before every read of a request body the
// connection's read deadline moves to now+stall, and before every write of
// a response its write deadline does. A client that sends a body slowly
// but steadily (a 10 GiB upload) or reads a download slowly is fine; one
// that stops for stall holds no handler, buffer or backend stream longer.
// (ReadHeaderTimeout bounds the headers, IdleTimeout kept-alive
// connections.)
func stallDeadlines(next http.Handler, stall time.Duration) http.Handler {
	if stall <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(stall))
		_ = rc.SetWriteDeadline(time.Now().Add(stall))
		if r.Body != nil && r.Body != http.NoBody {
			// A shallow copy, not r itself: net/http decides from the
			// original request's Body (its own type) whether a handler
			// that answered without reading a large body may skip
			// draining it. Replacing it in place made the server try to
			// drain a 1 GiB upload it had already refused with a 401.
			r = r.WithContext(r.Context())
			r.Body = &stallReader{ReadCloser: r.Body, rc: rc, stall: stall}
		}
		next.ServeHTTP(&stallWriter{ResponseWriter: w, rc: rc, stall: stall}, r)
	})
}

type stallReader struct {
	io.ReadCloser
	rc    *http.ResponseController
	stall time.Duration
}

func (s *stallReader) Read(p []byte) (int, error) {
	_ = s.rc.SetReadDeadline(time.Now().Add(s.stall))
	return s.ReadCloser.Read(p)
}

type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

func (s *stallWriter) Write(p []byte) (int, error) {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.stall))
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush passes flushes on (streamed downloads flush).
func (s *stallWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
