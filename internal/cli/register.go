package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/heraldpush/herald/internal/operator"
	tbl "github.com/heraldpush/herald/internal/table"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/activitypub"
	"github.com/heraldpush/herald/projection/cloudevents"
	"github.com/heraldpush/herald/projection/webhook"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store"
	"github.com/heraldpush/herald/transport"
)

func newRegister(e *env) command {
	var (
		r       push.Registration
		on4xx   string
		cfg     configFlags
		fromSeq uint64
		keep    string
		prefix  string
		from    string
		rate    string
		retry   retryFlags
	)
	return command{
		use:   "register",
		short: "Register a receiver for a stream: where to POST, which wire, which secrets",
		long: fmt.Sprintf(`Register a receiver for a stream's records, or update where an existing
registration sends them (its cursor and retry state are kept).

Namespaces and their options:
  activitypub  --key-id URI [--private-key-file PEM] [--signature-scheme rfc9421|cavage]
               [--proof-key-id URI [--proof-private-key-file PEM]] [--actor URI]… [--followers URI]…
  cloudevents  --source URI-REF [--structured] [--token TOKEN]
  a2a          [--token TOKEN] [--auth-scheme SCHEME --credentials CREDS] [--a2a-version 1.0|0.3]
  webhook      [--secret whsec_…]… [--envelope]
  every one    [--header 'Name: value']… [--client-cert PEM --client-key PEM] [--proxy URL]

A secret option takes the secret itself, env:NAME (read the environment
variable NAME) or file:PATH; prefer env: or file:, which keep it out of the
process list. Secrets are stored with the registration and never printed,
but for a webhook registered without --secret: herald makes one (32 random
bytes) and prints it this once (herald rotate-secret replaces it).

--header adds a header to every request; herald refuses hop-by-hop headers,
Host, Content-Type, Content-Length and every header herald or the namespace
sets (README, "Endpoint settings"). --client-cert and --client-key are PEM
files of a client certificate (checked against this machine's clock now)
and its key, presented to a receiver that asks for one (mTLS). --proxy sends
this registration's requests through an HTTP CONNECT proxy, in place of run's
--egress-proxy; it is checked as destinations are (private addresses need
--allow-private-network).

An activitypub registration signs each delivery with RFC 9421 HTTP Message
Signatures first; a host that refuses it (401, 403, or a 400 naming the
signature) gets the same delivery signed with draft-cavage at once, with no
attempt counted, and the host's scheme is kept on its host row so that no
worker knocks there twice (tried again after 30 days). --signature-scheme
pins one scheme instead. An Ed25519 key signs RFC 9421 only: a host that
verifies draft-cavage alone refuses it.

An activitypub registration without --private-key-file signs with the key
held once under --key-id (herald keys add): a rotation (herald keys rotate)
takes effect at its next attempt. With the file, it keeps its own copy.

A webhook carries the record's kind, stream and seq in the headers
Herald-Kind, Herald-Stream and Herald-Seq (projection/webhook's package doc).

An a2a registration is one task's push notification config: --token goes in
A2A-Notification-Token and X-A2A-Notification-Token, --auth-scheme and
--credentials make the Authorization header. It is removed once a record with
a terminal task state, or a final one, is acknowledged (README, "A2A push
notifications").

--kinds passes records of other kinds without a message (re-registering
replaces the list). Within a --window the receiver may see records out of
order (README, "Delivery semantics"); each message in flight takes one of its
host's --max-per-host tokens of run and sweep (default %d). --on-4xx says what
a 4xx other than 408, 410, 425 and 429 means: retry (parks at the retry
ceiling) or skip (evidence, and past the message, as fediverse servers do).

--retain-max bounds how long a record waits for this registration to
acknowledge it: past it herald prune (and run's prune loop) removes the
record all the same and moves the cursor past it, with evidence and a
herald.registration.expired event (README, "Retention"). Defaults: %s.

--stream-prefix P (instead of --stream) subscribes: one registration, of
this --id, per stream whose name starts with P (which ends with "/"; herald/
is refused), each with its own cursor and order. Streams that exist start at
their oldest record (--from start, the default) or past their head (--from
head); a stream created later is picked up in the transaction that creates
it, at its first record. Registering the prefix again updates every one of
its registrations (its --from stays as it was made: another is refused);
herald unregister --stream-prefix removes them all;
herald subscriptions lists them.

--retry-schedule, --max-attempts and --retry-for are the registration's own
retry policy; without them it retries as its namespace does (README, "Retry
policy"). Re-registering replaces them.

--rate caps the requests its receiver gets, retries included, from every
daemon on the database together: at most N in any second, minute or hour
(N/s, N/min, N/h, N from 1 to %d), sent in bursts (10/s is 5 every half
second; README, "Rate"). Without it there is no limit but --max-per-host.
Re-registering replaces it. A subscription (--stream-prefix) takes none:
each of its streams has a registration of its own.`, push.DefaultMaxPerHost, retainMaxDefaults(), store.MaxRateCount),
		example: `  herald register --stream orders --id billing --namespace webhook --url https://billing.example/hooks --secret env:BILLING_SECRET
  herald register --stream actor/alice --id https://remote.example/inbox --namespace activitypub \
      --url https://remote.example/inbox --key-id https://example.com/users/alice#main-key
  herald register --stream task/8f3c --id push-1 --namespace a2a --url https://client.example/a2a/push --token env:A2A_TOKEN
  herald register --stream orders --id shipping --namespace webhook --url https://ship.example/hooks --secret env:SHIP_SECRET --kinds 'order.*,invoice.paid'
  herald register --stream-prefix tenant/42/ --id tenant-42 --namespace webhook --url https://t42.example/hooks --secret env:T42_SECRET --from head
  herald register --stream orders --id erp --namespace webhook --url https://erp.example/hooks --secret env:ERP_SECRET --retry-schedule 5s,5m,30m,2h,5h,10h,10h --retry-for 8d
  herald register --stream orders --id crm --namespace webhook --url https://crm.example/hooks --secret env:CRM_SECRET --rate 600/min
  herald register --stream herald/events --id ops --namespace webhook --url https://ops.example/herald --secret env:OPS_SECRET --envelope
  herald register --stream orders --id acme --namespace webhook --url https://acme.example/hooks --header 'X-Tenant: 42' \
      --client-cert acme.crt --client-key acme.key`,
		need: []string{"id", "namespace", "url"},
		db:   createDB,
		flags: func(f *pflag.FlagSet) {
			f.StringVar(&r.Stream, "stream", "", "the stream to follow (this or --stream-prefix is required)")
			f.StringVar(&prefix, "stream-prefix", "", "follow every stream whose name starts with this, existing and future (ends with /)")
			f.StringVar(&from, "from", "start", "with --stream-prefix, where its existing streams start: start (their oldest record) or head (past it)")
			f.StringVar(&r.ID, "id", "", "the registration's id, unique in the stream (an inbox URI, a push config id) (required)")
			f.StringVar(&r.Namespace, "namespace", "", "the wire: "+strings.Join(namespaceNames(), ", ")+" (required)")
			f.StringVar(&r.URL, "url", "", "where to POST (required): an absolute https URL; http needs herald run --allow-http, and a loopback or private address --allow-private-network")
			f.StringVar(&on4xx, "on-4xx", string(push.RejectRetry), "what another 4xx means: retry or skip")
			intVar(f, &fromSeq, "from-seq", 1, "a new registration's first seq to deliver (1: the stream's beginning)", "1 or more (seqs are 1-based)", 1, 0)
			f.StringSliceVar(&r.Kinds, "kinds", nil, "only records of these kinds: comma-separated exact kinds or prefixes ending in * (default: every kind)")
			intVar(f, &r.Window, "window", 1, fmt.Sprintf("messages that may be unacknowledged at once, 1 to %d (1: strict order)", store.MaxWindow),
				fmt.Sprintf("1 to %d", store.MaxWindow), 1, store.MaxWindow)
			f.StringVar(&keep, "retain-max", "", "keep a record this registration has not acknowledged at most this long, 1h to 3650d (default: the namespace's, see above)")
			f.StringVar(&rate, "rate", "", fmt.Sprintf("at most N requests to the receiver in any second, minute or hour, from every daemon: N/s, N/min or N/h, N from 1 to %d (default: no limit)", store.MaxRateCount))
			retry.add(f)
			cfg.add(f)
		},
		check: func(c *call) (err error) {
			switch {
			case c.changed("stream") && c.changed("stream-prefix"):
				return usagef("--stream and --stream-prefix: give one (a stream, or every stream under a prefix)")
			case c.changed("stream-prefix"):
				if err := store.ValidatePrefix(prefix); err != nil {
					return usageOf(err)
				}
				if from != "start" && from != "head" {
					return usagef("--from %s must be start or head", journal.Quoted(from))
				}
				r.Stream = prefix + "x" // the template's checks below
			case c.changed("from"):
				return usagef("--from applies to --stream-prefix; a --stream starts at --from-seq")
			default:
				if err := c.need("stream"); err != nil {
					return err
				}
			}
			if err := checkNamespace(r.Namespace); err != nil {
				return err
			}
			if c.changed("rate") {
				if prefix != "" {
					return usagef("--rate applies to --stream only: each stream of a subscription has a registration of its own, and a rate on each would let the receiver get N a period for every stream")
				}
				if r.Rate, err = store.ParseRate("rate", rate); err != nil {
					return asRangeError(usageOf(err))
				}
			}
			if c.changed("retain-max") {
				if r.RetainMax, err = store.ParseDays("--retain-max", keep, store.MinRetainMax, store.MaxRetainMax); err != nil {
					return usageOf(err)
				}
			}
			r.OnRejected, r.NextSeq = push.RejectPolicy(cmp.Or(on4xx, string(push.RejectRetry))), fromSeq
			for i, k := range r.Kinds {
				r.Kinds[i] = strings.TrimSpace(k)
			}
			if r.Config, err = cfg.build(c.changed, r.Namespace); err != nil {
				return err
			}
			if r.Retry, err = retry.build(); err != nil {
				return err
			}
			if err := r.Validate(); err != nil {
				return asRangeError(usageOf(err))
			}
			if v, ok := namespaces[r.Namespace].projection(nil).(push.ConfigValidator); ok {
				checked, _ := operator.MakeSecret(r) // a webhook without --secret gets one when run
				if err := v.ValidateConfig(checked); err != nil {
					return usageOf(err)
				}
			}
			return nil
		},
		run: func(c *call) error {
			if prefix != "" {
				return subscribe(c, e, r, prefix, from == "head")
			}
			// Checked again with the database: an ActivityPub key_id may name a held key.
			check := func(r store.Registration) error {
				if v, ok := namespaces[r.Namespace].projection(c.b).(push.ConfigValidator); ok {
					return usageOf(v.ValidateConfig(r))
				}
				return nil
			}
			st, old, generated, err := operator.Register(c.ctx(), c.b, check, r)
			if pe := (*store.PrunedError)(nil); errors.As(err, &pe) {
				return fmt.Errorf("%w: start it at --from-seq %d or later", err, pe.OldestSeq)
			}
			if err != nil {
				return err
			}
			existed := old != nil
			// An update keeps the cursor: skip and rewind move it.
			var notes []string
			if existed && c.changed("from-seq") && st.NextSeq != fromSeq {
				notes = append(notes, fmt.Sprintf("--from-seq %d applies to a new registration only: the cursor stays at %d (herald skip or rewind moves it)", fromSeq, st.NextSeq))
			}
			if existed && old.Namespace == activitypub.Namespace && st.Namespace == activitypub.Namespace {
				if now := operator.SigningKey(st.Config); operator.SigningKey(old.Config).Own && !now.Own {
					notes = append(notes, fmt.Sprintf("It signed with its own copy of a key; it now signs with the key held under --key-id %s (herald keys list), as register without --private-key-file does", tbl.Clean(now.KeyID)))
				}
			}
			var warnings []string
			for _, err := range transport.URLRefusals(st.URL) {
				warnings = append(warnings, "sweeps refuse this URL and park the registration: "+err.Error())
			}
			if note := operator.WindowNote(st.Window, push.DefaultMaxPerHost, "the default"); note != "" {
				warnings = append(warnings, note)
			}
			v := operator.Held(nil).View(st)
			return c.print(operator.RegisteredView{RegistrationView: v, Secret: generated, Warnings: append(notes, warnings...)}, func(w io.Writer) {
				window, verb := "", "Registered"
				if st.Window > 1 {
					window = fmt.Sprintf(", window %d", st.Window)
				}
				if !v.RetainMaxDefault {
					window += ", retain-max " + v.RetainMax
				}
				if v.Rate != "" {
					window += ", rate " + v.Rate
				}
				if existed {
					verb = "Updated"
				}
				fmt.Fprintf(w, "%s %s: %s to %s, cursor %d%s, %s to deliver.\n",
					verb, store.Name(st.Stream, st.ID), st.Namespace, v.Host, st.NextSeq, window, plural(int(v.Lag), "record"))
				if existed && (old.Namespace != st.Namespace || old.URL != st.URL) {
					fmt.Fprintf(w, "It replaced %s to %s; its cursor and retry state are kept.\n", old.Namespace, tbl.Clean(operator.RedactURL(old.URL)))
				}
				for _, n := range notes {
					fmt.Fprintln(w, n+".")
				}
				stillParked(w, st)
				if generated != "" {
					fmt.Fprintf(w, "Its signing secret, shown this once (give it to the receiver):\n%s\n", generated)
				}
				for _, warning := range warnings {
					fmt.Fprintf(e.Err, "note: %s\n", warning)
				}
			})
		},
	}
}

