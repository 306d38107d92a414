package activitypub

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldpush/herald/internal/keytest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/store/memory"
	"github.com/heraldpush/herald/transport"
)

// fedifyDir holds the Fedify verifier (verify.mjs) and its locked
// dependencies, which ./test.sh installs (npm ci).
const fedifyDir = "testdata/fedify"

// fedifyEntry is one request the Fedify inboxes saw (verify.mjs).
type fedifyEntry struct {
	Inbox    string `json:"inbox"`  // "rfc9421" or "cavage": the only scheme it takes
	Scheme   string `json:"scheme"` // the scheme the request was signed with
	Verified bool   `json:"verified"`
	KeyID    string `json:"keyId"`
	Proof    *bool  `json:"proof"` // the FEP-8b32 proof verified; nil: none sent
	ID       string `json:"id"`
	Reason   string `json:"reason"`
}

// fedify runs verify.mjs and returns the base URLs of its two inboxes.
func fedify(t *testing.T) (rfc9421, cavage string, log func() []fedifyEntry) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed: run ./test.sh, which installs it and Fedify (%v)", err)
	}
	version, err := exec.Command("node", "--version").Output()
	var major int
	if err == nil {
		_, err = fmt.Sscanf(string(version), "v%d.", &major)
	}
	if err != nil || major < 20 {
		t.Fatalf("node --version = %q, %v: Fedify needs Node 20 or later", version, err)
	}
	if _, err := os.Stat(filepath.Join(fedifyDir, "node_modules", "@fedify", "fedify")); err != nil {
		t.Fatalf("Fedify is not installed: run ./test.sh, or npm ci in %s (%v)", fedifyDir, err)
	}
	cmd := exec.Command("node", "verify.mjs")
	cmd.Dir = fedifyDir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close() // verify.mjs exits when its stdin closes
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("verify.mjs printed no ports: %v", err)
	}
	var ports map[string]int
	if err := json.Unmarshal([]byte(line), &ports); err != nil || ports["rfc9421"] == 0 || ports["cavage"] == 0 {
		t.Fatalf("verify.mjs printed %q: %v", line, err)
	}
	rfc9421 = fmt.Sprintf("http://127.0.0.1:%d", ports["rfc9421"])
	cavage = fmt.Sprintf("http://127.0.0.1:%d", ports["cavage"])
	return rfc9421, cavage, func() []fedifyEntry {
		resp, err := http.Get(rfc9421 + "/log")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var entries []fedifyEntry
		if err := json.NewDecoder(resp.Body).Decode(&entries); err != nil {
			t.Fatal(err)
		}
		return entries
	}
}

