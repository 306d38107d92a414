package a2a_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	v03 "github.com/a2aproject/a2a-go/a2a"
	v1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/heraldpush/herald/internal/corpustest"
	"github.com/heraldpush/herald/journal"
	"github.com/heraldpush/herald/projection/a2a"
	"github.com/heraldpush/herald/projection/internal/projtest"
	"github.com/heraldpush/herald/push"
	"github.com/heraldpush/herald/store/memory"
)

// lifecycle is one file of the A2A corpus: StreamResponse lines, in order.
type lifecycle struct {
	name  string
	lines [][]byte
}

func loadLifecycles(t *testing.T) []lifecycle {
	t.Helper()
	dir := corpustest.Dir(t, "a2a")
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("the shared corpus has no *.jsonl under %s", dir)
	}
	var out []lifecycle
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		lc := lifecycle{name: strings.TrimSuffix(filepath.Base(f), ".jsonl")}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				lc.lines = append(lc.lines, []byte(line))
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, lc)
	}
	return out
}

// member is the StreamResponse member a line sets, used as the record kind.
func member(t *testing.T, line []byte) string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil || len(top) != 1 {
		t.Fatalf("corpus line is not a one-member object: %.80s", line)
	}
	for k := range top {
		return k
	}
	return ""
}

// decodeV1 decodes a line with the a2a-go v2 SDK, the oracle of these tests.
func decodeV1(t *testing.T, line []byte) v1.Event {
	t.Helper()
	var sr v1.StreamResponse
	if err := json.Unmarshal(line, &sr); err != nil {
		t.Fatalf("the SDK cannot decode a corpus line: %v: %.80s", err, line)
	}
	return sr.Event
}

// delivery is what the receiver decoded from one POST.
type delivery struct {
	path        string
	contentType string
	auth        string
	token       string // A2A-Notification-Token
	legacyToken string // X-A2A-Notification-Token
	v1          v1.Event
	v03         *v03.Task
	err         error
}

// receiver is an httptest server that decodes /v1 bodies as a2a-go v2
// StreamResponses and /v03 bodies as a2a-go v0.3 Tasks, answering 400 when
// it cannot.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []delivery
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		d := delivery{path: req.URL.Path, contentType: req.Header.Get("Content-Type"), auth: req.Header.Get("Authorization"),
			token: req.Header.Get("A2A-Notification-Token"), legacyToken: req.Header.Get("X-A2A-Notification-Token")}
		if err == nil {
			switch req.URL.Path {
			case "/v1":
				var sr v1.StreamResponse
				err = json.Unmarshal(body, &sr)
				d.v1 = sr.Event
			case "/v03":
				var task v03.Task
				if err = json.Unmarshal(body, &task); err == nil {
					var kind struct{ Kind string }
					_ = json.Unmarshal(body, &kind)
					if kind.Kind != "task" {
						err = fmt.Errorf("kind %q, want task", kind.Kind)
					}
				}
				d.v03 = &task
			default:
				err = errors.New("unknown path")
			}
		}
		d.err = err
		r.mu.Lock()
		r.got = append(r.got, d)
		r.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// state03 spells a 1.0 state as 0.3 does, independently of the package's