// wire is a namespace herald speaks: its projection, and its config from
// register's flags.
type wire struct {
	projection func(keys store.ActorKeyStore) push.Projection // keys: nil when no database is open
	config     func(o *configFlags) (any, error)
}

// namespaces are the wires herald speaks, by namespace name.
var namespaces = map[string]wire{
	activitypub.Namespace: {
		projection: func(keys store.ActorKeyStore) push.Projection {
			if keys == nil {
				return activitypub.New()
			}
			return activitypub.New(activitypub.WithKeys(keys))
		},
		config: func(o *configFlags) (any, error) {
			cfg := activitypub.Config{KeyID: o.keyID, SignatureScheme: o.signatureScheme, ProofKeyID: o.proofKeyID, Actors: o.actors, Followers: o.followers, Endpoint: o.endpoint}
			var err error
			if cfg.ProofPrivateKey, err = readPEM("--proof-private-key-file", o.proofPrivateKeyFile, " of the actor's Ed25519 private key"); err != nil {
				return nil, err
			}
			// Without the file, key_id names a held key (herald keys); the projection's validation checks it.
			cfg.PrivateKey, err = readPEM("--private-key-file", o.privateKeyFile, " of the actor's RSA or Ed25519 private key")
			return cfg, err
		},
	},
	cloudevents.Namespace: {
		projection: func(store.ActorKeyStore) push.Projection { return cloudevents.New() },
		config: func(o *configFlags) (any, error) {
			tok, err := secretValue("--token", o.token)
			return cloudevents.Config{Source: o.source, Structured: o.structured, Token: tok, Endpoint: o.endpoint}, err
		},
	},
	a2a.Namespace: {
		projection: func(store.ActorKeyStore) push.Projection { return a2a.New() },
		config: func(o *configFlags) (any, error) {
			tok, err := secretValue("--token", o.token)
			if err != nil {
				return nil, err
			}
			cred, err := secretValue("--credentials", o.credentials)
			return a2a.Config{Token: tok, AuthScheme: o.authScheme, Credentials: cred, Version: o.a2aVersion, Endpoint: o.endpoint}, err
		},
	},
	webhook.Namespace: {
		projection: func(store.ActorKeyStore) push.Projection { return webhook.New() },
		config: func(o *configFlags) (any, error) {
			secrets := make([]string, len(o.secrets))
			for i, s := range o.secrets {
				v, err := secretValue("--secret", s)
				if err != nil {
					return nil, err
				}
				secrets[i] = v
			}
			return webhook.Config{Secrets: secrets, Envelope: o.envelope, Endpoint: o.endpoint}, nil
		},
	},
}

