package operator

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/store"
)

// Need is what a route or a page action asks of a token: a role that
// covers Role, and, unless Scoped, no scope (what it reads or changes is
// not one tenant's: hosts, counts over every stream, tokens).
type Need struct {
	Role   store.Role
	Scoped bool
}

// Access is the one table of what each route of the APIs (admin and HTTP
// API, by their mux patterns), /metrics off loopback, and each page view
// and action ("page: …") needs. A route missing from it is refused to
// every token; daemon and page tests check that each route they serve is
// here, README's roles table is AccessTable's output, and openapi.yaml's
// x-herald-role says the same.
var Access = map[string]Need{
	"GET /v1/openapi.json":                {store.RoleProducer, true},
	"POST /v1/records":                    {store.RoleProducer, true},
	"GET /v1/records/status":              {store.RoleReader, true},
	"GET /v1/registrations":               {store.RoleReader, true},
	"GET /v1/registration":                {store.RoleReader, true},
	"GET /v1/evidence":                    {store.RoleReader, true},
	"GET /v1/status":                      {store.RoleReader, false},
	"GET /v1/hosts":                       {store.RoleReader, false},
	"POST /v1/registrations":              {store.RoleOperator, true},
	"DELETE /v1/registration":             {store.RoleOperator, true},
	"POST /v1/registration/unpark":        {store.RoleOperator, true},
	"POST /v1/registrations/unpark":       {store.RoleOperator, true},
	"POST /v1/registration/pause":         {store.RoleOperator, true},
	"POST /v1/registration/resume":        {store.RoleOperator, true},
	"POST /v1/registration/resend":        {store.RoleOperator, true},
	"POST /v1/registration/skip":          {store.RoleOperator, true},
	"POST /v1/registration/rewind":        {store.RoleOperator, true},
	"POST /v1/registration/rotate-secret": {store.RoleOperator, true},
	"POST /v1/hosts/reset":                {store.RoleOperator, false},
	"GET /v1/subscriptions":               {store.RoleReader, false},
	"POST /v1/subscriptions":              {store.RoleOperator, false},
	"DELETE /v1/subscription":             {store.RoleOperator, false},
	"GET /v1/tokens":                      {store.RoleAdmin, false},
	"POST /v1/tokens":                     {store.RoleAdmin, false},
	"POST /v1/token/revoke":               {store.RoleAdmin, false},
	"GET /v1/keys":                        {store.RoleOperator, false},
	"POST /v1/keys":                       {store.RoleAdmin, false},
	"POST /v1/key/rotate":                 {store.RoleAdmin, false},
	"DELETE /v1/key":                      {store.RoleAdmin, false},
	// The metrics address's, off loopback (on it, /metrics is open).
	"GET /metrics": {store.RoleReader, false},

	"page: registrations, registration, record":                                  {store.RoleReader, true},
	"page: overview, hosts":                                                      {store.RoleReader, false},
	"page: unpark, pause, resume, resend, skip, rewind, rotate-secret, set-rate": {store.RoleOperator, true},
	"page: reset-host":                                                           {store.RoleOperator, false},
	"page: tokens (list, create, revoke)":                                        {store.RoleAdmin, false},
	"page: keys (list)":                                                          {store.RoleOperator, false},
	"page: keys (add, rotate, remove)":                                           {store.RoleAdmin, false},
}

// Allowed is nil when tok may use what pattern names, else why not
// (ErrForbidden).
func Allowed(tok store.Token, pattern string) error {
	need, ok := Access[pattern]
	switch {
	case !ok:
		return fmt.Errorf("%w: %s has no entry in herald's access table", ErrForbidden, pattern)
	case !tok.Role.Covers(need.Role):
		return fmt.Errorf("%w: %s needs the %s role; this token (%s) has the %s role", ErrForbidden, pattern, need.Role, tok.ID, tok.Role)
	case len(tok.Scope) > 0 && !need.Scoped:
		return fmt.Errorf("%w: %s needs a token without a scope (it is about every tenant's streams); this token (%s) is scoped to %s",
			ErrForbidden, pattern, tok.ID, strings.Join(tok.Scope, ", "))
	}
	return nil
}

// ErrForbidden: the token is valid but may not do this (HTTP 403).
var ErrForbidden = errors.New("forbidden")

