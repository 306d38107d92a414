package a2a

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/heraldpush/herald/journal"
)

// members are the fields of a StreamResponse, exactly one of which is set
// (A2A 1.0 §3.2.3; a2a.proto, message StreamResponse, oneof payload).
var members = []string{"task", "message", "statusUpdate", "artifactUpdate"}

// parse decodes a payload as an A2A 1.0 StreamResponse with the SDK and
// checks what the SDK leaves open: one member and nothing else, the ids the
// spec requires, known states and roles. Errors wrap journal.ErrInvalid and
// name the field ("payload.statusUpdate.status.state").
func parse(payload []byte) (v1.Event, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(payload, &top); err != nil || top == nil {
		return nil, journal.Invalid("payload", "is not a JSON object, so not an A2A StreamResponse")
	}
	var set []string
	for _, k := range slices.Sorted(maps.Keys(top)) { // sorted: the same payload, the same error
		if !slices.Contains(members, k) {
			return nil, journal.Invalid("payload", "has the member %q: a StreamResponse has exactly one of %s and nothing else", k, strings.Join(members, ", "))
		}
		if string(top[k]) != "null" {
			set = append(set, k)
		}
	}
	if len(set) != 1 {
		return nil, journal.Invalid("payload", "has %d of %s (%s): a StreamResponse has exactly one", len(set), strings.Join(members, ", "), strings.Join(set, ", "))
	}
	field := "payload." + set[0]
	var sr v1.StreamResponse
	if err := json.Unmarshal(payload, &sr); err != nil {
		return nil, journal.Invalid(field, "is not an A2A 1.0 %s: %v", set[0], err)
	}
	if err := check(field, sr.Event); err != nil {
		return nil, err
	}
	return sr.Event, nil
}

// check returns the first problem of ev, the event of the member field.
func check(field string, ev v1.Event) error {
	switch e := ev.(type) {
	case *v1.Task:
		errs := []error{nonEmpty(field+".id", string(e.ID)), nonEmpty(field+".contextId", e.ContextID), checkStatus(field+".status", e.Status)}
		for i, m := range e.History {
			errs = append(errs, checkMessage(fmt.Sprintf("%s.history[%d]", field, i), m))
		}
		for i, a := range e.Artifacts {
			errs = append(errs, checkArtifact(fmt.Sprintf("%s.artifacts[%d]", field, i), a))
		}
		return firstError(errs...)
	case *v1.TaskStatusUpdateEvent:
		return firstError(nonEmpty(field+".taskId", string(e.TaskID)), nonEmpty(field+".contextId", e.ContextID), checkStatus(field+".status", e.Status))
	case *v1.TaskArtifactUpdateEvent:
		return firstError(nonEmpty(field+".taskId", string(e.TaskID)), nonEmpty(field+".contextId", e.ContextID), checkArtifact(field+".artifact", e.Artifact))
	case *v1.Message:
		return checkMessage(field, e)
	}
	return nil
}

func checkStatus(field string, s v1.TaskStatus) error {
	if s.State == v1.TaskStateUnspecified {
		return journal.Invalid(field+".state", "is missing or TASK_STATE_UNSPECIFIED")
	}
	if _, known := states03[s.State]; !known {
		hint := ""
		if !strings.HasPrefix(string(s.State), "TASK_STATE_") {
			hint = " (A2A 0.3 spellings such as \"completed\" are not 1.0 payloads)"
		}
		return journal.Invalid(field+".state", "%q is not an A2A 1.0 task state%s", string(s.State), hint)
	}
	if s.Message != nil {
		return checkMessage(field+".message", s.Message)
	}
	return nil
}

func checkMessage(field string, m *v1.Message) error {
	if m == nil {
		return journal.Invalid(field, "is null")
	}
	var role error
	if _, known := roles03[m.Role]; !known {
		role = journal.Invalid(field+".role", "%q is not ROLE_USER or ROLE_AGENT", string(m.Role))
	}
	return firstError(nonEmpty(field+".messageId", m.ID), role, checkParts(field+".parts", m.Parts))
}

func checkArtifact(field string, a *v1.Artifact) error {
	if a == nil {
		return journal.Invalid(field, "is missing")
	}
	return firstError(nonEmpty(field+".artifactId", string(a.ID)), checkParts(field+".parts", a.Parts))
}

func nonEmpty(field, s string) error {
	if s == "" {
		return journal.Invalid(field, "is empty")
	}
	return nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func checkParts(field string, parts v1.ContentParts) error {
	for i, p := range parts {
		if p == nil {
			return journal.Invalid(fmt.Sprintf("%s[%d]", field, i), "is null")
		}
	}
	return nil
}
