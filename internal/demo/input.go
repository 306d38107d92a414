package demo

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/heraldpush/herald/journal"
)

// The actors of the demo's activities, on reserved .example hosts (RFC
// 2606): nothing is ever resolved.
const (
	// Origin is the demo's own fediverse server.
	Origin = "https://herald.example"
	// DefaultActor sends the activities whose actor is not an id.
	DefaultActor = Origin + "/users/alice"
	// InboxActor owns the ActivityPub receiver's inbox.
	InboxActor = "https://remote.example/users/bob"
)

const (
	activityType = "application/activity+json"
	jsonType     = "application/json"
)

// Input is what the demo appends, by wire (package doc).
type Input struct {
	Name     string   // "the examples embedded in herald", "the corpus at DIR"
	Actors   []Stream // actor/<name>: one actor's ActivityStreams activities each
	Webhooks []Stream // webhooks/<source>: JSON payloads
	Tasks    []Stream // task/<id>: one A2A task's StreamResponses each
}

// Stream is one journal stream of the input.
type Stream struct {
	Name    string
	Actor   string // an actor stream's actor id, whose key signs
	Entries []journal.Entry
}

func (in *Input) all() []Stream { return slices.Concat(in.Actors, in.Webhooks, in.Tasks) }

// examples is the demo's own input, laid out as testdata/corpus.
//
//go:embed examples
var examples embed.FS

// Examples returns the input embedded in herald.
func Examples() (*Input, error) {
	sub, _ := fs.Sub(examples, "examples") // a valid path
	return load(sub, "the examples embedded in herald")
}

// Corpus reads dir where it lies, laid out as testdata/corpus:
// activitystreams/*.json (an activity a file), <source>/<event>/*.json (a
// webhook payload a file) and a2a/*.jsonl (a task a file, a StreamResponse
// a line). Each kind must be present; every record must be one the journal
// takes. Errors name the file.
func Corpus(dir string) (*Input, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("--corpus %s: %w (give a directory laid out as testdata/corpus: activitystreams/, <source>/<event>/, a2a/)", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("--corpus %s is not a directory", dir)
	}
	return load(os.DirFS(dir), "the corpus at "+dir)
}

type loader struct {
	fsys fs.FS
	in   *Input
	ids  map[string]string // stream and record id → the file that made it
}