// flags are register's flags that set the wire's config, in its order.
func (w wire) flags() []string {
	if w.config == nil {
		return nil // a namespace herald does not speak, registered over the API
	}
	cfg, _ := w.config(&configFlags{})
	t := reflect.TypeOf(cfg)
	var out []string
	for f := range t.Fields() {
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous || key == "retiring" { // transport.Endpoint: every namespace's (configFlags.endpointOf); retiring: rotate-secret's
			continue
		}
		out = append(out, flagName(key))
	}
	return out
}

func namespaceNames() []string { return slices.Sorted(maps.Keys(namespaces)) }

// checkNamespace refuses a namespace herald does not speak.
func checkNamespace(ns string) error {
	if _, ok := namespaces[ns]; !ok {
		return usagef("unknown namespace %s: herald speaks %s", journal.Quoted(ns), strings.Join(namespaceNames(), ", "))
	}
	return nil
}

// configFlags are register's namespace options.
type configFlags struct {
	secrets                        []string
	token, authScheme, credentials string
	keyID, privateKeyFile          string
	signatureScheme, proofKeyID    string
	proofPrivateKeyFile            string
	actors, followers              []string
	source, a2aVersion             string
	structured, envelope           bool

	headers                      []string
	clientCert, clientKey, proxy string
	endpoint                     transport.Endpoint // of the four above, built by build
}

