package demo

import (
	"crypto"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-fed/httpsig"

	"github.com/heraldpush/herald/projection/activitypub"
)

// Mastodon's window for a signature's Date: at most 1 h ahead of the
// receiver's clock, at most 1 h 5 min behind it.
const (
	dateAhead  = time.Hour
	dateBehind = 65 * time.Minute
)

// signedHeaders is the headers parameter Mastodon requires of a delivery's
// signature (draft-cavage-http-signatures-12 §2.1.3).
const signedHeaders = `headers="(request-target) host date digest"`

// inbox is an ActivityPub inbox that checks every delivery as a careful
// fediverse server does:
//
//   - the HTTP signature, with go-fed/httpsig's verifier and the public key
//     its keyId names (keys: what the inbox would fetch from the actor);
//   - that the signature covers (request-target), host, date and digest;
//   - the Digest, recomputed from the body (RFC 3230);
//   - the Date, within [now-65 min, now+1 h] of its own clock;
//   - that the keyId belongs to the activity's actor (<actor>#main-key);
//   - that no bto or bcc arrived (ActivityPub §6).
//
// Then it checks the activity against the journal (ledger) and answers 202,
// or 401 with the reason.
type inbox struct {
	keys   map[string]crypto.PublicKey // keyId → key
	now    func() time.Time
	ledger *ledger
}

func (in *inbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	var id string
	if err == nil {
		id, err = in.verify(r, body)
	}
	if err != nil {
		refuse(w, in.ledger.fail(r.URL.Path, err))
		return
	}
	if _, err := in.ledger.check(r.URL.Path, id, body, nil); err != nil {
		refuse(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// verify returns the id of the activity r delivers, or why it must be
// refused.
func (in *inbox) verify(r *http.Request, body []byte) (string, error) {
	if ct := r.Header.Get("Content-Type"); ct != activitypub.ContentType {
		return "", fmt.Errorf("Content-Type %q, want %q", ct, activitypub.ContentType)
	}
	v, err := httpsig.NewVerifier(r)
	if err != nil {
		return "", fmt.Errorf("signature: %w", err)
	}
	key, ok := in.keys[v.KeyId()]
	if !ok {
		return "", fmt.Errorf("signature: unknown keyId %q", v.KeyId())
	}
	if err := v.Verify(key, httpsig.RSA_SHA256); err != nil {
		return "", fmt.Errorf("signature does not verify: %w", err)
	}
	if sig := r.Header.Get("Signature"); !strings.Contains(sig, signedHeaders) {
		return "", fmt.Errorf("the signature must cover %s", signedHeaders)
	}
	sum := sha256.Sum256(body)
	want := "SHA-256=" + base64.StdEncoding.EncodeToString(sum[:])
	if got := r.Header.Get("Digest"); subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return "", fmt.Errorf("Digest %q is not the body's (%s)", got, want)
	}
	date, err := http.ParseTime(r.Header.Get("Date"))
	if err != nil {
		return "", fmt.Errorf("Date %q: %w", r.Header.Get("Date"), err)
	}
	if now := in.now(); date.Before(now.Add(-dateBehind)) || date.After(now.Add(dateAhead)) {
		return "", fmt.Errorf("Date %s is outside [now-65m, now+1h] of the inbox's clock", r.Header.Get("Date"))
	}
	var act struct {
		ID     string          `json:"id"`
		Actor  string          `json:"actor"`
		Bto    json.RawMessage `json:"bto"`
		Bcc    json.RawMessage `json:"bcc"`
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(body, &act); err != nil {
		return "", errors.New("the body is not an activity (a JSON object)")
	}
	if v.KeyId() != act.Actor+"#main-key" {
		return "", fmt.Errorf("keyId %q does not belong to the activity's actor %q", v.KeyId(), act.Actor)
	}
	if act.Bto != nil || act.Bcc != nil {
		return "", errors.New("the activity still has bto or bcc")
	}
	var obj struct{ Bto, Bcc json.RawMessage }
	if json.Unmarshal(act.Object, &obj) == nil && (obj.Bto != nil || obj.Bcc != nil) {
		return "", errors.New("the activity's object still has bto or bcc")
	}
	return act.ID, nil
}
