package journal

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors: every store wraps one of them, whatever its database.
var (
	// ErrInvalid: the input was rejected before anything was written.
	ErrInvalid = errors.New("invalid input")
	// ErrConflict: a record id already exists with different content.
	ErrConflict = errors.New("conflict")
	// ErrSealed: the stream holds a final record; nothing may follow it.
	ErrSealed = errors.New("stream is sealed")
	// ErrNotFound: the record, stream or registration does not exist.
	ErrNotFound = errors.New("not found")
)

// InvalidError reports which field of an input was rejected and why. It
// wraps ErrInvalid.
type InvalidError struct {
	Field  string // e.g. "stream", "entries[2].id", "url"
	Reason string // e.g. "is longer than 200 bytes (10000)"
}

func (e *InvalidError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }

func (e *InvalidError) Unwrap() error { return ErrInvalid }

// InBatch returns, for an error about one entry of a batch (Field
// "entries[i].field", as ValidateEntries names it), the entry's 0-based
// index and its bare field; ok is false for any other error.
func (e *InvalidError) InBatch() (i int, field string, ok bool) {
	rest, ok1 := strings.CutPrefix(e.Field, "entries[")
	idx, field, ok2 := strings.Cut(rest, "].")
	i, err := strconv.Atoi(idx)
	if !ok1 || !ok2 || err != nil || i < 0 {
		return 0, "", false
	}
	return i, field, true
}

// maxShown is the most bytes of a caller's value a message shows (Invalid,
// Shown): a stream name (at most 200 bytes) or a URL is shown whole.
const maxShown = 256

// Invalid returns an *InvalidError for field, its reason formatted by
// fmt.Sprintf(format, args...). A string argument (of any string type) longer than 256 bytes is
// cut there and says its length: it is often a producer's or a caller's
// value, and the error goes to people, logs and HTTP answers.
func Invalid(field, format string, args ...any) error {
	shown := make([]any, len(args)) // the caller's slice stays as it was
	for i, a := range args {
		shown[i] = a
		if v := reflect.ValueOf(a); v.Kind() == reflect.String && v.Len() > maxShown {
			s := v.String()
			shown[i] = fmt.Sprintf("%s… (%d bytes)", strings.ToValidUTF8(s[:maxShown], ""), len(s))
		}
	}
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, shown...)}
}

// ConflictError reports an append whose record id exists with other content.
// It wraps ErrConflict.
type ConflictError struct {
	ID     string // the record id
	Stream string // the stream the stored record belongs to
	Seq    uint64 // the stored record's seq; 0 while it waits to be numbered (store/postgres)
	Field  string // the first field that differs: "stream", "kind", "content type", "payload" or "final flag"
}

func (e *ConflictError) Error() string {
	if e.Seq == 0 {
		return fmt.Sprintf("record id %q already exists in %s, waiting to be numbered, with a different %s", e.ID, Shown(e.Stream), e.Field)
	}
	return fmt.Sprintf("record id %q already exists as %s#%d with a different %s", e.ID, Shown(e.Stream), e.Seq, e.Field)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// UnnumberedError reports a record that is committed but has no seq yet: a
// store that numbers records after their commit (store/postgres, whose
// sequencer runs in herald run, in each Append and before each Due) has not
// numbered it, so it cannot be read. It wraps ErrNotFound.
type UnnumberedError struct {
	Record Record // the record as stored, Seq 0
}

func (e *UnnumberedError) Error() string {
	return fmt.Sprintf("record %q of stream %s is committed but waiting to be numbered (no seq yet): is a daemon running?",
		e.Record.ID, Shown(e.Record.Stream))
}

func (e *UnnumberedError) Unwrap() error { return ErrNotFound }

// SealedError reports an append to a stream that holds a final record. It
// wraps ErrSealed.
type SealedError struct {
	Stream   string
	FinalSeq uint64 // seq of the final record; 0 while it is committed but not yet numbered (store/postgres)
}

func (e *SealedError) Error() string {
	if e.FinalSeq == 0 {
		return fmt.Sprintf("stream %q is sealed by a final record not yet numbered", e.Stream)
	}
	return fmt.Sprintf("stream %q is sealed by its final record #%d", e.Stream, e.FinalSeq)
}

func (e *SealedError) Unwrap() error { return ErrSealed }

// Shown is a name (a stream, an id, a path, any value a caller gave) as a
// message shows it: Go-quoted when it is empty or holds a space, a quote, a
// backslash or a character that does not print as itself (a bidirectional
// override must never reach a terminal or a log raw), else as it is; past
// 256 bytes cut there, as Invalid cuts, saying its length.
func Shown(s string) string {
	if head, ok := cut(s); ok {
		return fmt.Sprintf("%s… (%d bytes)", Shown(head), len(s))
	}
	if s == "" || strings.ContainsAny(s, " \"\\") || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// Quoted is s Go-quoted (%q), cut as Shown cuts it: for a message that
// quotes every value it shows.
func Quoted(s string) string {
	if head, ok := cut(s); ok {
		return fmt.Sprintf("%q… (%d bytes)", head, len(s))
	}
	return strconv.Quote(s)
}

// cut is s's first 256 bytes (maxShown), to a character's start, when s is
// longer.
func cut(s string) (head string, ok bool) {
	if len(s) <= maxShown {
		return s, false
	}
	n := maxShown
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}
