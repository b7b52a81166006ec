//! The client's test servers on 127.0.0.1: a scripted A2A agent that answers each request
//! as its test says (`fake`), and our server recording what reaches it (`recorded`), both
//! keeping what each request carried (method, path and query, headers, body).

use std::sync::{Arc, Mutex};

use a2a::{Message, Part, Role, Task, TaskState, TaskStatus};
use a2a_pb::protojson_conv::{self, ProtoJsonPayload};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// What one request carried.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    /// The path and query.
    pub(crate) path: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Seen {
    /// The body as JSON (`null` when it is none).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The header `name`, if sent.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// `METHOD /path?query`.
    pub(crate) fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// The requests a server saw, in order.
pub(crate) type Log = Arc<Mutex<Vec<Seen>>>;

/// A running test server: its base URL (`http://127.0.0.1:<port>`) and what it saw.
pub(crate) struct Fake {
    pub(crate) base: String,
    pub(crate) log: Log,
    task: tokio::task::JoinHandle<()>,
}

impl Fake {
    /// What the server saw, in order.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    /// The requests' `METHOD /path?query` lines.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.seen().iter().map(Seen::line).collect()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Answer = Arc<dyn Fn(&Seen) -> Response + Send + Sync>;

/// A server answering every request with `answer` (the card's included).
pub(crate) async fn fake(answer: impl Fn(&Seen) -> Response + Send + Sync + 'static) -> Fake {
    let answer: Answer = Arc::new(answer);
    let log = Log::default();
    let app = axum::Router::new()
        .fallback(
            |State((answer, log)): State<(Answer, Log)>, request: Request| async move {
                let seen = read(request).await;
                log.lock().unwrap().push(seen.clone());
                answer(&seen)
            },
        )
        .with_state((answer, Arc::clone(&log)));
    serve(app, log).await
}

/// Our server of an agent named "assistant" on `model` and `toolkit` (the calls `approval`
/// selects asking first, requiring `token` when given) at `<base>/a2a`, its sessions in
/// `dir`, every request recorded (without its body); the server and its URL.
pub(crate) async fn recorded(
    model: &(impl agentscope::Model + Clone),
    toolkit: agentscope::Toolkit,
    dir: &std::path::Path,
    approval: Option<agentscope::hooks::ApprovalPolicy>,
    token: Option<&str>,
) -> (Fake, String) {
    let (listener, base) = listener().await;
    let url = format!("{base}/a2a");
    let model = model.clone();
    let a2a = agentscope_a2a::A2a::builder()
        .agent(move || {
            agentscope::ReActAgent::builder()
                .name("assistant")
                .model(model.clone())
                .toolkit(toolkit.clone())
        })
        .url(&url)
        .store(agentscope::session::JsonFileSessionStore::new(dir));
    let a2a = crate::support::guarded(a2a, approval, token);
    let log = Log::default();
    let app = recording(axum::Router::new().nest("/a2a", a2a.router()), &log);
    (serve_on(listener, base, app, log), url)
}

/// `router`, each request recorded in `log` (without its body) before it answers.
pub(crate) fn recording(router: axum::Router, log: &Log) -> axum::Router {
    let log = Arc::clone(log);
    router.layer(axum::middleware::from_fn(
        move |request: Request, next: axum::middleware::Next| {
            let log = Arc::clone(&log);
            async move {
                let seen = Seen {
                    method: request.method().to_string(),
                    path: request
                        .uri()
                        .path_and_query()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    headers: request.headers().clone(),
                    body: Vec::new(),
                };
                log.lock().unwrap().push(seen);
                next.run(request).await
            }
        },
    ))
}

/// Binds a listener first, so that `url` can name the server before it serves.
pub(crate) async fn listener() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    (listener, base)
}

/// `app` served on `listener`, recorded in `log`.
pub(crate) fn serve_on(
    listener: tokio::net::TcpListener,
    base: String,
    app: axum::Router,
    log: Log,
) -> Fake {
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Fake { base, log, task }
}

async fn serve(app: axum::Router, log: Log) -> Fake {
    let (listener, base) = listener().await;
    serve_on(listener, base, app, log)
}

async fn read(request: Request) -> Seen {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    Seen {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map(ToString::to_string)
            .unwrap_or_default(),
        headers: parts.headers,
        body: body.to_vec(),
    }
}

/// A card named `name` whose one interface is `binding` at `url`.
pub(crate) fn card(name: &str, url: &str, binding: &str, streaming: bool) -> Value {
    json!({
        "name": name,
        "description": "A scripted agent.",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": url, "protocolBinding": binding, "protocolVersion": "1.0"}],
        "capabilities": {"streaming": streaming},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    })
}

/// `value` as a JSON answer.
pub(crate) fn ok(value: Value) -> Response {
    axum::Json(value).into_response()
}

/// `value` in the SDK's ProtoJSON mapping.
pub(crate) fn proto<T: ProtoJsonPayload>(value: &T) -> Value {
    protojson_conv::to_value(value).unwrap()
}

/// An event stream of `events` (each a `data:` line), ending after them.
pub(crate) fn sse(events: &[Value]) -> Response {
    let body: String = events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect();
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from(body),
    )
        .into_response()
}

/// An HTTP+JSON error (AIP-193) whose details name the A2A error `reason`.
pub(crate) fn refused(status: StatusCode, reason: &str, message: &str) -> Response {
    let body = json!({"error": {
        "code": status.as_u16(),
        "status": "FAILED_PRECONDITION",
        "message": message,
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                     "reason": reason, "domain": "a2a-protocol.org"}],
    }});
    (status, axum::Json(body)).into_response()
}

/// Task `id` of context `context` in `state`, with an agent message of `parts` as its
/// status message.
pub(crate) fn task(id: &str, context: &str, state: TaskState, parts: Vec<Part>) -> Task {
    let message = (!parts.is_empty()).then(|| {
        let mut message = Message::new(Role::Agent, parts);
        message.task_id = Some(id.to_owned());
        message.context_id = Some(context.to_owned());
        message
    });
    Task {
        id: id.to_owned(),
        context_id: context.to_owned(),
        status: TaskStatus {
            state,
            message,
            timestamp: None,
        },
        artifacts: None,
        history: None,
        metadata: None,
    }
}