func (o *configFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&o.secrets, "secret", nil, "webhook: a whsec_… signing secret (repeat to sign with several during rotation)")
	f.BoolVar(&o.envelope, "envelope", false, `webhook: send {"type": kind, "timestamp": appended-at, "data": payload} (Standard Webhooks' payload structure) instead of the payload alone`)
	f.StringVar(&o.token, "token", "", "cloudevents: bearer token; a2a: the push config token")
	f.StringVar(&o.authScheme, "auth-scheme", "", "a2a: Authorization scheme (e.g. Bearer)")
	f.StringVar(&o.credentials, "credentials", "", "a2a: Authorization credentials")
	f.StringVar(&o.a2aVersion, "a2a-version", "", "a2a: protocol version, 1.0 (default) or 0.3")
	f.StringVar(&o.keyID, "key-id", "", "activitypub: the actor's key URI (keyId), e.g. https://example.com/users/alice#main-key")
	f.StringVar(&o.privateKeyFile, "private-key-file", "", "activitypub: PEM file of the actor's private key, RSA (PKCS#1 or PKCS#8) or Ed25519 (PKCS#8): this registration's own copy (default: the key held under --key-id, herald keys)")
	f.StringVar(&o.signatureScheme, "signature-scheme", "", "activitypub: pin the HTTP signature scheme, rfc9421 or cavage (default: RFC 9421 first, draft-cavage when the host refuses it; an Ed25519 key signs RFC 9421 only)")
	f.StringVar(&o.proofKeyID, "proof-key-id", "", "activitypub: add a FEP-8b32 object integrity proof to every activity, by the actor's Ed25519 Multikey with this id")
	f.StringVar(&o.proofPrivateKeyFile, "proof-private-key-file", "", "activitypub: PEM file (PKCS#8) of the Multikey's Ed25519 private key (default: --private-key-file, if Ed25519)")
	f.StringArrayVar(&o.actors, "actor", nil, "activitypub: an actor this inbox serves (repeatable): deliver only what is addressed to them, to Public or to --followers")
	f.StringArrayVar(&o.followers, "followers", nil, "activitypub: a followers collection this inbox serves (repeatable)")
	f.StringVar(&o.source, "source", "", "cloudevents: the events' source URI-reference")
	f.BoolVar(&o.structured, "structured", false, "cloudevents: structured content mode instead of binary")
	f.StringArrayVar(&o.headers, "header", nil, "a header for every request, 'Name: value' (repeatable)")
	f.StringVar(&o.clientCert, "client-cert", "", "PEM file of a client certificate (mTLS), with --client-key")
	f.StringVar(&o.clientKey, "client-key", "", "PEM file of the client certificate's private key")
	f.StringVar(&o.proxy, "proxy", "", "an HTTP CONNECT proxy for this registration, http://[user:password@]host:port (default: run's --egress-proxy)")
}

