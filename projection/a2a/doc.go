// Package a2a is herald's A2A projection, for the "a2a" namespace: push
// notifications of the Agent2Agent protocol 1.0, with a compatibility mode
// for 0.3 receivers. A registration is one push notification config of one
// task (A2A 1.0 §4.3.1), following the task's stream.
//
// # Records and messages
//
// Each record's payload is an A2A 1.0 StreamResponse (§3.2.3), in 1.0
// spellings ("TASK_STATE_WORKING", "ROLE_AGENT"); the record kind is free.
// Messages decodes it with the a2a-go SDK (github.com/a2aproject/a2a-go/v2)
// and refuses, naming the field, a payload without exactly one member, a
// missing id, or a state or role 1.0 does not define (0.3's "completed"
// included).
//
// Version 1.0 (the default) sends the payload as appended (§4.3.3) as
// application/a2a+json (§14.1.1), with "Authorization: <auth_scheme>
// <credentials>" (§4.3.2) and the token in both A2A-Notification-Token
// (a2a-go v2) and X-A2A-Notification-Token (A2A 0.3 §9.5) when the config
// ([Config]) has them. The message id is the record id (receivers dedupe,
// §4.3.3); the same record and registration give the same bytes.
//
// Terminal is true for a final record and for a terminal task state
// (§4.1.3) in a task or a status update.
//
// # v0.3 compatibility
//
// With config "version": "0.3" the body is a v0.3 Task (A2A 0.3 §6.1,
// §9.5), application/json, built from the one record alone: a task field by
// field; a statusUpdate as a Task with its taskId, contextId, status and
// metadata; an artifactUpdate as a Task with its one artifact as carried
// and state "working" (§4.1.3: a terminal task is immutable); a message
// gives no notification. A receiver that needs the whole task calls
// tasks/get. States, roles and parts take 0.3 spellings, as a2a-go's
// a2acompat/a2av0 maps them (not imported: it brings gRPC): raw and url
// parts become FileParts, a data part that is not an object becomes
// {"value": …} with metadata "data_part_compat": true; numbers in metadata
// and data pass through float64.
package a2a
