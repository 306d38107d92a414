package activitypub

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/gowebpki/jcs"
)

// FEP-8b32 Object Integrity Proofs with the eddsa-jcs-2022 cryptosuite (W3C
// Data Integrity EdDSA Cryptosuites v1.0 §3.3): package doc, "Object
// integrity proofs".

// DataIntegrityContext is the JSON-LD context that defines proof and its
// members; addProof adds it to an activity's @context that lacks it.
const DataIntegrityContext = "https://w3id.org/security/data-integrity/v1"

// addProof returns body (a JSON object) with the context above and a
// "proof" member: a DataIntegrityProof by key, created at created (whole
// seconds, UTC). A body that has a proof already is returned as it is: its
// producer signed it.
func addProof(body []byte, key Key, created time.Time) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	if _, signed := doc["proof"]; signed {
		return body, nil
	}
	if created.IsZero() {
		return nil, errors.New("the record has no AppendedAt, the proof's created")
	}
	ctx, changed, err := withDataIntegrity(doc["@context"])
	if err != nil {
		return nil, err
	}
	if changed {
		if body, err = setMember(body, "@context", ctx); err != nil {
			return nil, err
		}
		doc["@context"] = ctx
	}
	proof := map[string]any{
		"type":               "DataIntegrityProof",
		"cryptosuite":        "eddsa-jcs-2022",
		"verificationMethod": key.ID,
		"proofPurpose":       "assertionMethod",
		"created":            created.UTC().Truncate(time.Second).Format(time.RFC3339),
	}
	config := map[string]any{"@context": ctx}
	for k, v := range proof {
		config[k] = v
	}
	proofHash, err := jcsHash(config)
	if err != nil {
		return nil, err
	}
	canonDoc, err := jcs.Transform(body)
	if err != nil {
		return nil, fmt.Errorf("canonicalize (RFC 8785): %w", err)
	}
	docHash := sha256.Sum256(canonDoc)
	sig, err := key.Signer.Sign(rand.Reader, slices.Concat(proofHash[:], docHash[:]), crypto.Hash(0))
	if err != nil {
		return nil, fmt.Errorf("ed25519: %w", err)
	}
	proof["proofValue"] = "z" + base58btc(sig) // multibase, base58-btc
	raw, err := json.Marshal(proof)
	if err != nil {
		return nil, err
	}
	return setMember(body, "proof", raw)
}

// withDataIntegrity returns an @context value that includes
// DataIntegrityContext, and whether it had to be added.
func withDataIntegrity(ctx json.RawMessage) (json.RawMessage, bool, error) {
	if ctx == nil {
		out, err := json.Marshal([]string{"https://www.w3.org/ns/activitystreams", DataIntegrityContext})
		return out, true, err
	}
	var items []json.RawMessage
	if firstByte(ctx) == '[' {
		if err := json.Unmarshal(ctx, &items); err != nil {
			return nil, false, err
		}
	} else {
		items = []json.RawMessage{ctx}
	}
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil && s == DataIntegrityContext {
			return ctx, false, nil
		}
	}
	di, _ := json.Marshal(DataIntegrityContext)
	out, err := json.Marshal(append(items, di))
	return out, true, err
}

// setMember returns the JSON object obj with member key set to v: replaced
// in place when present, else appended; the other members keep their order
// and bytes (withoutHidden's rewriting, none dropped).
func setMember(obj []byte, key string, v json.RawMessage) ([]byte, error) {
	found := false
	out, err := withoutHidden(obj, func(k string, old json.RawMessage) (json.RawMessage, error) {
		if k == key {
			found = true
			return v, nil
		}
		return old, nil
	})
	if err != nil || found {
		return out, err
	}
	k, _ := json.Marshal(key)
	out = out[:len(out)-1] // the closing brace
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(append(append(out, k...), ':'), v...)
	return append(out, '}'), nil
}

// jcsHash is SHA-256 of v's RFC 8785 canonical form.
func jcsHash(v any) ([32]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return [32]byte{}, err
	}
	canon, err := jcs.Transform(raw)
	if err != nil {
		return [32]byte{}, fmt.Errorf("canonicalize (RFC 8785): %w", err)
	}
	return sha256.Sum256(canon), nil
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58btc encodes b in the Bitcoin base58 alphabet, a leading 1 for each
// leading zero byte (the multibase "z" encoding, draft-msporny-base58).
func base58btc(b []byte) string {
	n := new(big.Int).SetBytes(b)
	var out []byte
	mod, base := new(big.Int), big.NewInt(58)
	for n.Sign() > 0 {
		n.DivMod(n, base, mod)
		out = append(out, base58Alphabet[mod.Int64()])
	}
	for _, c := range b {
		if c != 0 {
			break
		}
		out = append(out, '1')
	}
	slices.Reverse(out)
	return string(out)
}
