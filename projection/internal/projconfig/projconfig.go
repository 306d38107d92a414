// Package projconfig is what every projection shares: registrations'
// configs, JSON objects that hold secrets, decoded and checked (errors name
// keys and never quote values) and parsed once, not for every record.
package projconfig

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldpush/herald/internal/strictjson"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/transport"
)

// Decode decodes raw, a registration's config, into v (a pointer to a
// struct with json tags). Empty raw decodes as {}. Unknown keys, data after
// the object, anything but a JSON object and what encoding/json would
// replace or merge (strictjson: a key twice or in two cases, a lone
// surrogate, bytes that are not UTF-8) are refused. Errors wrap
// journal.ErrInvalid and name the key ("config.secrets"); unlike
// encoding/json's, they never quote the input.
func Decode(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	var typeErr *json.UnmarshalTypeError
	var timeErr *time.ParseError
	switch err := strictjson.Decode(raw, v); {
	case err == nil:
		return nil
	case errors.Is(err, strictjson.ErrMore):
		return journal.Invalid("config", "has data after the JSON object")
	case errors.As(err, &typeErr) && typeErr.Field != "":
		// Value is the JSON kind that was found ("number"), never the value.
		return journal.Invalid("config."+typeErr.Field, "must be a JSON %s, not %s", kind(typeErr.Type), typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := shortKey(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return journal.Invalid("config", "has an unknown key %s (known: %s)", name, strings.Join(keys(v), ", "))
	case errors.As(err, &timeErr):
		// time.Time's error quotes the value and names no key: name the
		// keys that hold a time.
		return journal.Invalid(strings.Join(timeKeys(reflect.TypeOf(v), "config"), " or "), "must be an RFC 3339 time (2026-12-31T23:59:59Z)")
	default:
		if err := refused(err); err != nil {
			return err
		}
		return journal.Invalid("config", "is not a JSON object")
	}
}

// refused is Decode's error for what strictjson refuses, else nil.
func refused(err error) error {
	if e, ok := errors.AsType[strictjson.RepeatedKey](err); ok && e.First == e.Key {
		return journal.Invalid(field(e.Path, e.Key), "is given twice: give it once")
	} else if ok {
		return journal.Invalid(field(e.Path, e.First), "is given again as %s, the same key whatever the case: give it once", quoteKey(e.Key))
	}
	var what string
	if e, ok := errors.AsType[strictjson.LoneSurrogate](err); ok {
		if what = "escapes"; e.Key {
			what = "has a key escaping"
		}
		return journal.Invalid(field(e.Path), "%s half a UTF-16 surrogate pair alone, which JSON decoders read as U+FFFD: escape both halves, or write the character as UTF-8", what)
	}
	if e, ok := errors.AsType[strictjson.NotUTF8](err); ok {
		if what = "is"; e.Key {
			what = "has a key that is"
		}
		return journal.Invalid(field(e.Path), "%s not valid UTF-8 (byte %d of the config)", what, e.Offset+1)
	}
	return nil
}

// field names in errors the key at path, then key ("config.retiring[0].secret");
// a key that is not a plain name is quoted and cut (config.headers["a b"]).
func field(path strictjson.Path, key ...string) string {
	for _, k := range key {
		path = append(slices.Clip(path), strictjson.Step{Key: k, Index: -1})
	}
	var b strings.Builder
	b.WriteString("config")
	for _, s := range path {
		switch {
		case s.Index >= 0:
			fmt.Fprintf(&b, "[%d]", s.Index)
		case s.Key != "" && len(s.Key) <= maxKey && strings.TrimFunc(s.Key, plain) == "":
			b.WriteString("." + s.Key)
		default:
			b.WriteString("[" + quoteKey(s.Key) + "]")
		}
	}
	return b.String()
}

// plain reports whether r may stand unquoted in a key that field shows.
func plain(r rune) bool {
	return r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

// timeKeys lists the JSON paths under prefix of the time.Time fields of
// type t ("config.retiring[].until").
func timeKeys(t reflect.Type, prefix string) []string {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		if t.Kind() != reflect.Pointer {
			prefix += "[]"
		}
		return timeKeys(t.Elem(), prefix)
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() {
			return []string{prefix}
		}
	default:
		return nil
	}
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous:
			out = append(out, timeKeys(f.Type, prefix)...)
		case name != "-" && f.IsExported():
			out = append(out, timeKeys(f.Type, prefix+"."+cmp.Or(name, f.Name))...)
		}
	}
	return out
}

// Parse decodes raw into a C (Decode) and checks it with validate. On an
// error it returns the zero C.
func Parse[C any](raw []byte, validate func(C) error) (c C, err error) {
	if err = Decode(raw, &c); err == nil {
		err = validate(c)
	}
	if err != nil {
		return *new(C), err
	}
	return c, nil
}

// Encode checks c with validate and returns its JSON, the stored form (with
// its secrets).
func Encode[C any](c C, validate func(C) error) (push.Config, error) {
	if err := validate(c); err != nil {
		return nil, err
	}
	return json.Marshal(c)
}

// Redacted stands for a secret where a config is printed: `""` when it is
// empty, else [redacted].
func Redacted(secret string) string {
	if secret == "" {
		return `""`
	}
	return "[redacted]"
}

// MaxSecretBytes bounds a secret that goes in a header line: receivers
// commonly refuse lines above 8 KiB.
const MaxSecretBytes = 4096

