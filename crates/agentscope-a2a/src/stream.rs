//! `SendStreamingMessage` over JSON-RPC, with each event serialised once.
//!
//! The SDK's JSON-RPC binding turns every streamed event into its protobuf form, encodes
//! and decodes it to reach the ProtoJSON types, builds a `serde_json::Value` from those,
//! copies that `Value` into the JSON-RPC envelope as another `Value`, and only then writes
//! the text: under a thousand streams that was half of the server's CPU (docs/performance.md,
//! "1,000 concurrent runs: A2A `SendStreamingMessage`"). This middleware, on the SDK's
//! JSON-RPC route, takes a well-formed `SendStreamingMessage` request the SDK would serve
//! (JSON-RPC 2.0, `A2A-Version` 1.x, parameters the SDK's own ProtoJSON reader accepts,
//! a `Content-Length` within the SDK's body limit), hands it to the same request handler,
//! and writes each event straight into the envelope:
//!
//! - a status update of the shape every streamed token has (text parts, string metadata)
//!   is written directly, in the bytes the SDK writes for it (the tests compare them);
//! - any other event goes through the SDK's own ProtoJSON conversion, once, and is written
//!   into the envelope without the intermediate copy.
//!
//! The SSE framing is the SDK's: event ids counting from 1, a keep-alive comment every 15
//! seconds. One difference in timing: the response's head is sent with the first event (the
//! task, ready as soon as the turn starts), not before it, unless that takes more than a
//! second (see [`send_streaming_message`]). Everything else (other methods, a request the SDK would refuse, a body without
//! a length) goes on to the SDK's binding untouched, which answers it as before.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use a2a::{
    A2AError, JsonRpcId, JsonRpcRequest, JsonRpcResponse, PartContent, Role, SendMessageRequest,
    StreamResponse, TaskState, TaskStatusUpdateEvent, methods,
};
use a2a_pb::protojson_conv;
use a2a_server::{RequestHandler, ServiceParams};
use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use chrono::SecondsFormat;
use futures::StreamExt;
use serde_json::Value;

use crate::handler::Handler;

/// The SDK's keep-alive interval on SSE responses (`a2a_server::sse`).
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How long a response waits for its first event before its head is sent alone.
const FIRST_EVENT_WAIT: Duration = Duration::from_secs(1);

