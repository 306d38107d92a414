package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
)

// namespaces are the wires herald speaks, by namespace name.
var namespaces = map[string]struct {
	projection func() push.Projection
	flags      []string // the register flags that apply to it
	config     func(o *configFlags) (any, error)
}{
	activitypub.Namespace: {
		projection: func() push.Projection { return activitypub.New() },
		flags:      []string{"key-id", "private-key-file", "actor", "followers"},
		config: func(o *configFlags) (any, error) {
			key, err := o.readKey()
			if err != nil {
				return nil, err
			}
			return activitypub.Config{KeyID: o.keyID, PrivateKey: key, Actors: o.actors, Followers: o.followers}, nil
		},
	},
	cloudevents.Namespace: {
		projection: func() push.Projection { return cloudevents.New() },
		flags:      []string{"source", "structured", "token"},
		config: func(o *configFlags) (any, error) {
			tok, err := secretValue("--token", o.token)
			return cloudevents.Config{Source: o.source, Structured: o.structured, Token: tok}, err
		},
	},
	a2a.Namespace: {
		projection: func() push.Projection { return a2a.New() },
		flags:      []string{"token", "auth-scheme", "credentials", "a2a-version"},
		config: func(o *configFlags) (any, error) {
			tok, err := secretValue("--token", o.token)
			if err != nil {
				return nil, err
			}
			cred, err := secretValue("--credentials", o.credentials)
			return a2a.Config{Token: tok, AuthScheme: o.authScheme, Credentials: cred, Version: o.a2aVersion}, err
		},
	},
	webhook.Namespace: {
		projection: func() push.Projection { return webhook.New() },
		flags:      []string{"secret", "envelope"},
		config: func(o *configFlags) (any, error) {
			secrets := make([]string, len(o.secrets))
			for i, s := range o.secrets {
				v, err := secretValue("--secret", s)
				if err != nil {
					return nil, err
				}
				secrets[i] = v
			}
			return webhook.Config{Secrets: secrets, Envelope: o.envelope}, nil
		},
	},
}

func namespaceNames() []string {
	names := make([]string, 0, len(namespaces))
	for n := range namespaces {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func checkNamespace(ns string) error {
	if _, ok := namespaces[ns]; !ok {
		return usagef("unknown namespace %q: herald speaks %s", ns, strings.Join(namespaceNames(), ", "))
	}
	return nil
}

// checkStream refuses a --stream value no stream can have (journal's
// stream rules) as a usage error naming the flag.
func checkStream(stream string) error {
	if err := journal.ValidateStream(stream); err != nil {
		return usagef("--stream: %v", err)
	}
	return nil
}

// configFlags are register's namespace options.
type configFlags struct {
	secrets                        []string
	token, authScheme, credentials string
	keyID, privateKeyFile          string
	actors, followers              []string
	source, a2aVersion             string
	structured, envelope           bool
}

func (o *configFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&o.secrets, "secret", nil, "webhook: a whsec_… signing secret (repeat to sign with several during rotation)")
	f.BoolVar(&o.envelope, "envelope", false, `webhook: send {"type": kind, "timestamp": appended-at, "data": payload} (Standard Webhooks' payload structure) instead of the payload alone`)
	f.StringVar(&o.token, "token", "", "cloudevents: bearer token; a2a: the push config token")
	f.StringVar(&o.authScheme, "auth-scheme", "", "a2a: Authorization scheme (e.g. Bearer)")
	f.StringVar(&o.credentials, "credentials", "", "a2a: Authorization credentials")
	f.StringVar(&o.a2aVersion, "a2a-version", "", "a2a: protocol version, 1.0 (default) or 0.3")
	f.StringVar(&o.keyID, "key-id", "", "activitypub: the actor's key URI (keyId), e.g. https://example.com/users/alice#main-key")
	f.StringVar(&o.privateKeyFile, "private-key-file", "", "activitypub: PEM file of the actor's RSA private key")
	f.StringArrayVar(&o.actors, "actor", nil, "activitypub: an actor this inbox serves (repeatable): deliver only what is addressed to them, to Public or to --followers")
	f.StringArrayVar(&o.followers, "followers", nil, "activitypub: a followers collection this inbox serves (repeatable)")
	f.StringVar(&o.source, "source", "", "cloudevents: the events' source URI-reference")
	f.BoolVar(&o.structured, "structured", false, "cloudevents: structured content mode instead of binary")
}

// build checks that only the namespace's own flags were given and returns
// its config as stored JSON.
func (o *configFlags) build(cmd *cobra.Command, ns string) (push.Config, error) {
	def := namespaces[ns]
	for _, name := range namespaceFlags() {
		if cmd.Flags().Changed(name) && !slices.Contains(def.flags, name) {
			return nil, usagef("--%s does not apply to the %s namespace (its options: --%s)", name, ns, strings.Join(def.flags, ", --"))
		}
	}
	cfg, err := def.config(o)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode the %s config: %w", ns, err)
	}
	return push.Config(raw), nil
}

