//! Requests the tests make to a served [`AgUi`]: runs of `assistant`, whose events (or JSON
//! error) they return, thread histories, and a client that goes away mid-tool.

use std::time::Duration;

use agentscope_server::AgUi;
use serde_json::Value;

/// How long [`eventually`] waits.
const WAIT: Duration = Duration::from_secs(10);

/// Posts a run of `assistant`; returns the status and either the events or the JSON error
/// body.
pub(crate) async fn post(base: &str, body: &Value) -> (u16, Vec<Value>) {
    post_with(base, body, None).await
}

/// [`post`] with a bearer token.
pub(crate) async fn post_with(base: &str, body: &Value, token: Option<&str>) -> (u16, Vec<Value>) {
    post_to(&format!("{base}/agents/assistant"), body, token).await
}

/// Posts a run to the agent at `agent_url` (`<base>/agents/<name>`), as [`post`] does.
pub(crate) async fn post_to(
    agent_url: &str,
    body: &Value,
    token: Option<&str>,
) -> (u16, Vec<Value>) {
    let mut request = reqwest::Client::new().post(agent_url).json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    if status != 200 {
        return (status, vec![serde_json::from_str(&text).unwrap()]);
    }
    let events = text
        .split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    (status, events)
}

/// Posts a run and checks that the server refuses it with `status` and the error `code`.
pub(crate) async fn assert_refused(base: &str, body: &Value, status: u16, code: &str) {
    let (got, body) = post(base, body).await;
    assert_eq!(
        (got, body[0]["error"]["code"].as_str()),
        (status, Some(code)),
        "{body:?}"
    );
}

/// The first event of type `kind`.
pub(crate) fn find<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {events:?}"))
}

/// `GET /agents/assistant/threads/{thread}`.
pub(crate) async fn thread(base: &str, thread: &str) -> Value {
    json_of(reqwest::Client::new().get(format!("{base}/agents/assistant/threads/{thread}"))).await
}

/// The JSON body of the answer to `request`.
pub(crate) async fn json_of(request: reqwest::RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

/// Starts a run of `assistant` and reads it until `until` arrives; returns the rest of the
/// response (dropping it is a client that goes away).
pub(crate) async fn run_until(base: &str, body: &Value, until: &str) -> reqwest::Response {
    let mut response = reqwest::Client::new()
        .post(format!("{base}/agents/assistant"))
        .json(body)
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    while !seen.contains(until) {
        let chunk = response
            .chunk()
            .await
            .unwrap()
            .expect("the run ended early");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    response
}

/// Waits until `done` holds, failing with `what` after 10 s.
pub(crate) async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Posts the run `body` to the agent at `agent_url` (`<base>/agents/<name>`) of `agui`,
/// waits until `started` says its tool has begun, then goes away (a closed tab) and waits
/// until the run is cancelled: the call the tool was running is left in doubt.
pub(crate) async fn go_away_mid_tool(
    agent_url: &str,
    agui: &AgUi,
    body: &Value,
    started: impl FnMut() -> bool,
) {
    let response = reqwest::Client::new()
        .post(agent_url)
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    eventually("the tool did not start", started).await;
    drop(response);
    eventually("the run was not cancelled", || agui.running() == 0).await;
}