// endpointOf builds o.endpoint from --header, --client-cert, --client-key
// and --proxy; the projection's validation checks it.
func (o *configFlags) endpointOf() error {
	e := transport.Endpoint{Proxy: o.proxy}
	for _, h := range o.headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return usagef("--header has no ':': give it as 'Name: value' (e.g. --header 'X-Tenant: 42')")
		}
		if e.Headers == nil {
			e.Headers = make(map[string]string, len(o.headers))
		}
		if _, dup := e.Headers[name]; dup {
			return usagef("--header %s is given twice", tbl.Clean(name))
		}
		e.Headers[name] = strings.Trim(value, " \t")
	}
	var err error
	if e.ClientCert, err = readPEM("--client-cert", o.clientCert, ""); err == nil {
		e.ClientKey, err = readPEM("--client-key", o.clientKey, "")
	}
	o.endpoint = e
	return err
}

// build returns the namespace's config as stored, refusing other
// namespaces' flags.
func (o *configFlags) build(changed func(flag string) bool, ns string) (push.Config, error) {
	own := namespaces[ns].flags()
	for _, other := range namespaceNames() {
		for _, name := range namespaces[other].flags() {
			if changed(name) && !slices.Contains(own, name) {
				return nil, usagef("--%s does not apply to the %s namespace (its options: --%s)", name, ns, strings.Join(own, ", --"))
			}
		}
	}
	if err := o.endpointOf(); err != nil {
		return nil, err
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

// readError is the usage error for a file a flag names that cannot be
// read: the path as journal.Quoted shows it (the user's text, any byte, any
// length), the reason without the os error's unquoted copy of it.
func readError(flag, path string, err error, hint string) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err
	}
	return usagef("%s %s: %v%s", flag, journal.Quoted(path), err, hint)
}

