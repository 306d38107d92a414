package demo

import (
	"bufio"
	"bytes"
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

// Actors the demo's activities are sent by and to. The hosts are reserved
// .example names (RFC 2606): nothing is ever resolved.
const (
	// Origin is the demo's own fediverse server.
	Origin = "https://herald.example"
	// DefaultActor sends the activities whose actor is not an id.
	DefaultActor = Origin + "/users/alice"
	// InboxActor is the actor whose inbox the ActivityPub receiver is:
	// activities are delivered to it only when addressed to it, to Public
	// or to their sender's followers, and a Block of it never is.
	InboxActor = "https://remote.example/users/bob"
)

// Content types of the appended records.
const (
	activityType = "application/activity+json"
	jsonType     = "application/json"
)

// Input is what the demo appends, by wire: each stream is appended in
// order, then registered for the receivers of its kind.
type Input struct {
	Name     string   // "the examples embedded in herald", "the corpus at DIR"
	Actors   []Stream // actor/<name>: ActivityStreams activities, one actor's outbox each
	Webhooks []Stream // webhooks/<source>: JSON payloads, as CloudEvents and Standard Webhooks
	Tasks    []Stream // task/<id>: A2A StreamResponses, one task's lifecycle each
}

// Stream is one journal stream of the input and its records.
type Stream struct {
	Name    string
	Actor   string // actor streams: the actor's id, whose key signs
	Entries []journal.Entry
}

// Records counts the entries of every stream.
func (in *Input) Records() int {
	n := 0
	for _, s := range in.all() {
		n += len(s.Entries)
	}
	return n
}

func (in *Input) all() []Stream {
	return slices.Concat(in.Actors, in.Webhooks, in.Tasks)
}

// Layout of an input directory, as in testdata/corpus and the shared corpus.
const (
	activitiesDir = "activitystreams" // activitystreams/*.json: one activity a file
	tasksDir      = "a2a"             // a2a/*.jsonl: one task's StreamResponses a file, one a line
	// Every other directory is a webhook source: <source>/<event>/*.json,
	// one payload a file (the corpus has github/).
)

// Corpus reads an input directory laid out as testdata/corpus, where it
// lies: activitystreams/*.json, <source>/<event>/*.json (github/ there) and
// a2a/*.jsonl. Nothing is copied. All three kinds must be
// present: the demo shows each wire. Errors name the file.
func Corpus(dir string) (*Input, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("--corpus %s: %w (give a directory laid out as testdata/corpus: activitystreams/, <source>/<event>/, a2a/)", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("--corpus %s is not a directory", dir)
	}
	return load(os.DirFS(dir), "the corpus at "+dir)
}

// load reads an input from fsys (see Corpus).
func load(fsys fs.FS, name string) (*Input, error) {
	in := &Input{Name: name}
	dirs, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	actors := map[string]int{} // actor id → index in in.Actors
	for _, d := range dirs {
		if !d.IsDir() {
			continue // README.md and the like
		}
		switch d.Name() {
		case activitiesDir:
			err = loadActivities(fsys, in, actors)
		case tasksDir:
			err = loadTasks(fsys, in)
		default:
			err = loadWebhooks(fsys, d.Name(), in)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	var missing []string
	if len(in.Actors) == 0 {
		missing = append(missing, activitiesDir+"/*.json")
	}
	if len(in.Webhooks) == 0 {
		missing = append(missing, "<source>/<event>/*.json")
	}
	if len(in.Tasks) == 0 {
		missing = append(missing, tasksDir+"/*.jsonl")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s has no %s: the demo needs activities, webhook payloads and A2A lifecycles", name, strings.Join(missing, ", no "))
	}
	return in, nil
}

// loadActivities reads activitystreams/*.json, in name order, into one
// stream per actor. An activity without an id is completed as the
// projection tests complete the W3C examples (deterministically, from its
// file name): it gets the id Origin/activities/<file>; an actor that is not
// an id becomes DefaultActor; and without "to" it is addressed to
// InboxActor. Its own addressing, bto and bcc included, is kept.
func loadActivities(fsys fs.FS, in *Input, actors map[string]int) error {
	files, err := fs.Glob(fsys, activitiesDir+"/*.json")
	if err != nil {
		return err
	}
	for _, f := range files {
		raw, err := fs.ReadFile(fsys, f)
		if err != nil {
			return err
		}
		var act map[string]any
		if err := json.Unmarshal(raw, &act); err != nil || act == nil {
			return fmt.Errorf("%s is not a JSON object", f)
		}
		kind, ok := activityKind(act["type"])
		if !ok {
			return fmt.Errorf("%s: an activity needs a \"type\"", f)
		}
		stem := strings.TrimSuffix(path.Base(f), ".json")
		payload := raw
		if _, ok := act["id"].(string); !ok {
			act["id"] = Origin + "/activities/" + stem
			if !isURI(act["actor"]) {
				act["actor"] = DefaultActor
			}
			if _, ok := act["to"]; !ok {
				act["to"] = []any{InboxActor}
			}
			if payload, err = json.Marshal(act); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
		actor, ok := act["actor"].(string)
		if !ok || !isURI(actor) {
			return fmt.Errorf("%s: its actor must be an http(s) id", f)
		}
		i, seen := actors[actor]
		if !seen {
			i = len(in.Actors)
			actors[actor] = i
			in.Actors = append(in.Actors, Stream{Name: actorStream(actor, in.Actors), Actor: actor})
		}
		in.Actors[i].Entries = append(in.Actors[i].Entries, journal.Entry{
			ID: act["id"].(string), Kind: kind, ContentType: activityType, Payload: payload})
	}
	return nil
}

// activityKind is the activity's type, the first one if it has several.
func activityKind(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, t != ""
	case []any:
		if len(t) > 0 {
			return activityKind(t[0])
		}
	}
	return "", false
}

func isURI(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// actorStream names an actor's stream after the last segment of its id's
// path, or its host ("actor/alice", "actor/sally.example.org"), and after
// the whole id when another actor already took that name.
func actorStream(actor string, taken []Stream) string {
	u, _ := url.Parse(actor)
	name := u.Host
	if p := strings.Trim(u.Path, "/"); p != "" {
		name = path.Base(p)
	}
	name = "actor/" + name
	if slices.ContainsFunc(taken, func(s Stream) bool { return s.Name == name }) {
		name = "actor/" + u.Host + u.Path
	}
	return name
}

// loadWebhooks reads <source>/<event>/*.json, in path order, into the
// stream webhooks/<source>. Each record's id is
// <source>-<event>-<file> (the file name without .json and .payload, its
// dots made dashes: Standard Webhooks signs "id.timestamp.body", so ids
// keep no dot); its kind is <source>.<event>, then .<action> when the
// payload says one, as GitHub's do ("github.pull_request.opened").
func loadWebhooks(fsys fs.FS, source string, in *Input) error {
	files, err := fs.Glob(fsys, source+"/*/*.json")
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return nil
	}
	s := Stream{Name: "webhooks/" + source}
	ids := map[string]string{}
	for _, f := range files {
		raw, err := fs.ReadFile(fsys, f)
		if err != nil {
			return err
		}
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil || body == nil {
			return fmt.Errorf("%s is not a JSON object", f)
		}
		event := path.Base(path.Dir(f))
		stem := strings.TrimSuffix(strings.TrimSuffix(path.Base(f), ".json"), ".payload")
		id := strings.ReplaceAll(source+"-"+event+"-"+stem, ".", "-")
		if other, dup := ids[id]; dup {
			return fmt.Errorf("%s and %s both make the record id %q: rename one", other, f, id)
		}
		ids[id] = f
		kind := source + "." + event
		if action, ok := body["action"].(string); ok && action != "" && !strings.ContainsFunc(action, isSpace) {
			kind += "." + action
		}
		s.Entries = append(s.Entries, journal.Entry{ID: id, Kind: kind, ContentType: jsonType, Payload: raw})
	}
	in.Webhooks = append(in.Webhooks, s)
	return nil
}

func isSpace(r rune) bool { return r <= ' ' }

// loadTasks reads a2a/*.jsonl, one task a file, into the stream
// task/<task id>, one record a line: id a2a-<file>-<line>, kind the
// StreamResponse member ("task", "statusUpdate", "artifactUpdate",
// "message").
func loadTasks(fsys fs.FS, in *Input) error {
	files, err := fs.Glob(fsys, tasksDir+"/*.jsonl")
	if err != nil {
		return err
	}
	for _, f := range files {
		raw, err := fs.ReadFile(fsys, f)
		if err != nil {
			return err
		}
		stem := strings.TrimSuffix(path.Base(f), ".jsonl")
		var s Stream
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, journal.DefaultMaxPayload)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			member, task, err := streamResponse(line)
			if err != nil {
				return fmt.Errorf("%s line %d: %w", f, n, err)
			}
			if s.Name == "" {
				s.Name = "task/" + task
			} else if s.Name != "task/"+task {
				return fmt.Errorf("%s line %d: task %s, but the file began with %s", f, n, task, strings.TrimPrefix(s.Name, "task/"))
			}
			s.Entries = append(s.Entries, journal.Entry{ID: fmt.Sprintf("a2a-%s-%d", stem, n), Kind: member,
				ContentType: jsonType, Payload: bytes.Clone(line)})
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if len(s.Entries) > 0 {
			in.Tasks = append(in.Tasks, s)
		}
	}
	return nil
}

// streamResponse returns the member a StreamResponse line sets and the id
// of its task. The projection checks the rest, with the a2a-go SDK.
func streamResponse(line []byte) (member, task string, err error) {
	var top map[string]struct {
		ID     string `json:"id"`
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(line, &top); err != nil || len(top) != 1 {
		return "", "", errors.New("not a StreamResponse: one JSON object with one member")
	}
	for k, v := range top {
		member, task = k, v.TaskID
		if k == "task" {
			task = v.ID
		}
	}
	if task == "" || strings.ContainsFunc(task, isSpace) {
		return "", "", fmt.Errorf("%s has no task id", member)
	}
	return member, task, nil
}