func load(fsys fs.FS, name string) (*Input, error) {
	l := &loader{fsys: fsys, in: &Input{Name: name}, ids: map[string]string{}}
	for _, read := range []func() error{l.activities, l.webhooks, l.tasks} {
		if err := read(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	var missing []string
	for i, streams := range [][]Stream{l.in.Actors, l.in.Webhooks, l.in.Tasks} {
		if len(streams) == 0 {
			missing = append(missing, []string{"activitystreams/*.json", "<source>/<event>/*.json", "a2a/*.jsonl"}[i])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s has no %s: the demo needs activities, webhook payloads and A2A lifecycles", name, strings.Join(missing, ", no "))
	}
	return l.in, nil
}

// add appends e, read from file, to s: an entry the journal takes, with
// an id no other file made.
func (l *loader) add(s *Stream, file string, e journal.Entry) error {
	if _, err := journal.ValidateEntries(s.Name, []journal.Entry{e}, 0); err != nil {
		var ie *journal.InvalidError
		if errors.As(err, &ie) {
			if _, field, ok := ie.InBatch(); ok {
				err = journal.Invalid(field, "%s", ie.Reason) // the file names the entry
			}
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	if other, dup := l.ids[s.Name+"\x00"+e.ID]; dup {
		return fmt.Errorf("%s and %s both make the record id %q: rename one", other, file, e.ID)
	}
	l.ids[s.Name+"\x00"+e.ID] = file
	s.Entries = append(s.Entries, e)
	return nil
}

func (l *loader) object(file string) ([]byte, map[string]any, error) {
	raw, err := fs.ReadFile(l.fsys, file)
	if err != nil {
		return nil, nil, err
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, nil, fmt.Errorf("%s is not a JSON object", file)
	}
	return raw, obj, nil
}

// activities reads activitystreams/*.json, in name order, into one stream
// per actor. An activity without an id is completed from its file name, as
// the projection tests complete the W3C examples: id Origin/activities/<file>,
// DefaultActor for an actor that is not an id, "to" InboxActor when it has
// none.
func (l *loader) activities() error {
	files, _ := fs.Glob(l.fsys, "activitystreams/*.json") // the pattern is valid
	for _, f := range files {
		raw, act, err := l.object(f)
		if err != nil {
			return err
		}
		if _, ok := act["id"].(string); !ok {
			act["id"] = Origin + "/activities/" + strings.TrimSuffix(path.Base(f), ".json")
			if !isURI(act["actor"]) {
				act["actor"] = DefaultActor
			}
			if _, ok := act["to"]; !ok {
				act["to"] = []any{InboxActor}
			}
			if raw, err = json.Marshal(act); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
		actor, _ := act["actor"].(string)
		if !isURI(actor) {
			return fmt.Errorf("%s: its actor must be an http(s) id", f)
		}
		i := slices.IndexFunc(l.in.Actors, func(s Stream) bool { return s.Actor == actor })
		if i < 0 {
			i, l.in.Actors = len(l.in.Actors), append(l.in.Actors, Stream{Name: actorStream(actor, l.in.Actors), Actor: actor})
		}
		e := journal.Entry{ID: act["id"].(string), Kind: activityKind(act["type"]), ContentType: activityType, Payload: raw}
		if err := l.add(&l.in.Actors[i], f, e); err != nil {
			return err
		}
	}
	return nil
}

// activityKind is an activity's type, the first one if it has several.
func activityKind(v any) string {
	if t, ok := v.([]any); ok && len(t) > 0 {
		return activityKind(t[0])
	}
	s, _ := v.(string)
	return s
}

func isURI(v any) bool {
	s, _ := v.(string)
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// actorStream names an actor's stream after the last segment of its id's
// path, or its host ("actor/alice", "actor/sally.example.org"), or the
// whole id when another actor took that name.
func actorStream(actor string, taken []Stream) string {
	u, _ := url.Parse(actor)
	name := "actor/" + u.Host
	if p := strings.Trim(u.Path, "/"); p != "" {
		name = "actor/" + path.Base(p)
	}
	if slices.ContainsFunc(taken, func(s Stream) bool { return s.Name == name }) {
		name = "actor/" + u.Host + u.Path
	}
	return name
}

// webhooks reads <source>/<event>/*.json, in path order, into the stream
// webhooks/<source> of each other directory than activitystreams and a2a.
// A record's id is <source>-<event>-<file> (without .json and .payload),
// dots made dashes (Standard Webhooks signs "id.timestamp.body"); its kind
// is <source>.<event>, then .<action> when the payload has one, as
// GitHub's do ("github.pull_request.opened").
func (l *loader) webhooks() error {
	files, _ := fs.Glob(l.fsys, "*/*/*.json") // the pattern is valid
	for _, f := range files {
		parts := strings.Split(f, "/")
		source, event := parts[0], parts[1]
		if source == "activitystreams" || source == "a2a" {
			continue
		}
		raw, body, err := l.object(f)
		if err != nil {
			return err
		}
		if n := len(l.in.Webhooks); n == 0 || l.in.Webhooks[n-1].Name != "webhooks/"+source {
			l.in.Webhooks = append(l.in.Webhooks, Stream{Name: "webhooks/" + source})
		}
		kind := source + "." + event
		if action, _ := body["action"].(string); action != "" && !strings.ContainsFunc(action, func(r rune) bool { return r <= ' ' }) {
			kind += "." + action
		}
		stem := strings.TrimSuffix(strings.TrimSuffix(parts[2], ".json"), ".payload")
		e := journal.Entry{ID: strings.ReplaceAll(source+"-"+event+"-"+stem, ".", "-"), Kind: kind, ContentType: jsonType, Payload: raw}
		if err := l.add(&l.in.Webhooks[len(l.in.Webhooks)-1], f, e); err != nil {
			return err
		}
	}
	return nil
}

// tasks reads a2a/*.jsonl, a task a file, into the stream task/<task id>,
// a record a line: id a2a-<file>-<line>, kind the StreamResponse's member
// ("task", "statusUpdate", "artifactUpdate", "message").
func (l *loader) tasks() error {
	files, _ := fs.Glob(l.fsys, "a2a/*.jsonl") // the pattern is valid
	for _, f := range files {
		raw, err := fs.ReadFile(l.fsys, f)
		if err != nil {
			return err
		}
		var s Stream
		for n, line := range bytes.Split(raw, []byte("\n")) {
			if line = bytes.TrimSpace(line); len(line) == 0 {
				continue
			}
			at := fmt.Sprintf("%s line %d", f, n+1)
			member, task, err := streamResponse(line)
			if err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			if s.Name == "" {
				s.Name = "task/" + task
			} else if s.Name != "task/"+task {
				return fmt.Errorf("%s: task %s, but the file began with %s", at, task, strings.TrimPrefix(s.Name, "task/"))
			}
			id := fmt.Sprintf("a2a-%s-%d", strings.TrimSuffix(path.Base(f), ".jsonl"), n+1)
			if err := l.add(&s, at, journal.Entry{ID: id, Kind: member, ContentType: jsonType, Payload: line}); err != nil {
				return err
			}
		}
		if len(s.Entries) > 0 {
			l.in.Tasks = append(l.in.Tasks, s)
		}
	}
	return nil
}

// streamResponse returns the member a StreamResponse line sets and its
// task's id; the projection checks the rest.
func streamResponse(line []byte) (member, task string, err error) {
	var top map[string]struct{ ID, TaskID string }
	if json.Unmarshal(line, &top) != nil || len(top) != 1 {
		return "", "", errors.New("not a StreamResponse: one JSON object with one member")
	}
	for k, v := range top {
		member, task = k, v.TaskID
		if k == "task" {
			task = v.ID
		}
	}
	if task == "" {
		return "", "", fmt.Errorf("%s has no task id", member)
	}
	return member, task, nil
}
