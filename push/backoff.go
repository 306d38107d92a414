package push

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// Backoff returns the delay before the next attempt of registration (stream,
// id) after a failure, where failures is the number of failed attempts before
// this one (Registration.Attempts at the time of the failure).
//
// The formula (README, "Delivery semantics"):
//
//	window = 1 << min(failures, 8)  seconds
//	half   = window / 2
//	offset = spread(stream, id, failures) mod (half + 1)
//	delay  = max(1, half + offset)  seconds
//
// spread is the first 8 bytes, big-endian, of SHA-256(stream ‖ 0x1f ‖ id ‖
// 0x1f ‖ failures as 4 bytes big-endian). The jitter therefore spreads
// registrations that failed together apart, yet the schedule is the same on
// every run, machine and Go version: a test pins exact instants. The delay
// grows from 1 s to between 128 s and 256 s from the ninth failure on.
func Backoff(stream, id string, failures int) time.Duration {
	if failures < 0 {
		failures = 0
	}
	exp := min(failures, 8)
	window := uint64(1) << exp
	half := window / 2
	offset := spread(stream, id, failures) % (half + 1)
	return time.Duration(max(1, half+offset)) * time.Second
}

func spread(stream, id string, failures int) uint64 {
	h := sha256.New()
	h.Write([]byte(stream))
	h.Write([]byte{0x1f})
	h.Write([]byte(id))
	h.Write([]byte{0x1f})
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], uint32(failures))
	h.Write(a[:])
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return binary.BigEndian.Uint64(sum[:8])
}

// Schedule is a fixed list of delays that replaces the exponential Backoff:
// the n-th failure (0-based) waits Schedule[min(n, len-1)]. The list Standard
// Webhooks services use is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
type Schedule []time.Duration

// Delay returns the delay after failures earlier failures. s must not be
// empty (NewWorker refuses an empty schedule).
func (s Schedule) Delay(failures int) time.Duration {
	return s[min(max(failures, 0), len(s)-1)]
}
