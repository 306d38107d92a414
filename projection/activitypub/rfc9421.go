package activitypub

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// RFC 9421 (HTTP Message Signatures) and RFC 9530 (Content-Digest), as
// herald signs deliveries: package doc, "Signatures".

// Algorithm names of RFC 9421 §6.2.2 that herald signs with.
const (
	algRSA     = "rsa-v1_5-sha256" // §3.3.2
	algEd25519 = "ed25519"         // §3.3.6
)

// signatureLabel names herald's signature in Signature-Input and Signature
// (§4.1): one signature a request, any label.
const signatureLabel = "sig1"

// deliveryComponents are what a delivery's RFC 9421 signature covers:
// Mastodon refuses one without @method, @target-uri and, on a POST,
// content-digest (package doc, "What verifiers require").
var deliveryComponents = []string{"@method", "@target-uri", "content-digest"}

// contentDigest is the RFC 9530 §2 Content-Digest field of body:
// sha-256=:<base64>:, a Dictionary with one Byte Sequence.
func contentDigest(body []byte) (string, error) {
	sum := sha256.Sum256(body)
	d := httpsfv.NewDictionary()
	d.Add("sha-256", httpsfv.NewItem(sum[:]))
	return httpsfv.Marshal(d)
}

// signatureParams is the inner list of covered components and the
// parameters (created, keyid, alg, in that order) that Signature-Input
// carries and "@signature-params" signs (RFC 9421 §2.3).
func signatureParams(components []string, created time.Time, keyID, alg string) httpsfv.InnerList {
	items := make([]httpsfv.Item, len(components))
	for i, c := range components {
		items[i] = httpsfv.NewItem(c)
	}
	p := httpsfv.NewParams()
	p.Add("created", created.Unix())
	p.Add("keyid", keyID)
	if alg != "" {
		p.Add("alg", alg)
	}
	return httpsfv.InnerList{Items: items, Params: p}
}

// signatureBase is RFC 9421 §2.5's signature base of req for the covered
// components and parameters in params: one line a component, then
// "@signature-params". Components are derived ones (§2.2: @method,
// @target-uri, @authority, @scheme, @request-target, @path, @query) or
// header fields by lowercase name, whose lines are joined with ", " and
// trimmed (§2.1). A component named twice or a missing field is an error.
func signatureBase(req *http.Request, params httpsfv.InnerList) (string, error) {
	var b strings.Builder
	seen := map[string]bool{}
	for _, it := range params.Items {
		name, ok := it.Value.(string)
		if !ok || name == "" || seen[name] {
			return "", fmt.Errorf("rfc9421: component %v is not a name, or is named twice", it.Value)
		}
		seen[name] = true
		v, err := componentValue(req, name)
		if err != nil {
			return "", err
		}
		id, err := httpsfv.Marshal(httpsfv.NewItem(name))
		if err != nil {
			return "", err
		}
		b.WriteString(id)
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteByte('\n')
	}
	sp, err := httpsfv.Marshal(params)
	if err != nil {
		return "", fmt.Errorf("rfc9421: signature parameters: %w", err)
	}
	b.WriteString(`"@signature-params": `)
	b.WriteString(sp)
	return b.String(), nil
}

// componentValue is one component's value (RFC 9421 §2.1, §2.2).
func componentValue(req *http.Request, name string) (string, error) {
	u := req.URL
	switch name {
	case "@method":
		return req.Method, nil
	case "@target-uri":
		return u.Scheme + "://" + authority(req) + u.RequestURI(), nil
	case "@authority":
		return authority(req), nil
	case "@scheme":
		return strings.ToLower(u.Scheme), nil
	case "@request-target", "@path":
		path := u.EscapedPath()
		if path == "" {
			path = "/"
		}
		if name == "@request-target" && u.RawQuery != "" {
			path += "?" + u.RawQuery
		}
		return path, nil
	case "@query":
		return "?" + u.RawQuery, nil
	}
	if strings.HasPrefix(name, "@") {
		return "", fmt.Errorf("rfc9421: derived component %q is not supported", name)
	}
	if name != strings.ToLower(name) {
		return "", fmt.Errorf("rfc9421: field %q is not lowercase", name)
	}
	lines, ok := req.Header[http.CanonicalHeaderKey(name)]
	if !ok {
		return "", fmt.Errorf("rfc9421: the request has no %s field to sign", name)
	}
	trimmed := make([]string, len(lines))
	for i, l := range lines {
		trimmed[i] = strings.Trim(l, " \t")
	}
	return strings.Join(trimmed, ", "), nil
}

// authority is the request's host, lowercased, without the scheme's
// default port (RFC 9421 §2.2.3; RFC 9110 §4.2.3), as the receiver
// rebuilds it from Host.
func authority(req *http.Request) string {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	host = strings.ToLower(host)
	switch strings.ToLower(req.URL.Scheme) {
	case "https":
		host = strings.TrimSuffix(host, ":443")
	case "http":
		host = strings.TrimSuffix(host, ":80")
	}
	return host
}

// algorithmOf is the RFC 9421 alg of key: rsa-v1_5-sha256 or ed25519.
func algorithmOf(key crypto.Signer) (string, error) {
	switch pub := key.Public().(type) {
	case *rsa.PublicKey:
		return algRSA, nil
	case ed25519.PublicKey:
		return algEd25519, nil
	default:
		return "", fmt.Errorf("a %T key signs neither %s nor %s", pub, algRSA, algEd25519)
	}
}

// signBytes signs message with key as alg: PKCS #1 v1.5 over its SHA-256
// (RFC 9421 §3.3.2), or pure Ed25519 over the message (§3.3.6).
func signBytes(key crypto.Signer, alg string, message []byte) ([]byte, error) {
	switch alg {
	case algRSA:
		sum := sha256.Sum256(message)
		return key.Sign(rand.Reader, sum[:], crypto.SHA256)
	case algEd25519:
		return key.Sign(rand.Reader, message, crypto.Hash(0))
	}
	return nil, fmt.Errorf("algorithm %q is not supported", alg)
}

// signRFC9421 sets Content-Digest, Signature-Input and Signature on req
// (whose body is body) for the covered components, created at `at`.
func signRFC9421(req *http.Request, body []byte, at time.Time, key crypto.Signer, keyID string, components []string) error {
	alg, err := algorithmOf(key)
	if err != nil {
		return err
	}
	digest, err := contentDigest(body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Digest", digest)
	params := signatureParams(components, at, keyID, alg)
	base, err := signatureBase(req, params)
	if err != nil {
		return err
	}
	sig, err := signBytes(key, alg, []byte(base))
	if err != nil {
		return fmt.Errorf("%s: %w", alg, err)
	}
	input := httpsfv.NewDictionary()
	input.Add(signatureLabel, params)
	in, err := httpsfv.Marshal(input)
	if err != nil {
		return err
	}
	req.Header.Set("Signature-Input", in)
	// A Byte Sequence is standard base64 with padding (RFC 9651 §3.3.5);
	// written here rather than through a Dictionary to keep one copy.
	req.Header.Set("Signature", signatureLabel+"=:"+base64.StdEncoding.EncodeToString(sig)+":")
	return nil
}

var errZeroAt = errors.New("at is the zero time")