// HeaderSecret checks s, the value of config key field, for a header line:
// at most MaxSecretBytes of visible ASCII, with inner spaces when spaces is
// set (else one word). Its errors never quote s.
func HeaderSecret(field, s string, spaces bool) error {
	if len(s) > MaxSecretBytes {
		return journal.Invalid(field, "is longer than %d bytes (%d)", MaxSecretBytes, len(s))
	}
	hint := ""
	if !spaces {
		hint = ": a bearer token is one word of visible ASCII"
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < ' ' || r >= 0x7f || r == ' ' && !spaces }); i >= 0 {
		return journal.Invalid(field, "has a character that is not visible ASCII at byte %d%s", i, hint)
	}
	if strings.TrimSpace(s) != s {
		return journal.Invalid(field, "starts or ends with a space, which receivers strip")
	}
	return nil
}

// maxKey is the most runes of an unknown key, the caller's input, that an
// error repeats.
const maxKey = 64

// shortKey re-quotes encoding/json's quoted key (quoteKey), or gives
// "(unreadable)".
func shortKey(quoted string) string {
	key, err := strconv.Unquote(quoted)
	if err != nil {
		return "(unreadable)"
	}
	return quoteKey(key)
}

// quoteKey quotes key, the caller's input, cut to maxKey runes (with "..."
// after the quote when cut).
func quoteKey(key string) string {
	if r := []rune(key); len(r) > maxKey {
		return strconv.Quote(string(r[:maxKey])) + "..."
	}
	return strconv.Quote(key)
}

// kind names a Go type as JSON calls it.
func kind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array of " + kind(t.Elem()) + "s"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return kind(t.Elem())
	default:
		return "number"
	}
}

// keys lists the JSON keys of the struct v points to.
func keys(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for f := range t.Fields() {
		if f.Anonymous && f.Type.Kind() == reflect.Struct { // transport.Endpoint's keys sit beside the projection's
			out = append(out, keys(reflect.New(f.Type).Interface())...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && f.IsExported() {
			out = append(out, name)
		}
	}
	return out
}

// Projection is the shared part of a projection whose parsed configs are
// Ts, embedded through an unexported alias for Namespace, Terminal and
// ValidateConfig. It is safe for concurrent use; T must be safe to read
// concurrently.
type Projection[T any] struct {
	namespace string
	parse     func(push.Config) (T, error)
	parsed    *Cache[T]
}

// Every projection embedding a Projection is a push.ConfigValidator.
var _ push.ConfigValidator = (*Projection[struct{}])(nil)

// New returns the shared part of namespace's projection. check validates a
// config decoded by Decode and returns its parsed form; at most size (at
// least 1) are kept, by the config's bytes, the oldest going first.
func New[C, T any](namespace string, size int, check func(C) (T, error)) *Projection[T] {
	return &Projection[T]{namespace: namespace, parsed: NewCache[T](size),
		parse: func(raw push.Config) (T, error) {
			var c C
			if err := Decode(raw, &c); err != nil {
				return *new(T), err
			}
			return check(c)
		}}
}

// Valid is New's check for a config C that is its own parsed form.
func Valid[C interface{ Validate() error }](c C) (C, error) { return c, c.Validate() }

// Namespace returns the namespace the projection serves.
func (p *Projection[T]) Namespace() string { return p.namespace }

// Terminal reports rec.Final.
func (p *Projection[T]) Terminal(rec journal.Record) bool { return rec.Final }

// ValidateConfig checks reg.Config as the package's ParseConfig does, with
// the same errors, and then that its client certificate is valid now
// (transport.Endpoint.ValidAt, by this machine's clock: registering is not
// a sweep).
func (p *Projection[T]) ValidateConfig(reg push.Registration) error {
	if _, err := Get(p, reg.Config); err != nil {
		return err
	}
	e, err := transport.EndpointOf(reg.Config)
	if err != nil {
		return err
	}
	return e.ValidAt(time.Now())
}

// Get returns the parsed form of raw, parsing it on a miss (outside the
// lock, so two goroutines may both parse it). A function, not a method, so
// that it is not promoted into the projection's API.
func Get[T any](p *Projection[T], raw push.Config) (T, error) {
	if v, ok := p.parsed.Get(raw); ok {
		return v, nil
	}
	v, err := p.parse(raw)
	if err == nil {
		p.parsed.Add(string(raw), v) // a copy: the caller may reuse raw
	}
	return v, err
}

// Cache keeps the values of the last keys added, at most its size, the
// oldest going first. It is safe for concurrent use.
type Cache[T any] struct {
	mu    sync.Mutex
	max   int
	Items map[string]T
	Order []string // insertion order, oldest first
}

// NewCache returns a Cache of size (at least 1) values.
func NewCache[T any](size int) *Cache[T] {
	return &Cache[T]{max: max(1, size), Items: map[string]T{}}
}

// Get returns key's value, if kept.
func (c *Cache[T]) Get(key []byte) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.Items[string(key)] // no copy: the conversion is only a lookup
	return v, ok
}

// Add keeps v under key, unless key is kept already.
func (c *Cache[T]) Add(key string, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.Items[key]; ok {
		return
	}
	if len(c.Order) >= c.max {
		delete(c.Items, c.Order[0])
		c.Order = c.Order[1:]
	}
	c.Items[key] = v
	c.Order = append(c.Order, key)
}