// AccessTable is Access as README's Markdown table, one row per route,
// by least role, then route.
func AccessTable() string {
	routes := slices.SortedFunc(maps.Keys(Access), func(a, b string) int {
		return cmp.Or(cmp.Compare(slices.Index(store.Roles, Access[a].Role), slices.Index(store.Roles, Access[b].Role)), strings.Compare(a, b))
	})
	var b strings.Builder
	b.WriteString("| route or page action | least role | a scoped token |\n|---|---|---|\n")
	for _, p := range routes {
		scoped := "on its streams"
		if !Access[p].Scoped {
			scoped = "no (every tenant's)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p, Access[p].Role, scoped)
	}
	return b.String()
}

// Static is a token given in the environment (HERALD_ADMIN_TOKEN,
// HERALD_API_TOKEN): its secret, the role it has (unscoped), and its name.
type Static struct {
	Secret string
	Role   store.Role
	Name   string // the environment variable
}

// Authenticator finds the token a secret is: a Static one, or a stored
// one that is not revoked.
type Authenticator struct {
	Store  store.TokenStore
	Static []Static
	Now    func() time.Time
	Log    *slog.Logger
}

// ErrBadToken: the secret is no token, or a revoked one (HTTP 401).
var ErrBadToken = errors.New("not a valid token")

// Authenticate returns the token secret is (ByHash of its SHA-256; a
// secret without store.TokenPrefix is only compared with the static ones).
// Errors: ErrBadToken, or the store's.
func (a Authenticator) Authenticate(ctx context.Context, secret string) (store.Token, error) {
	typed := sha256.Sum256([]byte(secret)) // hashed first, so that not even the length leaks
	if !strings.HasPrefix(secret, store.TokenPrefix) {
		if tok, ok := a.static(typed); ok {
			return tok, nil
		}
		return store.Token{}, ErrBadToken
	}
	return a.ByHash(ctx, typed)
}

func (a Authenticator) static(hash [sha256.Size]byte) (store.Token, bool) {
	for _, s := range a.Static {
		want := sha256.Sum256([]byte(s.Secret))
		if s.Secret != "" && subtle.ConstantTimeCompare(hash[:], want[:]) == 1 {
			return store.Token{ID: s.Name, Name: s.Name, Role: s.Role}, true
		}
	}
	return store.Token{}, false
}

// ByHash returns the token whose secret has the SHA-256 hash: a static
// one, or a stored one not revoked, whose LastUsed it writes at most every
// store.TokenUseGrain (a failed write is logged). The page keeps a
// session's hash, not its secret. Errors: ErrBadToken, or the store's.
func (a Authenticator) ByHash(ctx context.Context, hash [sha256.Size]byte) (store.Token, error) {
	if tok, ok := a.static(hash); ok {
		return tok, nil
	}
	if a.Store == nil {
		return store.Token{}, ErrBadToken
	}
	tok, err := a.Store.TokenByHash(ctx, hash[:])
	switch {
	case errors.Is(err, journal.ErrNotFound):
		return store.Token{}, ErrBadToken
	case err != nil:
		return store.Token{}, err
	case !tok.Revoked.IsZero():
		return store.Token{}, fmt.Errorf("%w: token %s was revoked", ErrBadToken, tok.ID)
	}
	if now := a.Now(); now.Sub(tok.LastUsed) >= store.TokenUseGrain {
		if err := a.Store.TokenUsed(ctx, tok.ID, now.Truncate(time.Second)); err != nil && a.Log != nil {
			a.Log.Warn("herald: cannot record a token's use", "token", tok.ID, "err", err)
		}
	}
	return tok, nil
}

type tokenKey struct{}

// WithToken returns ctx carrying tok, the token a request authenticated as.
func WithToken(ctx context.Context, tok store.Token) context.Context {
	return context.WithValue(ctx, tokenKey{}, tok)
}

// ActedBy is who a pause, resume or resend asked with tok names when it
// names nobody: a token made by herald tokens create, by its name and id
// (so that the evidence says which tenant or service it was); else "an
// operator (where)".
func ActedBy(tok store.Token, where string) string {
	if strings.HasPrefix(tok.ID, "tok_") {
		return fmt.Sprintf("%s (%s)", tok.Name, tok.ID)
	}
	return "an operator (" + where + ")"
}

// TokenOf is the token ctx carries (WithToken), or the zero Token, which
// has no role and no scope.
func TokenOf(ctx context.Context) store.Token {
	tok, _ := ctx.Value(tokenKey{}).(store.Token)
	return tok
}

// Scoped is s as tok sees it: s itself for a token without a scope; else
// every registration, stream and record outside tok's scope is as if it
// did not exist (journal.ErrNotFound, left out of lists, an empty stream),
// so that a tenant learns nothing of another's; one it sees it may change
// only as MayChange says. What is not about a stream (hosts, Stats) is left
// to Access to refuse.
func Scoped(s store.Backend, tok store.Token) store.Backend {
	if len(tok.Scope) == 0 {
		return s
	}
	return scoped{s, tok}
}

type scoped struct {
	store.Backend
	tok store.Token
}

// A subscription's prefix spans streams a tenant may not have yet; a
// scoped token reaches only those within its scope (the routes need an
// unscoped token: this is the store's own guard).
func (s scoped) Subscribe(ctx context.Context, sub, was store.Subscription) (store.SubscriptionStatus, error) {
	if !s.tok.Sees(sub.Prefix) {
		return store.SubscriptionStatus{}, fmt.Errorf("%w: stream prefix %q is outside this token's scope", ErrForbidden, sub.Prefix)
	}
	return s.Backend.Subscribe(ctx, sub, was)
}

func (s scoped) Unsubscribe(ctx context.Context, prefix, id string) (int, error) {
	if !s.tok.Sees(prefix) {
		return 0, store.SubscriptionNotFound(prefix, id)
	}
	return s.Backend.Unsubscribe(ctx, prefix, id)
}

func (s scoped) Subscriptions(ctx context.Context, prefix string) ([]store.SubscriptionStatus, error) {
	list, err := s.Backend.Subscriptions(ctx, prefix)
	return slices.DeleteFunc(list, func(st store.SubscriptionStatus) bool { return !s.tok.Sees(st.Prefix) }), err
}

// mayChange is nil when this token may write to registration stream/id
// (MayChange); one out of its scope is as if it did not exist. One not
// found is not written to: a subscription may make it before the write.
func (s scoped) mayChange(ctx context.Context, stream, id string) error {
	if !s.tok.Sees(stream) {
		return store.NotFound(stream, id)
	}
	st, err := s.Backend.Get(ctx, stream, id)
	if err != nil {
		return err
	}
	return MayChange(s.tok, st.Key(), st.Subscription)
}

// MayChange is nil when tok may write to (unregister, pause, resume,
// unpark, resend, skip, rewind, update) registration k, which it sees and
// which the subscription of prefix subscription made ("": none). Such a
// registration is its subscription's: tok may change it only if its scope
// covers that whole prefix (its tenant made it, or could have), so that a
// tenant cannot hide its records from a receiver an admin subscribed. Else
// ErrForbidden, naming why.
func MayChange(tok store.Token, k store.Key, subscription string) error {
	if subscription == "" || tok.Sees(subscription) {
		return nil
	}
	return fmt.Errorf("%w: registration %s was made by the subscription of stream prefix %s, which this token's scope (%s) does not cover",
		ErrForbidden, store.Name(k.Stream, k.ID), journal.Shown(subscription), strings.Join(tok.Scope, ", "))
}

func (s scoped) Append(ctx context.Context, stream string, es ...journal.Entry) ([]journal.Record, error) {
	if !s.tok.Sees(stream) {
		return nil, Outside(s.tok, fmt.Errorf("stream %q: %w", stream, journal.ErrNotFound))
	}
	recs, err := s.Backend.Append(ctx, stream, es...)
	if ce, ok := errors.AsType[*journal.ConflictError](err); ok && !s.tok.Sees(ce.Stream) {
		// Ids are one namespace for every stream: say it is taken, not where.
		return nil, fmt.Errorf("record id %q is taken by another record: %w", ce.ID, journal.ErrConflict)
	}
	return recs, err
}

func (s scoped) Read(ctx context.Context, stream string, from uint64, limit, maxBytes int) ([]journal.Record, error) {
	if !s.tok.Sees(stream) {
		return []journal.Record{}, journal.ValidateRead(stream, from, limit, maxBytes)
	}
	return s.Backend.Read(ctx, stream, from, limit, maxBytes)
}

func (s scoped) Head(ctx context.Context, stream string) (uint64, error) {
	if !s.tok.Sees(stream) {
		return 0, journal.ValidateStream(stream)
	}
	return s.Backend.Head(ctx, stream)
}

func (s scoped) Lookup(ctx context.Context, id string) (journal.Record, error) {
	rec, err := s.Backend.Lookup(ctx, id)
	if ue, ok := errors.AsType[*journal.UnnumberedError](err); ok {
		rec = ue.Record
	}
	if (err == nil || rec.Stream != "") && !s.tok.Sees(rec.Stream) {
		return journal.Record{}, store.RecordNotFound(id)
	}
	return rec, err
}

func (s scoped) Register(ctx context.Context, r store.Registration) (store.Registration, error) {
	if err := s.mayRegister(ctx, r.Key()); err != nil {
		return store.Registration{}, err
	}
	return s.Backend.Register(ctx, r)
}

// mayRegister is nil when this token may write registration k: change it
// (mayChange) or, none found, create it (mayCreate). The store refuses a
// create if one was made since.
func (s scoped) mayRegister(ctx context.Context, k store.Key) error {
	if !s.tok.Sees(k.Stream) {
		return Outside(s.tok, store.NotFound(k.Stream, k.ID))
	}
	err := s.mayChange(ctx, k.Stream, k.ID)
	if errors.Is(err, journal.ErrNotFound) {
		return s.mayCreate(ctx, k)
	}
	return err
}

// Outside is the refusal of a create (an append, a registration) on a
// stream tok does not see: notFound, as for any such stream, saying why,
// since not found is no answer to a create. It tells tok only its own
// scope, whether the stream exists or not.
func Outside(tok store.Token, notFound error) error {
	return fmt.Errorf("%w: this token appends and registers only on streams under its scope (%s)", notFound, strings.Join(tok.Scope, ", "))
}

// mayCreate is nil when this token may create registration k, which it
// sees: else a subscription it does not cover matches k's stream with k's
// id, and k would take that registration's place (a stream with one of the
// id is skipped), so that its receiver never got the stream's records.
func (s scoped) mayCreate(ctx context.Context, k store.Key) error {
	subs, err := s.Backend.Subscriptions(ctx, "")
	if err != nil {
		return err
	}
	for _, sub := range subs {
		if sub.ID == k.ID && strings.HasPrefix(k.Stream, sub.Prefix) && !s.tok.Sees(sub.Prefix) {
			return fmt.Errorf("%w: registration %s would take the place of the subscription %s, which this token's scope (%s) does not cover: give it another id",
				ErrForbidden, store.Name(k.Stream, k.ID), store.SubscriptionName(sub.Prefix, sub.ID), strings.Join(s.tok.Scope, ", "))
		}
	}
	return nil
}

func (s scoped) Update(ctx context.Context, r, was store.Registration) (store.Registration, error) {
	if err := s.mayRegister(ctx, r.Key()); err != nil {
		return store.Registration{}, err
	}
	return s.Backend.Update(ctx, r, was)
}

func (s scoped) Unregister(ctx context.Context, stream, id string) error {
	if err := s.mayChange(ctx, stream, id); err != nil {
		return err
	}
	return s.Backend.Unregister(ctx, stream, id)
}

func (s scoped) Get(ctx context.Context, stream, id string) (store.Status, error) {
	if !s.tok.Sees(stream) {
		return store.Status{}, store.NotFound(stream, id)
	}
	return s.Backend.Get(ctx, stream, id)
}

func (s scoped) Unpark(ctx context.Context, stream, id string, at time.Time) error {
	if err := s.mayChange(ctx, stream, id); err != nil {
		return err
	}
	return s.Backend.Unpark(ctx, stream, id, at)
}

func (s scoped) Pause(ctx context.Context, stream, id string, at time.Time, by, reason string) error {
	if err := s.mayChange(ctx, stream, id); err != nil {
		return err
	}
	return s.Backend.Pause(ctx, stream, id, at, by, reason)
}

func (s scoped) Resume(ctx context.Context, stream, id string, at time.Time, by string) error {
	if err := s.mayChange(ctx, stream, id); err != nil {
		return err
	}
	return s.Backend.Resume(ctx, stream, id, at, by)
}

func (s scoped) Resend(ctx context.Context, stream, id string, seq uint64, at time.Time, by string) (bool, error) {
	if err := s.mayChange(ctx, stream, id); err != nil {
		return false, err
	}
	return s.Backend.Resend(ctx, stream, id, seq, at, by)
}

func (s scoped) Skip(ctx context.Context, stream, id string, toSeq uint64, at time.Time, reason string) error {
	if err := s.mayChange(ctx, stream, id); err != nil {
		return err
	}
	return s.Backend.Skip(ctx, stream, id, toSeq, at, reason)
}

func (s scoped) Rewind(ctx context.Context, stream, id string, toSeq uint64, at time.Time) error {
	if err := s.mayChange(ctx, stream, id); err != nil {
		return err
	}
	return s.Backend.Rewind(ctx, stream, id, toSeq, at)
}

func (s scoped) Evidence(ctx context.Context, stream, id string, limit int) ([]store.Evidence, error) {
	if !s.tok.Sees(stream) {
		return nil, store.NotFound(stream, id)
	}
	return s.Backend.Evidence(ctx, stream, id, limit)
}

// Streams lists the streams q matches within the scope: one out of it is
// as one that does not exist (RecordStatusOf tells of pruned records by it).
func (s scoped) Streams(ctx context.Context, q store.StreamQuery) ([]store.StreamInfo, error) {
	if q.Stream != "" && !s.tok.Sees(q.Stream) {
		return []store.StreamInfo{}, nil
	}
	infos, err := s.Backend.Streams(ctx, q)
	return slices.DeleteFunc(infos, func(i store.StreamInfo) bool { return !s.tok.Sees(i.Stream) }), err
}

// Prune is every tenant's: a scoped token may not.
func (s scoped) Prune(ctx context.Context, q store.PruneQuery) (store.PruneReport, error) {
	return store.PruneReport{}, fmt.Errorf("%w: pruning is about every tenant's streams", ErrForbidden)
}

// List lists what q matches within the scope: for each of its prefixes,
// in key order, from the first key under it, until a stream outside it.
func (s scoped) List(ctx context.Context, q store.ListQuery) ([]store.Status, error) {
	limit, err := store.ListLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	if q.Stream != "" {
		if !s.tok.Sees(q.Stream) {
			return []store.Status{}, nil
		}
		return s.Backend.List(ctx, q)
	}
	var out []store.Status
	for _, p := range prefixes(s.tok.Scope) {
		pq := q
		if store.CompareKeys(pq.After, store.Key{Stream: p}) < 0 {
			pq.After = store.Key{Stream: p}
		}
		for len(out) < limit {
			pq.Limit = limit - len(out)
			page, err := s.Backend.List(ctx, pq)
			if err != nil {
				return nil, err
			}
			n := len(out)
			for _, st := range page {
				if !strings.HasPrefix(st.Stream, p) {
					break
				}
				out = append(out, st)
			}
			if len(out)-n < len(page) || len(page) < pq.Limit {
				break // past the prefix, or the end
			}
			pq.After = page[len(page)-1].Key()
		}
	}
	return out, nil
}

// prefixes are scope's prefixes in order, without those another covers,
// so that each names a run of keys apart from the others'.
func prefixes(scope []string) []string {
	ps := slices.Sorted(slices.Values(scope))
	var out []string
	for _, p := range ps {
		if len(out) == 0 || !strings.HasPrefix(p, out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}

// TokenView is a token as listed and shown: never its secret or hash.
type TokenView struct {
	store.Token
	Scope []string `json:"scope"` // [] for every stream
}

// ViewToken returns t as shown.
func ViewToken(t store.Token) TokenView {
	return TokenView{Token: t, Scope: append([]string{}, t.Scope...)}
}

// Tokens lists every token, as shown. Errors are ts's.
func Tokens(ctx context.Context, ts store.TokenStore) ([]TokenView, error) {
	tokens, err := ts.Tokens(ctx)
	out := make([]TokenView, len(tokens))
	for i, t := range tokens {
		out[i] = ViewToken(t)
	}
	return out, err
}

// CreatedToken is a token just made: the secret, shown this once.
type CreatedToken struct {
	TokenView
	Secret string `json:"secret"`
}

// CreateToken makes and stores a token for name, role and scope at at
// (store.MintToken). Errors: journal.ErrInvalid naming the field, the
// store's.
func CreateToken(ctx context.Context, ts store.TokenStore, name, role string, scope []string, at time.Time) (CreatedToken, error) {
	r, err := store.ParseRole("role", role)
	if err != nil {
		return CreatedToken{}, err
	}
	secret, tok, err := store.MintToken(name, r, scope, at)
	if err == nil {
		err = ts.CreateToken(ctx, tok)
	}
	if err != nil {
		return CreatedToken{}, err
	}
	return CreatedToken{ViewToken(tok), secret}, nil
}
