// Package webhook is herald's Standard Webhooks projection: it delivers the
// records of a journal stream to an HTTP endpoint as Standard Webhooks
// (https://www.standardwebhooks.com, specification 1.0.0), signed with the
// standard library's HMAC-SHA256 as the specification defines (its tests
// check every signature with the reference library,
// github.com/standard-webhooks/standard-webhooks/libraries/go). It serves
// the "webhook" namespace.
//
// # Messages
//
// Each record gives one message: a POST whose body is the record's payload,
// byte for byte, with
//
//	Content-Type:      the record's content type
//	webhook-id:        the record id, the same on every retry (receivers
//	                   dedupe on it)
//	webhook-timestamp: the attempt's instant (the sweep's at), unix seconds
//	webhook-signature: v1,<base64(HMAC-SHA256(key, id.timestamp.body))>
//	                   for each secret of the config, space-separated
//
// as the specification's "Signature scheme" and "Webhook headers" sections
// define. The timestamp and signatures are computed by the message's
// signer on every attempt, so a retry is never refused as a replay: the
// reference verifiers reject a timestamp more than 5 minutes from their
// clock.
//
// The specification asks that message ids not be user-controlled, or at
// least contain no '.', which delimits the signed content. herald signs the
// record id as given: applications whose record ids users can choose should
// keep '.' out of them.
//
// # Secrets
//
// The registration's config lists 1 to MaxSecrets secrets, each "whsec_"
// and the base64 of 24 to 64 bytes (see [Config]). Signing with several is
// how a receiver rotates its secret without downtime: it accepts any one
// valid signature.
package webhook
