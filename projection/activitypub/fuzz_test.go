package activitypub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/push"
)

// FuzzParseConfig: a registration's config is outside input. Parsing
// never panics; a refusal wraps journal.ErrInvalid and never repeats a
// line of the private key; an accepted config prints no key material under
// any fmt verb.
func FuzzParseConfig(f *testing.F) {
	pemText, _ := testKey(f)
	good, err := json.Marshal(Config{KeyID: aliceKeyID, PrivateKey: pemText, Actors: []string{bob}, Followers: []string{aliceFollowers}})
	if err != nil {
		f.Fatal(err)
	}
	broken := strings.Replace(pemText, "A", "*", 3)
	for _, seed := range []string{
		string(good), fmt.Sprintf(`{"key_id":%q,"private_key":%q}`, aliceKeyID, broken),
		fmt.Sprintf(`{"key_id":"not a uri","private_key":%q}`, pemText), fmt.Sprintf(`{"key_id":%q,"private_key":"hello"}`, aliceKeyID),
		fmt.Sprintf(`{"key_id":%q,"private_key":%q,"followers":["x"]}`, aliceKeyID, pemText), `{"key_id":1}`, `{"kid":"x"}`, ``, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := ParseConfig(push.Config(raw))
		var obj struct {
			PrivateKey string `json:"private_key"`
		}
		_ = json.Unmarshal(raw, &obj)
		keyLines := func(s string) []string {
			var out []string
			for _, line := range strings.Split(s, "\n") {
				if base64Line.MatchString(line) { // key material, not the BEGIN/END lines
					out = append(out, line)
				}
			}
			return out
		}
		if err != nil {
			if !errors.Is(err, journal.ErrInvalid) {
				t.Fatalf("ParseConfig: %v does not wrap journal.ErrInvalid", err)
			}
			for _, line := range keyLines(obj.PrivateKey) {
				if strings.Contains(err.Error(), line) {
					t.Fatalf("ParseConfig's error %q repeats key material", err)
				}
			}
			return
		}
		printed := fmt.Sprintf("%v %+v %#v %s %q", c, c, c, c, c)
		for _, line := range keyLines(c.PrivateKey) {
			if strings.Contains(printed, line) {
				t.Fatalf("a fmt verb prints key material: %s", printed)
			}
		}
	})
}

var base64Line = regexp.MustCompile(`^[A-Za-z0-9+/=]{16,}$`)

// FuzzMessages: an activity is what the application appended, often built
// from a remote server's data. Messages never panics; a payload that is not
// an activity is refused with journal.ErrInvalid; what goes out is a JSON
// object without bto or bcc.
func FuzzMessages(f *testing.F) {
	for _, seed := range []string{
		`{"@context":"https://www.w3.org/ns/activitystreams","type":"Create","id":"https://example.com/a/1","actor":"` + alice + `","to":["https://www.w3.org/ns/activitystreams#Public"],"object":{"type":"Note","content":"hi"}}`,
		`{"type":"Create","to":"` + bob + `","bto":["` + carol + `"],"bcc":"` + carol + `","object":{"type":"Note"}}`,
		`{"type":"Block","object":"` + bob + `","to":"` + bob + `"}`,
		`{"type":["Create","Update"],"to":[{"id":"` + bob + `"}],"cc":"` + aliceFollowers + `"}`,
		`{"type":"Create","bto":[1,2,{"x":null}],"bcc":{"a":"b"},"to":null}`,
		`{"type":""}`, `{"type":1}`, `{}`, `[]`, `null`, `"x"`, ``, `{"type":"Create","bto":"x"} trailing`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	p := New()
	f.Fuzz(func(t *testing.T, payload []byte, filtered bool) {
		var actors, followers []string
		if filtered {
			actors, followers = []string{bob}, []string{aliceFollowers}
		}
		reg := push.Registration{Stream: "actor/alice", ID: "inbox", Namespace: Namespace, URL: "https://remote.example/inbox", Config: config(t, actors, followers)}
		entries, err := journal.ValidateEntries(reg.Stream, []journal.Entry{{ID: "a1", Kind: "Create", ContentType: ContentType, Payload: payload}}, 0)
		if err != nil {
			return // the journal refuses it: no projection ever sees it
		}
		rec := journal.Record{Stream: reg.Stream, Seq: 1, ID: "a1", Kind: "Create", ContentType: entries[0].ContentType, Payload: payload}
		msgs, err := p.Messages(context.Background(), rec, reg)
		if err != nil {
			if !errors.Is(err, journal.ErrInvalid) {
				t.Fatalf("Messages(%q): %v does not wrap journal.ErrInvalid", payload, err)
			}
			return
		}
		for _, m := range msgs {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(m.Body, &obj); err != nil {
				t.Fatalf("Messages(%q) sends %q, not a JSON object: %v", payload, m.Body, err)
			}
			if _, ok := obj["bto"]; ok {
				t.Fatalf("Messages(%q) sends bto: %s", payload, m.Body)
			}
			if _, ok := obj["bcc"]; ok {
				t.Fatalf("Messages(%q) sends bcc: %s", payload, m.Body)
			}
		}
	})
}
