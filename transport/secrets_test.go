package transport_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/transport"
)

// Secrets sent with a message (an Authorization value, a signer's key, the
// signature it makes, a token in the URL's query or path) never come back
// in an Outcome's Reason, Body or Location, in logs or in %v of the
// options, even when the receiver echoes the whole request.
func TestSecretsNeverLeak(t *testing.T) {
	const (
		bearer     = "tok-Zx81kq0PwLmN5rT2"
		queryToken = "qry-Aa39vBn7Xc1Ue8Lp"
		pathToken  = "pth-Hs62Jd9Kf0Lg3Mz7Qw"
		key        = "key-Gy47Ut2Rn8Vb1Ck5"
	)
	signer := &hmacSigner{key: []byte(key)}
	var signature string
	echo := func(w http.ResponseWriter, r *http.Request) {
		signature = r.Header.Get("Signature")
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s %s\n", r.Method, r.RequestURI)
		r.Header.Write(&b)
		switch r.URL.Query().Get("answer") {
		case "redirect":
			w.Header().Set("Location", "https://elsewhere.example"+r.RequestURI)
			w.WriteHeader(http.StatusMovedPermanently)
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
		w.Write(b.Bytes())
	}
	srv := newCounter(t, echo)

	var logs bytes.Buffer
	opts := loopbackOptions()
	opts.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tr := newTransport(t, opts)
	msg := message(`{"secret":"not in evidence"}`)
	msg.Header = http.Header{"Authorization": {"Bearer " + bearer}}
	msg.Signer = signer

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	var outcomes []push.Outcome
	for _, url := range []string{
		srv.URL + "/hooks/" + pathToken + "?token=" + queryToken,
		srv.URL + "/hooks/" + pathToken + "?answer=redirect&token=" + queryToken,
		"http://" + closed + "/hooks/" + pathToken + "?token=" + queryToken,
	} {
		outcomes = append(outcomes, deliver(t, tr, url, msg))
	}
	failing := msg
	failing.Signer = &hmacSigner{key: []byte(key), err: fmt.Errorf("cannot sign for %q", "Bearer "+bearer)}
	outcomes = append(outcomes, deliver(t, tr, srv.URL+"/hooks/x?token="+queryToken, failing))

	if outcomes[0].Status != 401 || !bytes.Contains(outcomes[0].Body, []byte("Authorization: [redacted]")) {
		t.Fatalf("the echo did not come back as evidence: %s body=%q", describe(outcomes[0]), outcomes[0].Body)
	}
	if outcomes[1].Status != 301 || !strings.HasPrefix(outcomes[1].Location, "https://elsewhere.example/hooks/") {
		t.Fatalf("the redirect did not come back: %s", describe(outcomes[1]))
	}
	if signature == "" {
		t.Fatal("the signer's header never reached the server")
	}

	secrets := []string{bearer, queryToken, pathToken, key, signature}
	places := map[string]string{"logs": logs.String()}
	for i, o := range outcomes {
		places[fmt.Sprintf("outcome %d", i)] = fmt.Sprintf("%s|%s|%s|%v|%+v|%#v", o.Reason, o.Body, o.Location, o, o, o)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		places["Options "+verb] = fmt.Sprintf(verb, opts)
		places["HTTP "+verb] = fmt.Sprintf(verb, tr)
	}
	for where, text := range places {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contains the secret %q:\n%s", where, s, text)
			}
		}
	}
	if !strings.Contains(logs.String(), `"host":"127.0.0.1:`) {
		t.Errorf("logs do not name the host: %s", logs.String())
	}
	if strings.Contains(logs.String(), "not in evidence") {
		t.Errorf("logs contain the message body: %s", logs.String())
	}
}

// The redaction covers a secret that straddles the cut of the evidence body
// (512 bytes) or of the Location (2048 bytes).
func TestSecretAcrossTheEvidenceCut(t *testing.T) {
	const token = "tok-Qm3Wn8Er5Ty1Ui6Op4"
	srv := newCounter(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			w.Header().Set("Location", "https://x.example/"+strings.Repeat("a", transport.MaxLocationBytes-23)+r.Header.Get("X-Token"))
			w.WriteHeader(http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, strings.Repeat(".", store.MaxEvidenceBody-5)+r.Header.Get("X-Token")+" trailing")
	})
	msg := message("{}")
	msg.Header = http.Header{"X-Token": {token}}
	out := deliver(t, newTransport(t, loopbackOptions()), srv.URL+"/hook", msg)
	if len(out.Body) != store.MaxEvidenceBody || bytes.Contains(out.Body, []byte(token[:5])) {
		t.Fatalf("body %d bytes ends %q: the token's head survived the cut", len(out.Body), out.Body[len(out.Body)-16:])
	}
	out = deliver(t, newTransport(t, loopbackOptions()), srv.URL+"/redirect", msg)
	if out.Status != http.StatusFound || len(out.Location) != transport.MaxLocationBytes || strings.Contains(out.Location, token[:5]) {
		t.Fatalf("Location %d bytes ends %q: the token's head survived the cut", len(out.Location), out.Location[len(out.Location)-16:])
	}
}
