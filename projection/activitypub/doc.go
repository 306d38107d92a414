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
// Every attempt is signed at send time with the sweep's instant, as
// draft-cavage-http-signatures-12 describes and Mastodon verifies, using
// github.com/go-fed/httpsig:
//
//	Date:      <at, IMF-fixdate (RFC 9110 §5.6.7), UTC>
//	Digest:    SHA-256=<base64(SHA-256(body))>          (RFC 3230 §4.3.2)
//	Signature: keyId="<config key_id>",algorithm="rsa-sha256",
//	           headers="(request-target) host date digest",signature="…"
//
// Mastodon refuses a Date more than about an hour off, hence a fresh Date on
// every retry. (request-target) is built from the URL's decoded path, as
// go-fed/httpsig does: an inbox path with percent-escapes may not verify.
//
// # Keys held once
//
// A config without private_key names by key_id a key held once in the
// store (store.ActorKeyStore; `herald keys`), which the projection is given
// with WithKeys. Each message reads the key's version, one small row with
// no private key, and parses the key only when that version is not cached
// (per key id, at most 512 ids): a rotation takes effect at the next message
// built, which is the next attempt, and an old key is never used after it.
// ValidateConfig refuses a key_id the store does not hold; a key removed
// under a registration fails its messages (transient, the evidence naming
// the key id). A config with its own private_key signs with it, as before.
package activitypub