func (o *configFlags) readKey() (string, error) {
	if o.privateKeyFile == "" {
		return "", nil // the projection's validation names the missing key
	}
	pem, err := os.ReadFile(o.privateKeyFile)
	if err != nil {
		return "", readError("--private-key-file", o.privateKeyFile, err, " (give a PEM file of the actor's RSA private key)")
	}
	return string(pem), nil
}

// readError is the usage error (exit 2) for a file a flag names that cannot
// be read: the flag, the path quoted (it is the user's text, and may hold
// any byte), and the reason without the os error's own unquoted copy of
// the path.
func readError(flag, path string, err error, hint string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return usagef("%s %q: %v%s", flag, path, err, hint)
}

// secretValue resolves a secret flag: "env:NAME" reads the environment
// variable NAME, "file:PATH" reads a file (trailing newline removed), anything
// else is the secret itself. Errors never repeat the value.
func secretValue(flag, v string) (string, error) {
	switch {
	case strings.HasPrefix(v, "env:"):
		name := strings.TrimPrefix(v, "env:")
		s, ok := os.LookupEnv(name)
		if !ok || s == "" {
			return "", usagef("%s env:%s: the environment variable is not set", flag, name)
		}
		return s, nil
	case strings.HasPrefix(v, "file:"):
		path := strings.TrimPrefix(v, "file:")
		b, err := os.ReadFile(path)
		if err != nil {
			return "", readError(flag, "file:"+path, err, "")
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	return v, nil
}

// configFlagOf maps a key of a namespace's stored config, as the
// projections' errors name it ("config.secrets[1]"), to the register flag
// that sets it.
var configFlagOf = map[string]string{
	"secrets":     "secret",
	"token":       "token",
	"auth_scheme": "auth-scheme",
	"credentials": "credentials",
	"version":     "a2a-version",
	"key_id":      "key-id",
	"private_key": "private-key-file",
	"actors":      "actor",
	"followers":   "followers",
	"source":      "source",
	"structured":  "structured",
	"envelope":    "envelope",
}

// namespaceFlags are register's namespace flags (configFlagOf's), sorted.
func namespaceFlags() []string {
	out := make([]string, 0, len(configFlagOf))
	for _, f := range configFlagOf {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// fieldFlagOf maps the other fields that validation errors of journal,
// push, the stores and transport name ("to seq", "Options.Timeout",
// "AllowHosts[2]") to the flag that sets them, for the commands that pass
// their errors through asFlags.
var fieldFlagOf = map[string]string{
	"stream":                      "stream",
	"id":                          "id", // a record's (append)
	"kind":                        "kind",
	"content_type":                "content-type",
	"traceparent":                 "traceparent",
	"tracestate":                  "tracestate",
	"registration id":             "id",
	"namespace":                   "namespace",
	"url":                         "url",
	"on_rejected":                 "on-4xx",
	"window":                      "window",
	"kinds":                       "kinds",
	"to seq":                      "to-seq",
	"Options.Timeout":             "timeout",
	"AllowHosts":                  "allow-host",
	"Options.MaxIdleConnsPerHost": "max-per-host",
}

// asFlags rewrites the fields of validation errors from the names the
// library gives them to the flags the user typed: a config's keys by
// configFlagOf ("invalid config.secrets[1]" becomes "invalid --secret (the
// 2nd)"), other fields by fieldFlagOf ("invalid to seq" becomes "invalid
// --to-seq"). Other errors and fields are kept as they are.
func asFlags(err error) error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		parts := joined.Unwrap()
		out := make([]error, len(parts))
		for i, p := range parts {
			out[i] = asFlags(p)
		}
		return errors.Join(out...)
	}
	var inv *journal.InvalidError
	if !errors.As(err, &inv) {
		return err
	}
	prefix, flags := "", fieldFlagOf
	if strings.HasPrefix(inv.Field, "config.") {
		prefix, flags = "config.", configFlagOf
	}
	key, index, _ := strings.Cut(strings.TrimPrefix(inv.Field, prefix), "[")
	flag, ok := flags[key]
	if !ok {
		return err
	}
	field := "--" + flag
	if n, err := strconv.Atoi(strings.TrimSuffix(index, "]")); err == nil && index != "" {
		field += " (the " + ordinal(n+1) + ")"
	}
	reason := inv.Reason
	if ref, ok := strings.CutPrefix(reason, "repeats "+prefix+key+"["); ok {
		if n, err := strconv.Atoi(strings.TrimSuffix(ref, "]")); err == nil {
			reason = "repeats the " + ordinal(n+1)
		}
	}
	return &journal.InvalidError{Field: field, Reason: reason}
}

// ordinal spells n as 1st, 2nd, 3rd, 4th, … 11th, 12th, 13th, 21st.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}