// table: TASK_STATE_INPUT_REQUIRED → input-required.
func state03(s v1.TaskState) v03.TaskState {
	return v03.TaskState(strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_")), "_", "-"))
}

const corpusConfig = `"token":"` + token + `","auth_scheme":"Bearer","credentials":"` + credentials + `"`

// TestCorpusReceivedBySDK delivers every line of every lifecycle, as 1.0
// and as 0.3, to a receiver that decodes them with the a2a-go SDKs: the 1.0
// receiver gets the line's event, the 0.3 receiver a Task with the line's
// ids, state (in 0.3 spelling), status message and artifact; both get the
// Authorization and both token headers.
func TestCorpusReceivedBySDK(t *testing.T) {
	rcv := newReceiver(t)
	p := a2a.New()
	ctx := context.Background()
	for _, lc := range loadLifecycles(t) {
		for i, line := range lc.lines {
			rec := journal.Record{Stream: "task/" + lc.name, Seq: uint64(i + 1), ID: fmt.Sprintf("%s#%d", lc.name, i+1),
				Kind: member(t, line), ContentType: "application/a2a+json", Payload: line}
			want := decodeV1(t, line)
			for _, version := range []string{"1.0", "0.3"} {
				path := map[string]string{"1.0": "/v1", "0.3": "/v03"}[version]
				r := push.Registration{Stream: rec.Stream, ID: "push", Namespace: a2a.Namespace, URL: rcv.URL + path,
					Config: push.Config(`{` + corpusConfig + `,"version":"` + version + `"}`)}
				msgs, err := p.Messages(ctx, rec, r)
				if err != nil {
					t.Fatalf("%s v%s: %v", rec.ID, version, err)
				}
				if len(msgs) != 1 || msgs[0].ID != rec.ID {
					t.Fatalf("%s v%s: %d messages, want one with the record id", rec.ID, version, len(msgs))
				}
				before := len(rcv.deliveries())
				out := projtest.Deliver(t, r.URL, msgs[0], time.Time{})
				ds := rcv.deliveries()
				if len(ds) != before+1 {
					t.Fatalf("%s v%s: the receiver got %d requests, want 1: %s", rec.ID, version, len(ds)-before, projtest.Failure(out))
				}
				d := ds[len(ds)-1]
				if out.Status != http.StatusNoContent || d.err != nil {
					t.Fatalf("%s v%s: receiver answered %s: %v", rec.ID, version, projtest.Failure(out), d.err)
				}
				if d.auth != "Bearer "+credentials || d.token != token || d.legacyToken != token {
					t.Errorf("%s v%s: Authorization %q, tokens %q and %q; want the configured ones", rec.ID, version, d.auth, d.token, d.legacyToken)
				}
				if version == "1.0" {
					if d.contentType != a2a.ContentType10 || !reflect.DeepEqual(d.v1, want) {
						t.Errorf("%s: received %s %#v, want %s %#v", rec.ID, d.contentType, d.v1, a2a.ContentType10, want)
					}
					continue
				}
				if d.contentType != a2a.ContentType03 {
					t.Errorf("%s v0.3: Content-Type %q", rec.ID, d.contentType)
				}
				checkV03(t, rec.ID, want, d.v03)
			}
		}
	}
}

// checkV03 compares the v0.3 Task received for a line with the line.
func checkV03(t *testing.T, id string, want v1.Event, got *v03.Task) {
	t.Helper()
	info := want.TaskInfo()
	if string(got.ID) != string(info.TaskID) || got.ContextID != info.ContextID {
		t.Errorf("%s v0.3: task %q context %q, want %q %q", id, got.ID, got.ContextID, info.TaskID, info.ContextID)
	}
	var status *v1.TaskStatus
	switch e := want.(type) {
	case *v1.Task:
		status = &e.Status
	case *v1.TaskStatusUpdateEvent:
		status = &e.Status
	case *v1.TaskArtifactUpdateEvent:
		if got.Status.State != v03.TaskStateWorking || len(got.Artifacts) != 1 || string(got.Artifacts[0].ID) != string(e.Artifact.ID) ||
			got.Artifacts[0].Name != e.Artifact.Name || len(got.Artifacts[0].Parts) != len(e.Artifact.Parts) {
			t.Errorf("%s v0.3: state %q, artifacts %#v; want working and artifact %q with %d parts", id, got.Status.State, got.Artifacts, e.Artifact.ID, len(e.Artifact.Parts))
			return
		}
		for i, p := range e.Artifact.Parts {
			checkPart03(t, id, p, got.Artifacts[0].Parts[i])
		}
		return
	}
	if got.Status.State != state03(status.State) || !timesEqual(got.Status.Timestamp, status.Timestamp) {
		t.Errorf("%s v0.3: status %q at %v, want %q at %v", id, got.Status.State, got.Status.Timestamp, state03(status.State), status.Timestamp)
	}
	if (got.Status.Message == nil) != (status.Message == nil) {
		t.Fatalf("%s v0.3: status message %v, want %v", id, got.Status.Message, status.Message)
	}
	if m := status.Message; m != nil {
		g := got.Status.Message
		if g.ID != m.ID || string(g.Role) != strings.ToLower(strings.TrimPrefix(string(m.Role), "ROLE_")) || len(g.Parts) != len(m.Parts) {
			t.Fatalf("%s v0.3: status message %#v, want %#v", id, g, m)
		}
		for i, p := range m.Parts {
			checkPart03(t, id, p, g.Parts[i])
		}
	}
}

func checkPart03(t *testing.T, id string, want *v1.Part, got v03.Part) {
	t.Helper()
	switch c := want.Content.(type) {
	case v1.Text:
		if tp, ok := got.(v03.TextPart); !ok || tp.Text != string(c) {
			t.Errorf("%s v0.3: part %#v, want text %q", id, got, c)
		}
	case v1.Raw:
		fp, ok := got.(v03.FilePart)
		fb, ok2 := fp.File.(v03.FileBytes)
		if !ok || !ok2 {
			t.Errorf("%s v0.3: part %#v, want file bytes", id, got)
			return
		}
		// The v0.3 receiver's own reading: base64 of the raw bytes.
		var raw []byte
		if err := json.Unmarshal([]byte(`"`+fb.Bytes+`"`), &raw); err != nil || string(raw) != string(c) {
			t.Errorf("%s v0.3: file bytes do not decode to the raw part (%v)", id, err)
		}
	default:
		t.Errorf("%s: corpus part %T not covered by this test", id, c)
	}
}

func timesEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// TestWorkerCompletesAtTerminalLine runs a real push.Worker over each
// lifecycle, one record a page (a turn goes on from page to page, so one
// sweep serves them all): the turn serves every line up to the first with a
// terminal state (by the SDK's own TaskState.Terminal), no fewer, and that
// line completes and deletes the registration; a record appended after
// that line is never delivered.
func TestWorkerCompletesAtTerminalLine(t *testing.T) {
	rcv := newReceiver(t)
	ctx := context.Background()
	for _, version := range []string{"1.0", "0.3"} {
		for _, lc := range loadLifecycles(t) {
			terminal := -1
			for i, line := range lc.lines {
				ev := decodeV1(t, line)
				var st v1.TaskState
				switch e := ev.(type) {
				case *v1.Task:
					st = e.Status.State
				case *v1.TaskStatusUpdateEvent:
					st = e.Status.State
				}
				if st.Terminal() {
					terminal = i
					break
				}
			}
			if terminal < 0 {
				t.Fatalf("%s: no line with a terminal state; the corpus says each lifecycle ends in one", lc.name)
			}

			db := memory.New()
			stream := "task/" + lc.name + "/" + version
			entries := make([]journal.Entry, 0, len(lc.lines)+1)
			for i, line := range lc.lines {
				entries = append(entries, journal.Entry{ID: fmt.Sprintf("%s#%d", stream, i+1), Kind: member(t, line),
					ContentType: "application/a2a+json", Payload: line})
			}
			// Written here: a status update after the end, which must stay unsent.
			entries = append(entries, journal.Entry{ID: stream + "#late", Kind: "statusUpdate", ContentType: "application/a2a+json",
				Payload: []byte(`{"statusUpdate":{"taskId":"late","contextId":"late","status":{"state":"TASK_STATE_WORKING"}}}`)})
			if _, err := db.Append(ctx, stream, entries...); err != nil {
				t.Fatal(err)
			}
			w, err := push.NewWorker(db, db, projtest.Transport(t), a2a.New(), push.WithDrainPage(1), push.WithOwner("test"), push.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			path := map[string]string{"1.0": "/v1", "0.3": "/v03"}[version]
			if _, err := w.Register(ctx, push.Registration{Stream: stream, ID: "push", URL: rcv.URL + path,
				Config: push.Config(`{` + corpusConfig + `,"version":"` + version + `"}`)}); err != nil {
				t.Fatal(err)
			}
			before := len(rcv.deliveries())
			at := time.Date(2026, 3, 15, 11, 0, 0, 0, time.UTC)
			rep, err := w.RunOnce(ctx, at, 10)
			if err != nil {
				t.Fatalf("%s v%s: %v", lc.name, version, err)
			}
			_, getErr := db.Get(ctx, stream, "push")
			if !errors.Is(getErr, journal.ErrNotFound) || rep.Completed != 1 || rep.Records != terminal+1 {
				t.Fatalf("%s v%s: %+v, Get: %v; want the %d lines up to the terminal one served and the registration completed and deleted",
					lc.name, version, rep, getErr, terminal+1)
			}
			for i := 1; i <= 2; i++ {
				rep, err := w.RunOnce(ctx, at.Add(time.Duration(i)*time.Second), 10)
				if err != nil || rep.Registrations != 0 || rep.Records != 0 {
					t.Fatalf("%s v%s sweep %d after completion served %+v (%v)", lc.name, version, i, rep, err)
				}
			}
			sent := rcv.deliveries()[before:]
			wantSent := terminal + 1
			if version == "0.3" {
				wantSent = 0
				for _, line := range lc.lines[:terminal+1] {
					if member(t, line) != "message" {
						wantSent++
					}
				}
			}
			if len(sent) != wantSent {
				t.Errorf("%s v%s: %d notifications sent, want %d (every line up to the terminal one, none after)", lc.name, version, len(sent), wantSent)
			}
			for _, d := range sent {
				if d.err != nil || (d.v1 != nil && d.v1.TaskInfo().TaskID == "late") || (d.v03 != nil && d.v03.ID == "late") {
					t.Errorf("%s v%s: bad or late delivery: %+v", lc.name, version, d)
				}
			}
		}
	}
}
