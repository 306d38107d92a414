// Package activitypub is herald's ActivityPub projection, for the
// "activitypub" namespace: it delivers the activities of a journal stream
// to an inbox, signed as the fediverse expects.
//
// A record's payload is one activity, a JSON object with a "type" (Activity
// Streams 2.0 Core §4.1). It gives at most one message, whose id is the
// record id: Content-Type application/activity+json, body the activity
// without bto and bcc (ActivityPub §6), removed from the activity and from
// the object it embeds. The other members keep their order and bytes; a
// payload without bto or bcc is sent as appended.
//
// # Which inbox gets what
//
// When the config ([Config]) lists the actors the inbox serves, an activity
// is delivered only when addressed (to, cc, bto, bcc, audience; §7.1.1) to
// one of them, to the Public collection (§5.6) or to a followers collection
// the config names, and a Block whose object is one of them never is
// (§6.9). Without actors, every activity is delivered.
//
// # Signatures
//
// Every attempt is signed at send time with the sweep's instant `at`, in
// one of two schemes (a registration's scheme: Config.SignatureScheme):
//
// RFC 9421 HTTP Message Signatures, with an RFC 9530 Content-Digest; the
// signature base is herald's own code (rfc9421.go), checked byte for byte
// against RFC 9421 Appendix B.2.6 (testdata/rfc9421), its structured fields
// written with github.com/dunglas/httpsfv:
//
//	Content-Digest:  sha-256=:<base64(SHA-256(body))>:
//	Signature-Input: sig1=("@method" "@target-uri" "content-digest");created=<at, unix s>;keyid="<key_id>";alg="<alg>"
//	Signature:       sig1=:<base64(signature)>:
//	Date:            <at, IMF-fixdate>   (sent, not signed)
//
// alg is rsa-v1_5-sha256 (RFC 9421 §3.3.2) for an RSA key and ed25519
// (§3.3.6) for an Ed25519 one. @target-uri and @authority drop the scheme's
// default port, as a receiver rebuilds them from Host.
//
// draft-cavage-http-signatures-12 with an RFC 3230 Digest, through
// github.com/go-fed/httpsig, RSA only:
//
//	Date:      <at, IMF-fixdate (RFC 9110 §5.6.7), UTC>
//	Digest:    SHA-256=<base64(SHA-256(body))>          (RFC 3230 §4.3.2)
//	Signature: keyId="<key_id>",algorithm="rsa-sha256",
//	           headers="(request-target) host date digest",signature="…"
//
// (request-target) is built from the URL's decoded path, as go-fed/httpsig
// does: an inbox path with percent-escapes may not verify in this scheme.
//
// A registration that pins no scheme, with an RSA key, knocks twice, as
// Fedify does: RFC 9421 first, draft-cavage at once when the host refuses
// it (README, "ActivityPub signatures"; transport.SchemeMemory keeps the
// host's scheme). A pinned scheme is the only one sent.
//
// An Ed25519 key signs RFC 9421 only: the fediverse verifies draft-cavage
// with RSA keys (Mastodon's accounts have RSA keys, and its draft-cavage
// verifier takes rsa-sha256 and hs2019 over them), so pinning "cavage" with
// an Ed25519 key is a config error.
//
// # What verifiers require
//
// Mastodon (app/lib/signed_request.rb, read at commit 2551cc8; RFC 9421
// verified with the linzer gem) refuses an RFC 9421 signature without the created and keyid
// parameters, without @method and @target-uri, or, on a POST, without
// content-digest covered and a sha-256 member in Content-Digest; it accepts
// one whose created is at most 1 hour ahead (CLOCK_SKEW_MARGIN) and whose
// expiry, created plus 5 minutes unless an expires parameter says otherwise
// (at most 12 hours: EXPIRATION_WINDOW_LIMIT), is at most 1 hour past: a
// signature about 65 minutes old is refused. In draft-cavage it requires
// Date (or (created)) and, on a POST, digest signed, (request-target) or
// digest, and Date in the same window.
//
// Fedify (verifyRequest of its sig module, as of 2.3.6, the version
// herald's tests run) requires keyid and created, checks created within 1 hour either
// way (timeWindow), checks Content-Digest when covered, and infers alg from
// the key when absent; in draft-cavage it requires Date within 1 hour and,
// on a POST, Digest.
//
// Hence: created and Date are the attempt's `at`, fresh on every retry,
// and alg is always sent. fedify_test.go verifies herald's requests with
// Fedify's verifyRequest in both schemes.
//
// # Object integrity proofs
//
// With proof_key_id set (opt-in, per registration), every activity sent
// carries a FEP-8b32 Object Integrity Proof: a DataIntegrityProof with the
// eddsa-jcs-2022 cryptosuite (W3C Data Integrity EdDSA Cryptosuites v1.0
// §3.3), proofPurpose assertionMethod, verificationMethod the actor's
// Ed25519 Multikey id (FEP-521a), created the record's AppendedAt (whole
// seconds), proofValue the multibase base58-btc Ed25519 signature of
// SHA-256(JCS(proof options with the activity's @context)) followed by
// SHA-256(JCS(activity)), JCS being RFC 8785 (github.com/gowebpki/jcs).
// The data integrity context is appended to the activity's @context when it
// lacks it, so that the proof's terms are defined; an activity that carries
// a proof already is sent as it is. Ed25519 signing is deterministic and
// created is the record's: every retry sends the same bytes, as
// push.Projection requires. Fedify's verifyObject accepts them
// (fedify_test.go), which also checks that the Multikey's controller is the
// activity's actor.
//
// # Keys held once
//
// A config without private_key names by key_id a key held once in the
// store (store.ActorKeyStore), which the projection is given with WithKeys;
// README, "ActivityPub keys held once", has its caching and rotation.
package activitypub
