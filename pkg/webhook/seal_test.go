package webhook

import (
	"bytes"
	"errors"
	"testing"
)

// A sealed secret opens under its key for its row only, does not hold the
// secret in clear, and opens after rotation when the old key is kept.
func TestKeyringSealsAndOpens(t *testing.T) {
	k1, k2 := NewKey(), NewKey()
	old, err := ParseKeyring(k1, "")
	if err != nil {
		t.Fatal(err)
	}
	secret := NewSecret()
	sealed, id := old.Seal(secret, 7)
	if bytes.Contains(sealed, []byte(secret)) || bytes.Contains(sealed, []byte(secret[len(SecretPrefix):])) {
		t.Fatal("the sealed secret holds it in clear")
	}
	again, _ := old.Seal(secret, 7)
	if bytes.Equal(sealed, again) {
		t.Fatal("two seals of one secret are equal (nonce reused)")
	}
	rotated, err := ParseKeyring(k2, " "+k1+" ,")
	if err != nil {
		t.Fatal(err)
	}
	if rotated.CurrentID() == id || !rotated.Has(id) {
		t.Fatalf("rotated keyring: current %s, has old %v", rotated.CurrentID(), rotated.Has(id))
	}
	newOnly, _ := ParseKeyring(k2, "")
	tests := []struct {
		name    string
		k       *Keyring
		sealed  []byte
		subID   int64
		wantErr error
	}{
		{name: "its key and row", k: old, sealed: sealed, subID: 7},
		{name: "the old key kept after rotation", k: rotated, sealed: sealed, subID: 7},
		{name: "another row", k: old, sealed: sealed, subID: 8, wantErr: errAny},
		{name: "altered", k: old, sealed: append(append([]byte(nil), sealed[:len(sealed)-1]...), sealed[len(sealed)-1]^1), subID: 7, wantErr: errAny},
		{name: "too short", k: old, sealed: sealed[:4], subID: 7, wantErr: errAny},
		{name: "the old key dropped", k: newOnly, sealed: sealed, subID: 7, wantErr: ErrUnknownKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.k.Open(tt.sealed, id, tt.subID)
			switch {
			case tt.wantErr == nil && (err != nil || got != secret):
				t.Fatalf("Open = %q, %v; want the secret", got, err)
			case tt.wantErr == errAny && err == nil, tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("Open = %q, %v; want error %v", got, err, tt.wantErr)
			}
		})
	}
}

var errAny = errors.New("any error")

func TestParseKeyringRefusesBadKeys(t *testing.T) {
	tests := []struct {
		name, current, old string
		wantNil, wantErr   bool
	}{
		{name: "none", wantNil: true},
		{name: "old keys without a current one", old: NewKey(), wantErr: true},
		{name: "not base64", current: "not a key!", wantErr: true},
		{name: "16 bytes", current: "AAAAAAAAAAAAAAAAAAAAAA==", wantErr: true},
		{name: "a bad old key", current: NewKey(), old: "short", wantErr: true},
		{name: "good", current: NewKey(), old: NewKey() + "," + NewKey()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKeyring(tt.current, tt.old)
			if (err != nil) != tt.wantErr || (k == nil) != (tt.wantNil || tt.wantErr) {
				t.Fatalf("ParseKeyring = %v, %v", k, err)
			}
		})
	}
}