// maxFlagFile bounds what a file flag reads: no config holds more, and a
// device given by mistake (/dev/zero) must not fill memory.
const maxFlagFile = store.MaxConfigBytes

// readFlagFile reads path, which a file flag names, up to maxFlagFile.
func readFlagFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFlagFile+1))
	if err == nil && len(b) > maxFlagFile {
		err = fmt.Errorf("is longer than %d bytes", maxFlagFile)
	}
	return b, err
}

// readPEM reads the PEM file path that flag names, "" when none; what says
// what the file holds, in its refusal.
func readPEM(flag, path, what string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := readFlagFile(path)
	if err != nil {
		return "", readError(flag, path, err, " (give a PEM file"+what+")")
	}
	return string(b), nil
}

// secretValue resolves a secret flag: env:NAME, file:PATH (its trailing
// newline removed) or the secret itself. Errors never repeat the value.
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
		b, err := readFlagFile(path)
		if err != nil {
			return "", readError(flag, "file:"+path, err, "")
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	return v, nil
}

// retainMaxDefaults lists store.DefaultRetainMax by namespace, for help.
func retainMaxDefaults() string {
	var out []string
	for _, ns := range namespaceNames() {
		out = append(out, ns+" "+store.FormatDays(store.DefaultRetainMax(ns)))
	}
	return strings.Join(out, ", ")
}

// subscribe is register --stream-prefix: r is the template.
func subscribe(c *call, e *env, r push.Registration, prefix string, fromHead bool) error {
	st, secret, err := operator.Subscribe(c.ctx(), c.b, nil, store.SubscriptionOf(prefix, r, fromHead), c.changed("from"))
	if err != nil {
		return err
	}
	v, err := operator.Subscribed(c.ctx(), c.b, st, secret)
	if err != nil {
		fmt.Fprintf(e.Err, "note: %v\n", err)
	}
	return c.print(v, func(w io.Writer) {
		start := "their oldest record"
		if st.FromHead {
			start = "past their head"
		}
		fmt.Fprintf(w, "Subscribed %s: %s to %s, following %s (existing streams from %s, new ones from their first record).\n",
			store.SubscriptionName(st.Prefix, st.ID), st.Namespace, v.Host, plural(st.Streams, "stream"), start)
		if secret != "" {
			fmt.Fprintf(w, "Its signing secret, shown this once (give it to the receiver):\n%s\n", secret)
		}
		printSkipped(w, v)
		for _, err := range transport.URLRefusals(st.URL) {
			fmt.Fprintf(e.Err, "note: sweeps refuse this URL and park its registrations: %v\n", err)
		}
	})
}

// printSkipped tells the streams subscription v skipped, if any, as
// subscribe and subscriptions --streams show them.
func printSkipped(w io.Writer, v operator.SubscriptionView) {
	if v.SkippedStreams == 0 {
		return
	}
	fmt.Fprintf(w, "It skipped %s under %s: each already has a registration %s that it did not make, whose receiver gets the stream's records, not this one's (unregister one and register the prefix again to follow it):\n",
		plural(v.SkippedStreams, "stream"), journal.Shown(v.Prefix), journal.Shown(v.ID))
	for _, stream := range v.Skipped {
		fmt.Fprintf(w, "  %s\n", journal.Shown(stream))
	}
	if more := v.SkippedStreams - len(v.Skipped); more > 0 {
		fmt.Fprintf(w, "  and %d more\n", more)
	}
}

