package demo

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/heraldpush/herald/internal/corpustest"
	"github.com/heraldpush/herald/journal"
)

// corpusDir is the corpus input (internal/corpustest): testdata/corpus,
// or the shared corpus when HERALD_CORPUS names it.
func corpusDir(t testing.TB) string {
	t.Helper()
	return corpustest.Dir(t, "")
}

// validInput checks what every input must be for the journal: valid
// batches, ids unique across the whole input.
func validInput(t *testing.T, in *Input) {
	t.Helper()
	ids := map[string]string{}
	for _, s := range in.all() {
		_, err := journal.ValidateEntries(s.Name, s.Entries, 0)
		require.NoError(t, err, s.Name)
		for _, e := range s.Entries {
			require.NotContains(t, ids, e.ID, "record id %s in %s and %s", e.ID, ids[e.ID], s.Name)
			ids[e.ID] = s.Name
		}
	}
}

func TestExamples(t *testing.T) {
	in, err := Examples()
	require.NoError(t, err)
	validInput(t, in)
	names := func(ss []Stream) (out []string) {
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	require.Equal(t, []string{"actor/alice", "actor/carol"}, names(in.Actors))
	require.Equal(t, []string{"webhooks/shop"}, names(in.Webhooks))
	require.Equal(t, []string{"task/9a7e3b1c-24d6-4f0a-8e5b-c61d2f7a4e93", "task/3c1f6a52-8d0e-4b7a-9f21-0d5e7c4b2a10"}, names(in.Tasks))
	require.Equal(t, Origin+"/users/alice", in.Actors[0].Actor)

	kinds := map[string]bool{}
	var bcc bool
	for _, e := range slices.Concat(in.Actors[0].Entries, in.Actors[1].Entries) {
		kinds[e.Kind] = true
		bcc = bcc || strings.Contains(string(e.Payload), `"bcc"`)
		require.True(t, strings.HasPrefix(e.ID, Origin+"/users/"), "the examples carry their own ids: %s", e.ID)
	}
	require.True(t, kinds["Create"] && kinds["Block"], "a Create and a Block: %v", kinds)
	require.True(t, bcc, "an activity with bcc")
	var wh []string
	for _, e := range in.Webhooks[0].Entries {
		wh = append(wh, e.ID+" "+e.Kind)
	}
	require.Equal(t, []string{"shop-customer-01-updated shop.customer.updated", "shop-invoice-01-issued shop.invoice.issued",
		"shop-order-01-created shop.order.created", "shop-order-02-paid shop.order.paid", "shop-order-03-shipped shop.order.shipped"}, wh)
	last := in.Tasks[1].Entries[len(in.Tasks[1].Entries)-1]
	require.Equal(t, "statusUpdate", last.Kind)
	require.Contains(t, string(last.Payload), "TASK_STATE_COMPLETED")
}

// The corpus is read where it lies; activities without ids are completed
// deterministically, with their own addressing kept when they have one.
func TestCorpus(t *testing.T) {
	dir := corpusDir(t)
	in, err := Corpus(dir)
	require.NoError(t, err)
	validInput(t, in)
	again, err := Corpus(dir)
	require.NoError(t, err)
	require.Equal(t, in, again, "the same corpus gives the same input")

	activities, _ := filepath.Glob(filepath.Join(dir, "activitystreams", "*.json"))
	payloads, _ := filepath.Glob(filepath.Join(dir, "github", "*", "*.json"))
	tasks, _ := filepath.Glob(filepath.Join(dir, "a2a", "*.jsonl"))
	n := 0
	for _, s := range in.Actors {
		n += len(s.Entries)
	}
	require.Equal(t, len(activities), n)
	require.Len(t, in.Webhooks, 1)
	require.Equal(t, "webhooks/github", in.Webhooks[0].Name)
	require.Positive(t, len(activities)*len(payloads)*len(tasks), "every kind of input")
	require.Len(t, in.Webhooks[0].Entries, len(payloads))
	require.Len(t, in.Tasks, len(tasks))

	byID := map[string]map[string]any{}
	for _, s := range in.Actors {
		for _, e := range s.Entries {
			var act map[string]any
			require.NoError(t, json.Unmarshal(e.Payload, &act))
			require.Equal(t, s.Actor, act["actor"], "%s is in its actor's stream", e.ID)
			byID[e.ID] = act
		}
	}
	for _, s := range in.Webhooks[0].Entries {
		require.NotContains(t, s.ID, ".", "webhook ids keep no dot")
	}
	if !corpustest.Shared() {
		block := byID[Origin+"/activities/block"] // a string actor is kept, and addressed to the inbox's actor
		require.Equal(t, "https://ines.example/users/ines", block["actor"])
		require.Equal(t, []any{InboxActor}, block["to"])
		like := byID[Origin+"/activities/like"] // an actor object becomes the default actor
		require.Equal(t, DefaultActor, like["actor"])
		announce := byID[Origin+"/activities/announce"]
		require.Nil(t, announce, "an activity with its own id keeps it")
		hidden := byID[Origin+"/activities/create-hidden"]
		require.Equal(t, "https://ines.example/users/ines/followers", hidden["bcc"], "bcc is appended; the projection removes it")
		return
	}
	// What the shared corpus holds (the W3C examples, octokit's payloads).
	block := byID[Origin+"/activities/ex173-jsonld"] // "Sally blocked Joe": a string actor is kept
	require.Equal(t, "http://sally.example.org", block["actor"])
	require.Equal(t, []any{InboxActor}, block["to"])
	listen := byID[Origin+"/activities/ex101-jsonld"] // an actor object becomes the default actor
	require.Equal(t, DefaultActor, listen["actor"])
	offer := byID[Origin+"/activities/ex123-jsonld"] // its own "to" is kept
	require.Equal(t, "http://joe.example.org", offer["to"])
	withBcc := byID[Origin+"/activities/ex68-jsonld"]
	require.Equal(t, "http://joe.example.org", withBcc["bcc"], "bcc is appended; the projection removes it")

	var kinds []string
	for _, e := range in.Webhooks[0].Entries {
		require.NotContains(t, e.ID, ".", "webhook ids keep no dot")
		if e.ID == "github-pull_request-opened-with-null-body" {
			kinds = append(kinds, e.Kind)
		}
	}
	require.Equal(t, []string{"github.pull_request.opened"}, kinds)
}

func TestCorpusRefusals(t *testing.T) {
	_, err := Corpus(filepath.Join(t.TempDir(), "nope"))
	require.ErrorContains(t, err, "laid out as testdata/corpus")

	for name, c := range map[string]struct {
		files fstest.MapFS
		want  string
	}{
		"nothing":   {fstest.MapFS{"README.md": {Data: []byte("hi")}}, "has no activitystreams/*.json, no <source>/<event>/*.json, no a2a/*.jsonl"},
		"no type":   {fstest.MapFS{"activitystreams/x.json": {Data: []byte(`{"id":"https://a.example/1","actor":"https://a.example/users/a"}`)}}, `activitystreams/x.json: invalid kind: is empty`},
		"no task":   {fstest.MapFS{"a2a/t.jsonl": {Data: []byte(`{"statusUpdate":{"contextId":"c"}}`)}}, "a2a/t.jsonl line 1: statusUpdate has no task id"},
		"not json":  {fstest.MapFS{"hooks/ping/a.json": {Data: []byte(`[1]`)}}, "hooks/ping/a.json is not a JSON object"},
		"same id":   {fstest.MapFS{"hooks/ping/a.b.json": {Data: []byte(`{}`)}, "hooks/ping/a-b.json": {Data: []byte(`{}`)}}, `both make the record id "hooks-ping-a-b"`},
		"two tasks": {fstest.MapFS{"a2a/t.jsonl": {Data: []byte(`{"task":{"id":"a"}}` + "\n" + `{"statusUpdate":{"taskId":"b"}}`)}}, "task b, but the file began with a"},
	} {
		_, err := load(c.files, name)
		require.ErrorContains(t, err, c.want, name)
	}
}