// actors serves alice (RSA key #main-key) and eve (Ed25519: the same key
// as #main-key, a CryptographicKey for HTTP signatures, and as #multikey, a
// Multikey in assertionMethod for proofs), as fediverse servers publish
// them. It returns the server's base URL.
func actors(t *testing.T, rsaPub any, edPub ed25519.PublicKey) string {
	t.Helper()
	spki := func(pub any) string {
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	}
	var base string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/users/")
		id := base + "/users/" + name
		doc := map[string]any{
			"@context": []any{"https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1", DataIntegrityContext, "https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"},
			"id":       id, "type": "Person", "preferredUsername": name, "inbox": id + "/inbox",
		}
		switch name {
		case "alice":
			doc["publicKey"] = map[string]any{"id": id + "#main-key", "owner": id, "publicKeyPem": spki(rsaPub)}
		case "eve":
			doc["publicKey"] = map[string]any{"id": id + "#main-key", "owner": id, "publicKeyPem": spki(edPub)}
			doc["assertionMethod"] = []any{map[string]any{"id": id + "#multikey", "type": "Multikey", "controller": id,
				"publicKeyMultibase": "z" + base58btc(append([]byte{0xed, 0x01}, edPub...))}}
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/activity+json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	base = srv.URL
	return base
}

// TestFedifyVerifiesBothSchemesKnockingOncePerHost: herald's deliveries,
// judged by Fedify's verifyRequest. An RSA actor's activities reach an
// inbox that takes only RFC 9421 and one that takes only draft-cavage,
// every one verified at both; the draft-cavage host refuses RFC 9421 once,
// uncharged, and its scheme, kept on its host row, spares it a second knock
// by this worker and by another one over the same store. An Ed25519
// actor's activities carry FEP-8b32 proofs that Fedify's verifyObject
// accepts; at a draft-cavage-only host such an actor is refused, each
// attempt charged (package doc, "Signatures").
func TestFedifyVerifiesBothSchemesKnockingOncePerHost(t *testing.T) {
	ctx := context.Background()
	inbox9421, inboxCavage, seen := fedify(t)
	alicePEM, alicePub := testKey(t)
	edKey, eveKeyPEM := keytest.Ed25519(t)
	edPub, evePEM := edKey.Public().(ed25519.PublicKey), string(eveKeyPEM)
	base := actors(t, alicePub, edPub)
	alice, eve := base+"/users/alice", base+"/users/eve"

	mem := memory.New()
	newWorker := func() *push.Worker {
		tr, err := transport.New(transport.Options{AllowHTTP: true, AllowPrivateNetwork: true, Schemes: mem})
		if err != nil {
			t.Fatal(err)
		}
		w, err := push.NewWorker(mem, mem, tr, New())
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	register := func(w *push.Worker, stream, url string, cfg Config) {
		raw, err := cfg.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Register(ctx, push.Registration{Stream: stream, ID: url, Namespace: Namespace, URL: url, Config: raw}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	post := func(stream, actor string, n int) {
		var entries []journal.Entry
		for range n {
			id := fmt.Sprintf("%s/activities/%d", actor, len(ids)+1)
			ids = append(ids, id)
			payload, _ := json.Marshal(map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": id, "type": "Create", "actor": actor,
				"to": Public, "object": map[string]any{"id": id + "/note", "type": "Note", "attributedTo": actor, "content": "hello"}})
			entries = append(entries, journal.Entry{ID: id, Kind: "Create", Payload: payload})
		}
		if _, err := mem.Append(ctx, stream, entries...); err != nil {
			t.Fatal(err)
		}
	}
	run := func(w *push.Worker) {
		// Fedify checks created and Date against its own clock.
		rep, err := w.RunOnce(ctx, time.Now().UTC().Truncate(time.Second), 100)
		if err != nil || rep.Retries != 0 || rep.Parked != 0 {
			t.Fatalf("RunOnce: %+v, %v: want no retry", rep, err)
		}
	}
	refusals := func(entries []fedifyEntry, inbox string) int {
		n := 0
		for _, e := range entries {
			if e.Inbox == inbox && !e.Verified {
				n++
			}
		}
		return n
	}

	w := newWorker()
	register(w, "actor/alice", inbox9421+"/users/bob/inbox", Config{KeyID: alice + "#main-key", PrivateKey: alicePEM})
	register(w, "actor/alice", inboxCavage+"/users/bob/inbox", Config{KeyID: alice + "#main-key", PrivateKey: alicePEM})
	register(w, "actor/eve", inbox9421+"/users/carol/inbox", Config{KeyID: eve + "#main-key", PrivateKey: evePEM, ProofKeyID: eve + "#multikey"})
	post("actor/alice", alice, 3)
	post("actor/eve", eve, 2)
	run(w)
	post("actor/alice", alice, 2)
	run(newWorker()) // another worker over the same store

	entries := seen()
	for _, id := range ids {
		for _, inbox := range []string{"rfc9421", "cavage"} {
			if strings.HasPrefix(id, eve) && inbox == "cavage" {
				continue
			}
			i := slices.IndexFunc(entries, func(e fedifyEntry) bool { return e.ID == id && e.Inbox == inbox && e.Verified })
			if i < 0 {
				t.Fatalf("%s was not verified at the %s inbox; the inboxes saw %+v", id, inbox, entries)
			}
			e := entries[i]
			if strings.HasPrefix(id, eve) != (e.Proof != nil && *e.Proof) || !strings.HasPrefix(e.KeyID, base) {
				t.Errorf("%s at %s: key %q, proof %v; want eve's activities proven", id, inbox, e.KeyID, e.Proof)
			}
		}
	}
	if n := refusals(entries, "rfc9421"); n != 0 {
		t.Errorf("the RFC 9421 inbox refused %d requests, want none: %+v", n, entries)
	}
	if n := refusals(entries, "cavage"); n != 1 {
		t.Errorf("the draft-cavage inbox refused %d requests, want exactly one knock: %+v", n, entries)
	}
	scheme, _, err := mem.HostScheme(ctx, store.HostOf(inboxCavage+"/"))
	if err != nil || scheme != SchemeCavage {
		t.Errorf("the draft-cavage host's row holds %q, %v; want %q", scheme, err, SchemeCavage)
	}
	if scheme, _, _ := mem.HostScheme(ctx, store.HostOf(inbox9421+"/")); scheme != "" {
		t.Errorf("the RFC 9421 host's row holds %q; want nothing (the first scheme needs no memory)", scheme)
	}

	// An Ed25519-only actor at a draft-cavage-only host: RFC 9421 is all it
	// signs, so each attempt is refused and charged.
	before := len(entries)
	register(w, "actor/eve", inboxCavage+"/users/dave/inbox", Config{KeyID: eve + "#main-key", PrivateKey: evePEM})
	rep, err := w.RunOnce(ctx, time.Now().UTC().Truncate(time.Second), 100)
	if err != nil || rep.Retries+rep.Parked != 1 {
		t.Fatalf("RunOnce: %+v, %v: want the refused delivery retried or parked", rep, err)
	}
	if after := seen(); len(after) != before+1 || after[before].Scheme != "rfc9421" || after[before].Verified {
		t.Errorf("the draft-cavage inbox saw %+v after the Ed25519 actor's attempt; want one refused RFC 9421 request", after[before:])
	}
}
