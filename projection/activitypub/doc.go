// Package activitypub is herald's ActivityPub projection, for the
// "activitypub" namespace: it delivers the activities of a journal stream
// to an inbox, signed as the fediverse expects.
//
// A record's payload is one activity, a JSON object with a "type" (Activity
// Streams 2.0 Core §4.1). It gives at most one message, whose id is the
// record id: Content-Type application/activity+json, body the activity
// without bto and bcc (ActivityPub §6: "The server MUST remove the bto
// and/or bcc properties, if they exist, from the ActivityStreams object
// before delivery"), removed from the activity and from the object it
// embeds (a Create copies its Note's addressing). The other members keep
// their order and bytes, and a payload without bto or bcc is sent as
// appended.
//
// # Which inbox gets what
//
// When the config ([Config]) lists the actors the inbox serves, an activity
// is delivered only when addressed (to, cc, bto, bcc, audience; §7.1.1) to
// one of them, to the Public collection (§5.6) or to a followers collection
// the config names, and a Block whose object is one of them never is
// (§6.9); a record without a message moves the cursor on. Without actors,
// every activity is delivered: the caller chose the (shared) inbox.
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
// Mastodon refuses a Date outside about [now-65 min, now+1 h], hence the
// fresh Date of every retry. (request-target) is built from the request
// URL's decoded path, as go-fed/httpsig does: inbox paths with
// percent-escapes would not verify at receivers that sign the raw path.
package activitypub
