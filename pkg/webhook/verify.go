package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a delivery's webhook-timestamp may be from
// the receiver's clock (Standard Webhooks recommends five minutes).
const DefaultTolerance = 5 * time.Minute

// ErrBadSignature is the error of a delivery none of whose signatures is
// the secret's.
var ErrBadSignature = errors.New("webhook: no valid signature")

// Verify checks a delivery as a receiver does, by the Standard Webhooks
// rules: webhook-id and webhook-timestamp are present, the timestamp is
// within tolerance of now, and one of the space-separated "v1,<base64>"
// signatures in webhook-signature is the HMAC-SHA256, under the secret's
// key, of "<webhook-id>.<webhook-timestamp>.<body>" (compared in constant
// time). It is written from the specification, apart from Signature, so
// that a test receiver using it does not share a bug with the sender
// (checked against the specification's example in the tests).
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := SecretKey(secret)
	if err != nil {
		return err
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook: webhook-timestamp %q is not Unix seconds", ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook: webhook-timestamp %s is %v away from now", ts, d.Round(time.Second))
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		version, b64, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrBadSignature
}
