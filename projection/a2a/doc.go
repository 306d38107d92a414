// Package a2a is herald's A2A projection, for the "a2a" namespace: push
// notifications of the Agent2Agent protocol 1.0, with a compatibility mode
// for 0.3 receivers. A registration is one push notification config of one
// task (A2A 1.0 §4.3.1), following the task's stream.
//
// # Records and messages
//
// Each record's payload is an A2A 1.0 StreamResponse (§3.2.3): a JSON
// object with exactly one of "task", "message", "statusUpdate" and
// "artifactUpdate", in the 1.0 spellings ("TASK_STATE_WORKING",
// "ROLE_AGENT", parts {"text"|"raw"|"data"|"url"}); the record kind is
// free. Messages decodes it with the a2a-go SDK
// (github.com/a2aproject/a2a-go/v2) and refuses, naming the field, a
// payload with zero or several members or another one, a missing task,
// context, message or artifact id, or a state or role 1.0 does not define
// (0.3's "completed" included).
//
// Version 1.0 (the default) sends the payload exactly as appended (§4.3.3:
// "the same StreamResponse format as streaming operations") as
// application/a2a+json (§14.1.1), with "Authorization: <auth_scheme>
// <credentials>" (§4.3.2) and the token in both A2A-Notification-Token
// (a2a-go v2) and X-A2A-Notification-Token (A2A 0.3 §9.5, v0.3 SDKs) when
// the config ([Config]) has them. The message id is the record id:
// receivers SHOULD process notifications idempotently (§4.3.3). The same
// record and registration give byte-identical messages, in either version.
//
// Terminal is true for a final record and for a terminal task state
// (COMPLETED, FAILED, CANCELED, REJECTED, §4.1.3) in a task or a status
// update; once acknowledged, the registration completes. A payload that is
// not a StreamResponse counts by its final flag only.
//
// # v0.3 compatibility
//
// With config "version": "0.3" the body is a v0.3 Task (A2A 0.3 §9.5,
// §6.1) encoded with the a2a-go v0.3 types (github.com/a2aproject/a2a-go),
// as application/json, built from the one record alone:
//
//   - task: the Task, field by field.
//   - statusUpdate: a Task with the update's taskId as id, its contextId,
//     status and metadata (artifacts and history are in other records).
//   - artifactUpdate: a Task with the update's taskId, contextId and
//     metadata, its one artifact as carried (with append, only the new
//     chunk's parts), and state "working": agents emit artifacts while they
//     work (a terminal task is immutable, §4.1.3).
//   - message: no notification (v0.3 push notifications carry Tasks); the
//     cursor moves on.
//
// A receiver that needs the whole task fetches it with tasks/get, as 0.3
// advises. States and roles take 0.3 spellings ("completed", "agent",
// §6.3) and every object its "kind". Parts map as a2a-go's a2acompat/a2av0
// maps them (not imported: it brings gRPC and about 16 MB of binary): text
// → TextPart; raw → FilePart with base64 "bytes"; url → FilePart with
// "uri" (filename and mediaType become name and mimeType); data → DataPart,
// a value that is not an object wrapped as {"value": …} with metadata
// "data_part_compat": true. A text part's filename and mediaType are
// dropped; numbers in metadata and data pass through float64.
package a2a