func newRotateSecret(e *env) command {
	var (
		stream, id    string
		expireOldFlag string
		expireOld     time.Duration
		at            instant
	)
	return command{
		use:   "rotate-secret",
		short: "Give a webhook registration a new signing secret, keeping the old one signing for a while",
		long: fmt.Sprintf(`Give a webhook registration a new whsec_ secret (32 random bytes), printed this
once. Its old secrets keep signing beside it until --expire-old after --at
(Standard Webhooks sends several signatures), so the receiver can switch
without a refused message; then only the new one signs. Whether an old secret
still signs is judged by each sweep's instant, not this machine's clock. The
cursor and retry state are kept, and so is a change another process makes
meanwhile (a register, a rotation): the rotation reads the registration again
and rotates that. --expire-old is 0s (the old ones stop at once) to %s.`, store.FormatDays(webhook.MaxExpireOld)),
		example: `  herald rotate-secret --stream orders --id billing --expire-old 24h`,
		need:    []string{"stream", "id"},
		db:      readDB,
		flags: func(f *pflag.FlagSet) {
			keyFlags(f, &stream, &id)
			f.StringVar(&expireOldFlag, "expire-old", store.FormatDays(operator.DefaultExpireOld), "how long the old secrets keep signing: a duration (24h) or whole days (7d); 0s: they stop at once (a turn already sending stops within a third of the lease)")
			f.Var(&at, "at", "the instant the old secrets' time starts from: RFC 3339 or unix seconds (default now; use the clock your sweeps use)")
		},
		check: func(c *call) error {
			var err error
			expireOld, err = operator.ParseExpireOld("--expire-old", expireOldFlag)
			return usageOf(err)
		},
		run: func(c *call) error {
			v, err := operator.RotateSecret(c.ctx(), c.b, stream, id, c.at(at), expireOld)
			if err != nil {
				return e.notFound(stream, id, err)
			}
			return c.print(v, func(w io.Writer) {
				fmt.Fprintf(w, "Rotated the secret of %s.\n", store.Name(stream, id))
				if v.OldSecretsUntil.IsZero() {
					fmt.Fprintln(w, "The old secrets stopped signing.")
				} else {
					fmt.Fprintf(w, "The old secrets sign beside it until %s.\n", operator.Instant(v.OldSecretsUntil))
				}
				fmt.Fprintf(w, "The new secret, shown this once (give it to the receiver):\n%s\n", v.Secret)
			})
		},
	}
}

// retryFlags are register's retry policy (push.RetryPolicy).
type retryFlags struct {
	schedule, retryFor string
	maxAttempts        int
}

func (rf *retryFlags) add(f *pflag.FlagSet) {
	f.StringVar(&rf.schedule, "retry-schedule", "", fmt.Sprintf("fixed delays between attempts, comma-separated, 1s to %s each (5s,5m,30m,2h,5h,10h,10h); the last repeats until the ceiling (default: the namespace's)", store.FormatDays(store.MaxRetryDelay)))
	intVar(f, &rf.maxAttempts, "max-attempts", 0, "park on the failure that makes the attempts at one record reach this (default: the namespace's ceiling)", fmt.Sprintf("1 to %d", store.MaxAttemptsLimit), 1, store.MaxAttemptsLimit)
	f.StringVar(&rf.retryFor, "retry-for", "", fmt.Sprintf("park on the first failure this long after the first of the run (3d, 36h), %v to %s; with --max-attempts whichever comes first (default: the namespace's ceiling)", store.MinRetryFor, store.FormatDays(store.MaxRetryFor)))
}

// build returns the policy, its errors naming the flags.
func (rf *retryFlags) build() (p push.RetryPolicy, err error) {
	if rf.schedule != "" {
		if p.Schedule, err = store.ParseSchedule("retry-schedule", rf.schedule); err != nil {
			return p, usageOf(err)
		}
	}
	if rf.retryFor != "" {
		if p.For, err = store.ParseDays("retry-for", rf.retryFor, store.MinRetryFor, store.MaxRetryFor); err != nil {
			return p, usageOf(err)
		}
	}
	p.MaxAttempts = rf.maxAttempts
	if err := p.Validate(); err != nil {
		return p, asRangeError(usageOf(err))
	}
	return p, nil
}
