package store

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// Backoff returns the delay before the next attempt of registration (stream,
// id), failures being the failed attempts before this one (README, "Delivery
// semantics"):
//
//	window = 1 << min(failures, 8)  seconds
//	half   = window / 2
//	offset = spread(stream, id, failures) mod (half + 1)
//	delay  = max(1, half + offset)  seconds
//
// spread is the first 8 bytes, big-endian, of SHA-256(stream ‖ 0x1f ‖ id ‖
// 0x1f ‖ failures as 4 bytes big-endian): registrations that failed together
// spread apart, on the same schedule on every run, machine and Go version.
func Backoff(stream, id string, failures int) time.Duration {
	failures = max(failures, 0)
	half := (uint64(1) << min(failures, 8)) / 2
	offset := spread(stream, id, failures) % (half + 1)
	return time.Duration(max(1, half+offset)) * time.Second
}

func spread(stream, id string, failures int) uint64 {
	b := append([]byte(stream), 0x1f)
	b = append(append(b, id...), 0x1f)
	sum := sha256.Sum256(binary.BigEndian.AppendUint32(b, uint32(failures)))
	return binary.BigEndian.Uint64(sum[:8])
}
