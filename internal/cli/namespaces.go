package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
)

// wire is a namespace herald speaks: its projection, and its config as
// register's flags build it.
type wire struct {
	projection func() push.Projection
	config     func(o *configFlags) (any, error)
}

// namespaces are the wires herald speaks, by namespace name.
var namespaces = map[string]wire{
	activitypub.Namespace: {
		projection: func() push.Projection { return activitypub.New() },
		config: func(o *configFlags) (any, error) {
			key, err := o.readKey()
			return activitypub.Config{KeyID: o.keyID, PrivateKey: key, Actors: o.actors, Followers: o.followers}, err
		},
	},
	cloudevents.Namespace: {
		projection: func() push.Projection { return cloudevents.New() },
		config: func(o *configFlags) (any, error) {
			tok, err := secretValue("--token", o.token)
			return cloudevents.Config{Source: o.source, Structured: o.structured, Token: tok}, err
		},
	},
	a2a.Namespace: {
		projection: func() push.Projection { return a2a.New() },
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

// flags are register's flags that set the wire's config: one a config key,
// in the config's order.
func (w wire) flags() []string {
	if w.config == nil {
		return nil // a namespace herald does not speak, registered over the API
	}
	cfg, _ := w.config(&configFlags{})
	t := reflect.TypeOf(cfg)
	out := make([]string, t.NumField())
	for i := range out {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out[i] = flagName(key)
	}
	return out
}

func namespaceNames() []string { return slices.Sorted(maps.Keys(namespaces)) }

// checkNamespace refuses a namespace herald does not speak.
func checkNamespace(ns string) error {
	if _, ok := namespaces[ns]; !ok {
		return usagef("unknown namespace %q: herald speaks %s", ns, strings.Join(namespaceNames(), ", "))
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

func (o *configFlags) add(f *pflag.FlagSet) {
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
	own := namespaces[ns].flags()
	for _, other := range namespaceNames() {
		for _, name := range namespaces[other].flags() {
			if cmd.Flags().Changed(name) && !slices.Contains(own, name) {
				return nil, usagef("--%s does not apply to the %s namespace (its options: --%s)", name, ns, strings.Join(own, ", --"))
			}
		}
	}
	cfg, err := namespaces[ns].config(o)
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

// readError is the usage error for a file a flag names that cannot be
// read: the flag, the path quoted (the user's text, any byte), and the
// reason without the os error's unquoted copy of the path.
func readError(flag, path string, err error, hint string) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err
	}
	return usagef("%s %q: %v%s", flag, path, err, hint)
}

// secretValue resolves a secret flag: "env:NAME" reads the environment
// variable NAME, "file:PATH" a file (its trailing newline removed), anything
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
