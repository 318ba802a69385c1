package webhook

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A signing secret must be in clear to sign (HMAC), so it cannot be
// hashed at rest; it is sealed instead: AES-256-GCM under a key the
// database does not hold (DOCREPO_WEBHOOK_KEY), bound to its
// subscription's id (a sealed secret copied onto another row does not
// open). Rotation: the new key becomes DOCREPO_WEBHOOK_KEY, the previous
// ones go to DOCREPO_WEBHOOK_OLD_KEYS, and every secret sealed under an
// old key is sealed again under the new one (the document service does so
// at start); once none is left the old keys can go.

// KeyBytes is the length of a sealing key: AES-256.
const KeyBytes = 32

// ErrUnknownKey is the error of opening a secret sealed under a key the
// keyring does not hold.
var ErrUnknownKey = errors.New("webhook: the secret was sealed under a key that is neither DOCREPO_WEBHOOK_KEY nor in DOCREPO_WEBHOOK_OLD_KEYS")

// Keyring seals and opens signing secrets: the current key seals, every
// key opens what it sealed.
type Keyring struct {
	current string
	keys    map[string]cipher.AEAD
}

// NewKey returns a new sealing key as the settings take it: the standard
// base64 of 32 random bytes.
func NewKey() string {
	b := make([]byte, KeyBytes)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// ParseKeyring reads the current key and the old ones (comma-separated),
// each the standard base64 of 32 bytes. No current key is a nil keyring
// (webhooks unavailable) unless old keys are given, which is an error.
func ParseKeyring(current, old string) (*Keyring, error) {
	current = strings.TrimSpace(current)
	if current == "" {
		if strings.TrimSpace(old) != "" {
			return nil, errors.New("DOCREPO_WEBHOOK_OLD_KEYS is set without DOCREPO_WEBHOOK_KEY")
		}
		return nil, nil
	}
	k := &Keyring{keys: map[string]cipher.AEAD{}}
	add := func(setting, s string) (string, error) {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) != KeyBytes {
			return "", fmt.Errorf("%s: a key is the standard base64 of %d random bytes (openssl rand -base64 32)", setting, KeyBytes)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return "", err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return "", err
		}
		id := KeyID(raw)
		k.keys[id] = aead
		return id, nil
	}
	var err error
	if k.current, err = add("DOCREPO_WEBHOOK_KEY", current); err != nil {
		return nil, err
	}
	for s := range strings.SplitSeq(old, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if _, err := add("DOCREPO_WEBHOOK_OLD_KEYS", s); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// KeyID names a key without revealing it: the first 8 bytes of the
// SHA-256 of a label and the key, in hex. It is stored next to each
// sealed secret, so that rotation knows what to seal again.
func KeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("docrepo webhook secret key\x00"), key...))
	return hex.EncodeToString(sum[:8])
}

// CurrentID is the id of the key that seals.
func (k *Keyring) CurrentID() string { return k.current }

// Has reports whether the keyring can open what key id sealed.
func (k *Keyring) Has(id string) bool {
	_, ok := k.keys[id]
	return ok
}

func aad(subscriptionID int64) []byte {
	return []byte("docrepo webhook_subscriptions " + strconv.FormatInt(subscriptionID, 10))
}

// Seal seals secret for subscription id under the current key: the
// nonce followed by the ciphertext, and the key's id.
func (k *Keyring) Seal(secret string, subscriptionID int64) (sealed []byte, keyID string) {
	aead := k.keys[k.current]
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return aead.Seal(nonce, nonce, []byte(secret), aad(subscriptionID)), k.current
}

// Open opens what Seal returned for subscription id under key keyID.
func (k *Keyring) Open(sealed []byte, keyID string, subscriptionID int64) (string, error) {
	aead, ok := k.keys[keyID]
	if !ok {
		return "", fmt.Errorf("%w (key id %s)", ErrUnknownKey, keyID)
	}
	if len(sealed) < aead.NonceSize() {
		return "", errors.New("webhook: a sealed secret is too short")
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], aad(subscriptionID))
	if err != nil {
		return "", fmt.Errorf("webhook: the secret of subscription %d does not open (altered, or sealed for another row): %w", subscriptionID, err)
	}
	return string(plain), nil
}
