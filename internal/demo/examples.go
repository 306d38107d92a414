package demo

import (
	"embed"
	"io/fs"
)

// examples is the small input written for herald's demo (not copied from
// any corpus), laid out as testdata/corpus is: activitystreams/*.json (two
// actors' outboxes: a Create with bto and bcc, a direct message to someone
// else, a Block of the inbox's actor, …), shop/<event>/*.json (webhook
// payloads of an imaginary shop) and a2a/*.jsonl (two task lifecycles, one
// completed, one failed).
//
//go:embed examples
var examples embed.FS

// Examples returns the input embedded in herald.
func Examples() (*Input, error) {
	sub, err := fs.Sub(examples, "examples")
	if err != nil {
		return nil, err
	}
	return load(sub, "the examples embedded in herald")
}
