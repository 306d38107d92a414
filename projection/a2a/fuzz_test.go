package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
)

// FuzzParseConfig: an A2A push config comes from the client that asked
// for notifications, a stranger. Parsing never panics; a refusal wraps
// journal.ErrInvalid and never repeats the token or the credentials; an
// accepted config prints no secret under any fmt verb.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{"token":"tok-0123456789abcdef"}`, `{"auth_scheme":"Bearer","credentials":"cred-0123456789abcdef"}`,
		`{"token":"tok-0123456789abcdef","version":"0.3"}`, `{"token":"tok\r\nX-Evil: 1-0123456789"}`,
		`{"auth_scheme":"Bearer"}`, `{"credentials":"cred-0123456789abcdef"}`, `{"auth_scheme":"Be arer","credentials":"c"}`,
		`{"version":"2.0"}`, `{"tokn":"x"}`, `{"token":1}`, ``, `null`, `[]`, `{} {}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := a2a.ParseConfig(push.Config(raw))
		secrets := secretValues(raw, "token", "credentials")
		if err != nil {
			if !errors.Is(err, journal.ErrInvalid) {
				t.Fatalf("ParseConfig: %v does not wrap journal.ErrInvalid", err)
			}
			// Errors may quote version, auth_scheme and an unknown key (not
			// secrets), whose bytes may happen to hold a secret's: look
			// outside them.
			said := projtest.WithoutUnknownKey(err.Error())
			for _, quoted := range secretValues(raw, "version", "auth_scheme") {
				said = strings.ReplaceAll(said, quoted, "")
			}
			for _, s := range secrets {
				if strings.Contains(said, s) {
					t.Fatalf("ParseConfig's error %q repeats the secret %q", err, s)
				}
			}
			return
		}
		printed := fmt.Sprintf("%v %+v %#v %s %q", c, c, c, c, c)
		for _, s := range []string{c.Token, c.Credentials} {
			if len(s) >= 8 && strings.Contains(printed, s) {
				t.Fatalf("a fmt verb prints a secret: %s", printed)
			}
		}
	})
}

// FuzzMessages: a record's payload is what the application appended,
// which may carry a remote party's data. Messages and Terminal never
// panic; a payload that is not an A2A StreamResponse is refused with
// journal.ErrInvalid; what is accepted goes out as valid JSON with the
// token in both token headers.
func FuzzMessages(f *testing.F) {
	for _, seed := range []string{
		`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}`,
		`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`,
		`{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"text":"hi"}]}}}`,
		`{"message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}`,
		`{"task":null,"message":null}`, `{"task":{},"message":{}}`, `{"status":{}}`, `{"task":{"id":""}}`,
		`{"statusUpdate":{"taskId":"t1","status":{"state":"TASK_STATE_EXPLODED"}}}`, `[]`, `null`, `"x"`, ``,
	} {
		f.Add([]byte(seed), false, false)
		f.Add([]byte(seed), true, true)
	}
	p := a2a.New()
	f.Fuzz(func(t *testing.T, payload []byte, v03, final bool) {
		cfg := a2a.Config{Token: "tok-0123456789abcdef"}
		if v03 {
			cfg.Version = a2a.Version03
		}
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		reg := push.Registration{Stream: "task/1", ID: "push-1", Namespace: a2a.Namespace, URL: "https://client.example/push", Config: raw}
		rec := journal.Record{Stream: "task/1", Seq: 1, ID: "r1", Kind: "k", ContentType: journal.DefaultContentType, Payload: payload, Final: final}
		_ = p.Terminal(rec)
		msgs, err := p.Messages(context.Background(), rec, reg)
		if err != nil {
			if !errors.Is(err, journal.ErrInvalid) {
				t.Fatalf("Messages(%q): %v does not wrap journal.ErrInvalid", payload, err)
			}
			return
		}
		for _, m := range msgs {
			if !json.Valid(m.Body) || m.ID != rec.ID {
				t.Fatalf("Messages(%q) = id %q body %q", payload, m.ID, m.Body)
			}
			if m.Header.Get(a2a.TokenHeader) != cfg.Token || m.Header.Get(a2a.LegacyTokenHeader) != cfg.Token {
				t.Fatalf("Messages(%q): token headers %v", payload, m.Header)
			}
		}
	})
}

// secretValues returns the strings under keys of a JSON object, if raw
// decodes, that are long enough to be told apart from ordinary words.
func secretValues(raw []byte, keys ...string) []string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	var out []string
	for _, k := range keys {
		var s string
		if json.Unmarshal(obj[k], &s) == nil && len(s) >= 8 {
			out = append(out, s)
		}
	}
	return out
}
