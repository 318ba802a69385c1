package webhook

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// Verify accepts the Standard Webhooks specification's example and what
// Request signs, and refuses a tampered body, another secret, a stale or
// future timestamp and missing headers.
func TestVerify(t *testing.T) {
	// The example of the Standard Webhooks libraries' tests.
	const (
		specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		specBody   = `{"test": 2432232314}`
		specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	)
	specAt := time.Unix(1614265330, 0)
	header := func(id, ts, sig string) http.Header {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", sig)
		return h
	}
	ours := NewSecret()
	now := time.Now()
	req, err := Request(t.Context(), "http://example.com/", ours, "msg_1", now, []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		secret  string
		h       http.Header
		body    string
		now     time.Time
		wantErr bool
	}{
		{name: "the specification's example", secret: specSecret, h: header(specID, "1614265330", specSig), body: specBody, now: specAt},
		{name: "one of several signatures", secret: specSecret, h: header(specID, "1614265330", "v1,bm9wZQ== v2,x "+specSig), body: specBody, now: specAt},
		{name: "what Request signs", secret: ours, h: req.Header, body: `{"a":1}`, now: now},
		{name: "a tampered body", secret: specSecret, h: header(specID, "1614265330", specSig), body: `{"test": 2432232315}`, now: specAt, wantErr: true},
		{name: "another secret", secret: ours, h: header(specID, "1614265330", specSig), body: specBody, now: specAt, wantErr: true},
		{name: "stale", secret: specSecret, h: header(specID, "1614265330", specSig), body: specBody, now: specAt.Add(6 * time.Minute), wantErr: true},
		{name: "from the future", secret: specSecret, h: header(specID, "1614265330", specSig), body: specBody, now: specAt.Add(-6 * time.Minute), wantErr: true},
		{name: "no signature", secret: specSecret, h: header(specID, "1614265330", ""), body: specBody, now: specAt, wantErr: true},
		{name: "another id", secret: specSecret, h: header("msg_other", "1614265330", specSig), body: specBody, now: specAt, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.secret, tt.h, []byte(tt.body), tt.now, DefaultTolerance)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Verify = %v, want error %v", err, tt.wantErr)
			}
		})
	}
	if err := Verify(specSecret, header(specID, "1614265330", "v1,AAAA"), []byte(specBody), specAt, DefaultTolerance); !errors.Is(err, ErrBadSignature) {
		t.Errorf("a wrong signature: %v, want ErrBadSignature", err)
	}
}