/// The middleware on the SDK's JSON-RPC route: serves `SendStreamingMessage`, passes the
/// rest on.
pub(crate) async fn send_streaming_message(
    State(handler): State<Arc<Handler>>,
    request: Request,
    next: Next,
) -> Response {
    let within_limit = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok()?.parse::<usize>().ok())
        .is_some_and(|length| length <= a2a_server::jsonrpc::MAX_REQUEST_BODY_BYTES);
    if !within_limit {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, a2a_server::jsonrpc::MAX_REQUEST_BODY_BYTES).await
    {
        Ok(bytes) => bytes,
        Err(_) => {
            return (StatusCode::BAD_REQUEST, "Failed to buffer the request body").into_response();
        }
    };
    let Some((id, req)) = streaming_request(&parts.headers, &bytes) else {
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    let params = service_params(&parts.headers);
    // The turn starts (its context's session taken and read) before the handler answers:
    // a turn that cannot start within `FIRST_EVENT_WAIT` (a store that does not answer) gets
    // its head sent alone, its events (or its error) after, as with the SDK's binding.
    let handler = Arc::clone(&handler);
    let mut start = Box::pin(async move { handler.send_streaming_message(&params, req).await });
    let started = tokio::time::timeout(FIRST_EVENT_WAIT, &mut start).await;
    let (stream, wait) = match started {
        Ok(Err(error)) => {
            return (
                StatusCode::OK,
                Json(JsonRpcResponse::error(id, error.to_jsonrpc_error())),
            )
                .into_response();
        }
        Ok(Ok(stream)) => (stream, true),
        Err(_) => {
            let later = futures::stream::once(start)
                .flat_map(|started| match started {
                    Ok(stream) => stream,
                    Err(error) => futures::stream::iter([Err(error)]).boxed(),
                })
                .boxed();
            (later, false)
        }
    };
    // The response waits for its first event (the task, sent as soon as the turn starts),
    // so the head and that event leave in one write. Sent apart, the event is a second
    // small segment, which Nagle's algorithm holds until the client acknowledges the head,
    // and on a kept-alive connection a client delays that acknowledgement (40 ms on Linux).
    let mut stream = stream.fuse();
    let first = if wait {
        tokio::time::timeout(FIRST_EVENT_WAIT, stream.next())
            .await
            .ok()
            .flatten()
    } else {
        None
    };
    let mut event_id = 0u64;
    let events = futures::stream::iter(first).chain(stream).map(move |item| {
        event_id += 1;
        let data = envelope(&id, item);
        Ok::<_, Infallible>(Event::default().id(event_id.to_string()).data(data))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response()
}

/// The request's id and parameters, when it is a `SendStreamingMessage` the SDK would
/// serve; `None` leaves it to the SDK (which answers any error).
fn streaming_request(headers: &HeaderMap, body: &[u8]) -> Option<(JsonRpcId, SendMessageRequest)> {
    // Other methods are not parsed twice (the SDK parses them).
    let method = methods::SEND_STREAMING_MESSAGE.as_bytes();
    if !body.windows(method.len()).any(|window| window == method) {
        return None;
    }
    let request: JsonRpcRequest = serde_json::from_slice(body).ok()?;
    if request.jsonrpc != "2.0" || request.method != methods::SEND_STREAMING_MESSAGE {
        return None;
    }
    // The SDK's rule: the first readable `A2A-Version`, "0.3" when absent, major 1 only.
    let version = headers
        .get_all("a2a-version")
        .iter()
        .find_map(|value| value.to_str().ok())?;
    if version.trim().split('.').next()?.parse::<u32>().ok()? != 1 {
        return None;
    }
    let params = request.params.unwrap_or(Value::Null);
    let req = protojson_conv::from_value::<SendMessageRequest>(params).ok()?;
    Some((request.id, req))
}

/// The request's headers as the SDK gives them to the handler: each readable value, by
/// lower-case name, in order.
fn service_params(headers: &HeaderMap) -> ServiceParams {
    let mut params = ServiceParams::new();
    for (name, value) in headers {
        if let Ok(value) = value.to_str() {
            params
                .entry(name.as_str().to_owned())
                .or_default()
                .push(value.to_owned());
        }
    }
    params
}

/// One streamed item as the JSON-RPC response the SDK sends for it.
fn envelope(id: &JsonRpcId, item: Result<StreamResponse, A2AError>) -> String {
    let result = item.and_then(|event| {
        let mut out = Vec::with_capacity(1024);
        if let StreamResponse::StatusUpdate(update) = &event
            && direct(update)
        {
            begin(&mut out, id)?;
            write_status_update(&mut out, update)?;
        } else {
            let value = protojson_conv::to_value(&event).map_err(|e| {
                A2AError::internal(format!("failed to serialize ProtoJSON stream payload: {e}"))
            })?;
            begin(&mut out, id)?;
            serde_json::to_writer(&mut out, &value).map_err(write_error)?;
        }
        out.push(b'}');
        String::from_utf8(out).map_err(|_| A2AError::internal("the event is not UTF-8"))
    });
    result.unwrap_or_else(|error| {
        serde_json::to_string(&JsonRpcResponse::error(
            id.clone(),
            error.to_jsonrpc_error(),
        ))
        .unwrap_or_default()
    })
}

fn write_error(error: serde_json::Error) -> A2AError {
    A2AError::internal(format!("failed to serialize a stream event: {error}"))
}

/// `{"jsonrpc":"2.0","id":<id>,"result":`: the envelope's fields in the SDK's order.
fn begin(out: &mut Vec<u8>, id: &JsonRpcId) -> Result<(), A2AError> {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut *out, id).map_err(write_error)?;
    out.extend_from_slice(br#","result":"#);
    Ok(())
}

/// Whether `update` has the shape written directly: what ProtoJSON gives for it is known
/// field by field. Non-empty ids (ProtoJSON leaves an empty string out), a set state,
/// metadata absent or of string values; a message, if any, from the user or the agent,
/// with a non-empty id, and only text parts of non-empty text, nothing else set.
fn direct(update: &TaskStatusUpdateEvent) -> bool {
    let non_empty = |s: &Option<String>| s.as_ref().is_none_or(|s| !s.is_empty());
    !update.task_id.is_empty()
        && !update.context_id.is_empty()
        && update.status.state != TaskState::Unspecified
        && update
            .metadata
            .as_ref()
            .is_none_or(|metadata| !metadata.is_empty() && metadata.values().all(Value::is_string))
        && update.status.message.as_ref().is_none_or(|message| {
            matches!(message.role, Role::User | Role::Agent)
                && !message.message_id.is_empty()
                && non_empty(&message.context_id)
                && non_empty(&message.task_id)
                && message.metadata.is_none()
                && message.extensions.is_none()
                && message.reference_task_ids.is_none()
                && !message.parts.is_empty()
                && message.parts.iter().all(|part| {
                    matches!(&part.content, PartContent::Text(text) if !text.is_empty())
                        && part.filename.is_none()
                        && part.media_type.is_none()
                        && part.metadata.is_none()
                })
        })
}

/// `update` (one [`direct`] accepts) as the SDK writes it: ProtoJSON's names and values,
/// each object's keys in the order of the `serde_json::Value` the SDK writes from (sorted).
fn write_status_update(out: &mut Vec<u8>, update: &TaskStatusUpdateEvent) -> Result<(), A2AError> {
    out.extend_from_slice(br#"{"statusUpdate":{"contextId":"#);
    string(out, &update.context_id)?;
    if let Some(metadata) = &update.metadata {
        write_string_map(out, metadata)?;
    }
    out.extend_from_slice(br#","status":{"#);
    let status = &update.status;
    if let Some(message) = &status.message {
        out.extend_from_slice(br#""message":{"#);
        let mut comma = "";
        if let Some(context_id) = &message.context_id {
            out.extend_from_slice(br#""contextId":"#);
            string(out, context_id)?;
            comma = ",";
        }
        out.extend_from_slice(comma.as_bytes());
        out.extend_from_slice(br#""messageId":"#);
        string(out, &message.message_id)?;
        out.extend_from_slice(br#","parts":["#);
        for (i, part) in message.parts.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            if let PartContent::Text(text) = &part.content {
                out.extend_from_slice(br#"{"text":"#);
                string(out, text)?;
                out.push(b'}');
            }
        }
        out.extend_from_slice(br#"],"role":"#);
        out.extend_from_slice(match message.role {
            Role::User => br#""ROLE_USER""#.as_slice(),
            _ => br#""ROLE_AGENT""#.as_slice(),
        });
        if let Some(task_id) = &message.task_id {
            out.extend_from_slice(br#","taskId":"#);
            string(out, task_id)?;
        }
        out.extend_from_slice(b"},");
    }
    out.extend_from_slice(br#""state":"#);
    serde_json::to_writer(&mut *out, &status.state).map_err(write_error)?;
    if let Some(timestamp) = &status.timestamp {
        out.extend_from_slice(br#","timestamp":"#);
        string(out, &timestamp.to_rfc3339_opts(SecondsFormat::AutoSi, true))?;
    }
    out.extend_from_slice(br#"},"taskId":"#);
    string(out, &update.task_id)?;
    out.extend_from_slice(b"}}");
    Ok(())
}

/// `s` as a JSON string: as it is between quotes when nothing in it needs escaping (ids,
/// most text), else escaped by `serde_json`.
fn string(out: &mut Vec<u8>, s: &str) -> Result<(), A2AError> {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return Ok(());
    }
    serde_json::to_writer(&mut *out, s).map_err(write_error)
}

/// `,"metadata":{...}` with the keys sorted.
fn write_string_map(out: &mut Vec<u8>, metadata: &HashMap<String, Value>) -> Result<(), A2AError> {
    let mut entries: Vec<(&String, &Value)> = metadata.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.extend_from_slice(br#","metadata":{"#);
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, key).map_err(write_error)?;
        out.push(b':');
        serde_json::to_writer(&mut *out, value).map_err(write_error)?;
    }
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use a2a::{
        Artifact, Message, Part, Task, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent,
    };
    use chrono::TimeZone;

    /// What the SDK's JSON-RPC binding sends for `item` (`a2a_server::jsonrpc` and
    /// `a2a_server::sse`, step by step).
    fn sdk(id: &JsonRpcId, item: Result<StreamResponse, A2AError>) -> String {
        let item = item.and_then(|event| {
            protojson_conv::to_value(&event).map_err(|e| {
                A2AError::internal(format!("failed to serialize ProtoJSON stream payload: {e}"))
            })
        });
        let response = match item {
            Ok(value) => {
                JsonRpcResponse::success(id.clone(), serde_json::to_value(&value).unwrap())
            }
            Err(err) => JsonRpcResponse::error(id.clone(), err.to_jsonrpc_error()),
        };
        serde_json::to_string(&response).unwrap()
    }

    fn message(role: Role, texts: &[&str]) -> Message {
        let mut message = Message::new(role, texts.iter().map(|t| Part::text(*t)).collect());
        message.message_id = "m-1".into();
        message.task_id = Some("t-1".into());
        message.context_id = Some("c-1".into());
        message
    }

    fn update(state: TaskState, message: Option<Message>, kind: Option<&str>) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t-1".into(),
            context_id: "c-1".into(),
            status: TaskStatus {
                state,
                message,
                timestamp: Some(
                    chrono::Utc
                        .timestamp_opt(1_796_000_000, 846_477_544)
                        .unwrap(),
                ),
            },
            metadata: kind.map(|kind| HashMap::from([("agentscope.kind".into(), kind.into())])),
        })
    }

    fn is_direct(event: &StreamResponse) -> bool {
        matches!(event, StreamResponse::StatusUpdate(update) if direct(update))
    }

    /// Status updates of the shape written directly: the bytes the SDK sends, exactly.
    #[test]
    fn streamed_status_updates_are_written_as_the_sdk_writes_them() {
        let mut events = Vec::new();
        for state in [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Completed,
            TaskState::Failed,
            TaskState::Canceled,
            TaskState::InputRequired,
            TaskState::Rejected,
            TaskState::AuthRequired,
        ] {
            events.push(update(state.clone(), None, None));
            events.push(update(
                state,
                Some(message(Role::Agent, &["Hello"])),
                Some("text_delta"),
            ));
        }
        for text in [
            "Hi",
            " there, \"quoted\" \\ back/slash\nnew line\ttab \u{1} control",
            "ünïcödé 你好 🦀 \u{2028}",
            "</script>",
        ] {
            events.push(update(
                TaskState::Working,
                Some(message(Role::Agent, &[text, "second"])),
                Some("text_delta"),
            ));
        }
        events.push(update(
            TaskState::Working,
            Some(message(Role::User, &["from the user"])),
            None,
        ));
        // A message without its task or context, metadata of several keys.
        let mut bare = message(Role::Agent, &["x"]);
        bare.task_id = None;
        bare.context_id = None;
        let mut several = update(TaskState::Working, Some(bare), Some("tool_progress"));
        if let StreamResponse::StatusUpdate(update) = &mut several {
            let metadata = update.metadata.as_mut().unwrap();
            metadata.insert("zeta".into(), "".into());
            metadata.insert("alpha".into(), "a \"b\"".into());
            metadata.insert("Agentscope".into(), "upper".into());
        }
        events.push(several);
        // Timestamps of every precision, and none.
        for nanos in [0, 5_000_000, 120_000, 7, 999_999_999] {
            let mut event = update(TaskState::Working, Some(message(Role::Agent, &["t"])), None);
            if let StreamResponse::StatusUpdate(update) = &mut event {
                update.status.timestamp = chrono::Utc.timestamp_opt(1_796_000_000, nanos).single();
            }
            events.push(event);
        }
        let mut untimed = update(TaskState::Working, None, Some("text_delta"));
        if let StreamResponse::StatusUpdate(update) = &mut untimed {
            update.status.timestamp = None;
        }
        events.push(untimed);

        assert_eq!(events.len(), 16 + 4 + 1 + 1 + 5 + 1);
        for id in [
            JsonRpcId::Number(1),
            JsonRpcId::String("req \"7\"".into()),
            JsonRpcId::Null,
        ] {
            for event in &events {
                assert!(is_direct(event), "{event:?}");
                assert_eq!(
                    envelope(&id, Ok(event.clone())),
                    sdk(&id, Ok(event.clone()))
                );
            }
        }
        // One in full, as a client reads it.
        assert_eq!(
            envelope(
                &JsonRpcId::Number(3),
                Ok(update(
                    TaskState::Working,
                    Some(message(Role::Agent, &["Hel"])),
                    Some("text_delta")
                ))
            ),
            r#"{"jsonrpc":"2.0","id":3,"result":{"statusUpdate":{"contextId":"c-1","metadata":{"agentscope.kind":"text_delta"},"status":{"message":{"contextId":"c-1","messageId":"m-1","parts":[{"text":"Hel"}],"role":"ROLE_AGENT","taskId":"t-1"},"state":"TASK_STATE_WORKING","timestamp":"2026-11-30T00:53:20.846477544Z"},"taskId":"t-1"}}}"#
        );
    }

    /// Every other event goes through the SDK's own conversion: the same bytes again.
    #[test]
    fn other_events_and_errors_are_sent_through_the_sdks_conversion() {
        let with = |change: &dyn Fn(&mut TaskStatusUpdateEvent)| {
            let mut event = update(
                TaskState::Working,
                Some(message(Role::Agent, &["Hi"])),
                Some("tool_call"),
            );
            if let StreamResponse::StatusUpdate(update) = &mut event {
                change(update);
            }
            event
        };
        fn message_of(update: &mut TaskStatusUpdateEvent) -> &mut Message {
            update.status.message.as_mut().unwrap()
        }
        let data = Part::data(serde_json::json!({"toolCall": {"id": "c1", "input": {"n": 5}}}));
        let events = vec![
            with(&|u| message_of(u).parts = vec![data.clone()]),
            with(&|u| message_of(u).parts = vec![Part::text("")]),
            with(&|u| message_of(u).parts = Vec::new()),
            with(&|u| message_of(u).metadata = Some(HashMap::from([("k".into(), 1.into())]))),
            with(&|u| message_of(u).extensions = Some(vec!["urn:x".into()])),
            with(&|u| message_of(u).reference_task_ids = Some(vec!["t-0".into()])),
            with(&|u| message_of(u).message_id = String::new()),
            with(&|u| message_of(u).context_id = Some(String::new())),
            with(&|u| message_of(u).role = Role::Unspecified),
            with(&|u| message_of(u).parts[0].media_type = Some("text/plain".into())),
            with(&|u| message_of(u).parts[0].filename = Some("a.txt".into())),
            with(&|u| {
                message_of(u).parts[0].metadata = Some(HashMap::from([("k".into(), "v".into())]))
            }),
            with(&|u| u.metadata = Some(HashMap::from([("n".into(), 2.5.into())]))),
            with(&|u| u.metadata = Some(HashMap::new())),
            with(&|u| u.task_id = String::new()),
            with(&|u| u.context_id = String::new()),
            with(&|u| u.status.state = TaskState::Unspecified),
            StreamResponse::Task(Task {
                id: "t-1".into(),
                context_id: "c-1".into(),
                status: TaskStatus {
                    state: TaskState::Working,
                    message: None,
                    timestamp: chrono::Utc.timestamp_opt(1_796_000_000, 0).single(),
                },
                artifacts: None,
                history: Some(vec![message(Role::User, &["Hi"])]),
                metadata: None,
            }),
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: "t-1".into(),
                context_id: "c-1".into(),
                artifact: Artifact {
                    artifact_id: "reply".into(),
                    name: Some("reply".into()),
                    description: None,
                    parts: vec![Part::text("Hello"), data],
                    metadata: None,
                    extensions: None,
                },
                append: None,
                last_chunk: Some(true),
                metadata: None,
            }),
            StreamResponse::Message(message(Role::Agent, &["Hi"])),
        ];
        let id = JsonRpcId::Number(1);
        for event in events {
            assert!(!is_direct(&event), "{event:?}");
            assert_eq!(envelope(&id, Ok(event.clone())), sdk(&id, Ok(event)));
        }
        // An error: the same envelope (the time the error was made aside).
        let error = A2AError::internal("subscription fell behind active execution");
        let sent = envelope(&id, Err(error.clone()));
        assert_eq!(untimed(&sent), untimed(&sdk(&id, Err(error))));
        assert_eq!(
            untimed(&sent),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "error": {
                "code": -32603, "message": "subscription fell behind active execution",
                "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "domain": "a2a-protocol.org", "metadata": {}, "reason": "INTERNAL_ERROR"}]}})
        );
    }

    /// A JSON-RPC error response without the time in its details.
    fn untimed(response: &str) -> Value {
        let mut value: Value = serde_json::from_str(response).unwrap();
        let metadata = value["error"]["data"][0]["metadata"]
            .as_object_mut()
            .unwrap();
        assert!(metadata.remove("timestamp").is_some());
        value
    }
}
