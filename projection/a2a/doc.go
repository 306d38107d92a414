// Package a2a is herald's A2A projection, for the "a2a" namespace: push
// notifications of the Agent2Agent protocol, version 1.0, with a
// compatibility mode for 0.3 receivers. A registration is one push
// notification config of one task (A2A 1.0 §4.3.1), following the task's
// stream.
//
// # Records
//
// Each record's payload is an A2A 1.0 StreamResponse (A2A 1.0 §3.2.3): a
// JSON object with exactly one of "task", "message", "statusUpdate" and
// "artifactUpdate", in the JSON spellings of the 1.0 spec (states such as
// "TASK_STATE_WORKING", roles "ROLE_AGENT", parts {"text"|"raw"|"data"|"url"}).
// The record kind is free (e.g. "statusUpdate"). Messages decodes the
// payload with the a2a-go SDK (github.com/a2aproject/a2a-go/v2, whose JSON
// encoding uses the spec's spellings) and refuses, with an error naming the
// field, a payload that is not a StreamResponse: zero or several members, a
// member of another name, a missing task, context, message or artifact id,
// a state or role the 1.0 spec does not define (0.3 spellings such as
// "completed" included).
//
// # Version 1.0 (the default)
//
// The body is the payload exactly as appended (A2A 1.0 §4.3.3: "the same
// StreamResponse format as streaming operations"), so fields the SDK does
// not know and numbers beyond float64 reach the receiver untouched.
// Content-Type is application/a2a+json (A2A 1.0 §14.1.1).
//
// # Headers
//
// From the registration's config ([Config]): "Authorization: <auth_scheme>
// <credentials>" (A2A 1.0 §4.3.3, §4.3.2 AuthenticationInfo) and the token
// in both A2A-Notification-Token (a2a-go v2) and X-A2A-Notification-Token
// (A2A 0.3 §9.5, A2A 1.0 §6.6, v0.3 SDKs). The message id is the record id,
// stable across retries (receivers SHOULD process notifications
// idempotently, §4.3.3).
//
// # End of a registration
//
// Terminal is true when the record is final or carries a terminal task
// state: TASK_STATE_COMPLETED, TASK_STATE_FAILED, TASK_STATE_CANCELED,
// TASK_STATE_REJECTED (A2A 1.0 §4.1.3). Once such a record is acknowledged
// the worker completes the registration: a finished task leaves nothing
// behind. TASK_STATE_INPUT_REQUIRED and TASK_STATE_AUTH_REQUIRED interrupt
// a task and do not end it. A payload that is not a StreamResponse counts
// only by its final flag.
//
// # v0.3 compatibility
//
// With config "version": "0.3" the body is a v0.3 Task (A2A 0.3 §9.5, §6.1),
// encoded by the a2a-go v0.3 SDK types (github.com/a2aproject/a2a-go), with
// Content-Type application/json. It is built from the one record alone, so
// that Messages stays a pure function of it:
//
//   - task: the Task, converted field by field.
//   - statusUpdate: a Task with the update's taskId as id, its contextId,
//     status and metadata; no artifacts or history (those are in other
//     records).
//   - artifactUpdate: a Task with the update's taskId, contextId and
//     metadata, the one artifact as the update carries it (with append:
//     true, only the new chunk's parts), and state "working": the record
//     carries no state, and an agent emits artifacts while it works (a task
//     in a terminal state is immutable, A2A 1.0 §4.1.3).
//   - message: no notification; v0.3 push notifications carry Tasks only,
//     and the cursor moves past the record.
//
// A v0.3 receiver that needs the whole task fetches it with tasks/get, as
// the 0.3 documentation advises. Spellings change as 0.3 wants them: states
// "TASK_STATE_COMPLETED" → "completed" and so on (A2A 0.3 §6.3), roles
// "ROLE_AGENT" → "agent", and every object gets its "kind" ("task",
// "message", "text", "file", "data"). Parts map as a2a-go's own
// compatibility layer (a2acompat/a2av0) maps them: text → TextPart; raw →
// FilePart with base64 "bytes"; url → FilePart with "uri" (filename and
// mediaType become the file's name and mimeType); data → DataPart, a value
// that is not an object wrapped as {"value": …} with metadata
// "data_part_compat": true, which a2a-go reads back. A text part's filename
// and mediaType have no 0.3 field and are dropped; numbers in metadata and
// data pass through float64, as the SDK decodes them. (a2acompat itself is
// not imported: it brings gRPC and the SDK's client and server, about 16 MB
// of binary, for a few field copies.)
//
// # Determinism
//
// Messages reads no clock and no random source; the v0.3 encoding writes
// struct fields in a fixed order and map keys sorted, so the same record and
// registration give byte-identical messages.
package a2a
