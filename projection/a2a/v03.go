package a2a

import (
	"encoding/base64"
	"maps"

	v03 "github.com/a2aproject/a2a-go/a2a"
	v1 "github.com/a2aproject/a2a-go/v2/a2a"
)

// states03 and roles03 map the A2A 1.0 task states (§4.1.3) and roles a
// payload may carry to v0.3's spellings (package doc, "v0.3 compatibility").
var states03 = map[v1.TaskState]v03.TaskState{
	v1.TaskStateSubmitted:     v03.TaskStateSubmitted,
	v1.TaskStateWorking:       v03.TaskStateWorking,
	v1.TaskStateInputRequired: v03.TaskStateInputRequired,
	v1.TaskStateAuthRequired:  v03.TaskStateAuthRequired,
	v1.TaskStateCompleted:     v03.TaskStateCompleted,
	v1.TaskStateFailed:        v03.TaskStateFailed,
	v1.TaskStateCanceled:      v03.TaskStateCanceled,
	v1.TaskStateRejected:      v03.TaskStateRejected,
}

var roles03 = map[v1.MessageRole]v03.MessageRole{
	v1.MessageRoleAgent: v03.MessageRoleAgent,
	v1.MessageRoleUser:  v03.MessageRoleUser,
}

// task03 builds the v0.3 Task for a checked event, or nil for a message.
func task03(ev v1.Event) *v03.Task {
	switch e := ev.(type) {
	case *v1.Task:
		t := &v03.Task{ID: v03.TaskID(e.ID), ContextID: e.ContextID, Status: status03(e.Status), Metadata: e.Metadata}
		for _, a := range e.Artifacts {
			t.Artifacts = append(t.Artifacts, artifact03(a))
		}
		for _, m := range e.History {
			t.History = append(t.History, message03(m))
		}
		return t
	case *v1.TaskStatusUpdateEvent:
		return &v03.Task{ID: v03.TaskID(e.TaskID), ContextID: e.ContextID, Status: status03(e.Status), Metadata: e.Metadata}
	case *v1.TaskArtifactUpdateEvent:
		return &v03.Task{ID: v03.TaskID(e.TaskID), ContextID: e.ContextID, Metadata: e.Metadata,
			Status: v03.TaskStatus{State: v03.TaskStateWorking}, Artifacts: []*v03.Artifact{artifact03(e.Artifact)}}
	}
	return nil
}

func status03(s v1.TaskStatus) v03.TaskStatus {
	out := v03.TaskStatus{State: states03[s.State], Timestamp: s.Timestamp}
	if s.Message != nil {
		out.Message = message03(s.Message)
	}
	return out
}

func message03(m *v1.Message) *v03.Message {
	out := &v03.Message{ID: m.ID, ContextID: m.ContextID, Extensions: m.Extensions, Metadata: m.Metadata,
		Parts: parts03(m.Parts), Role: roles03[m.Role], TaskID: v03.TaskID(m.TaskID)}
	for _, id := range m.ReferenceTasks {
		out.ReferenceTasks = append(out.ReferenceTasks, v03.TaskID(id))
	}
	return out
}

func artifact03(a *v1.Artifact) *v03.Artifact {
	return &v03.Artifact{ID: v03.ArtifactID(a.ID), Description: a.Description, Extensions: a.Extensions,
		Metadata: a.Metadata, Name: a.Name, Parts: parts03(a.Parts)}
}

func parts03(parts v1.ContentParts) v03.ContentParts {
	out := make(v03.ContentParts, 0, len(parts)) // v0.3 requires "parts", even empty
	for _, p := range parts {
		out = append(out, part03(p))
	}
	return out
}

func part03(p *v1.Part) v03.Part {
	meta := v03.FileMeta{MimeType: p.MediaType, Name: p.Filename}
	switch c := p.Content.(type) {
	case v1.Raw:
		return v03.FilePart{File: v03.FileBytes{FileMeta: meta, Bytes: base64.StdEncoding.EncodeToString(c)}, Metadata: p.Metadata}
	case v1.URL:
		return v03.FilePart{File: v03.FileURI{FileMeta: meta, URI: string(c)}, Metadata: p.Metadata}
	case v1.Data:
		if obj, ok := c.Value.(map[string]any); ok {
			return v03.DataPart{Data: obj, Metadata: p.Metadata}
		}
		meta := make(map[string]any, len(p.Metadata)+1)
		maps.Copy(meta, p.Metadata)
		meta["data_part_compat"] = true
		return v03.DataPart{Data: map[string]any{"value": c.Value}, Metadata: meta}
	case v1.Text:
		return v03.TextPart{Text: string(c), Metadata: p.Metadata}
	}
	return v03.TextPart{Metadata: p.Metadata} // unreachable: the SDK decodes exactly one content
}
