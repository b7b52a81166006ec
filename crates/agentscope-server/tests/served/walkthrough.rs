//! The curl walkthrough of `docs/serving.md`, run: each documented request (its URL and
//! exact JSON body) goes to a server whose agent is `examples/web_chat.rs`'s, on its offline
//! demo model (the example's own file, included), and each documented response line must be
//! what the server sends, in order. Message ids are random: a documented id stands for the
//! same real id wherever it appears.

use std::collections::HashMap;

use agentscope::BoxedModel;
use agentscope::prelude::*;
use agentscope_server::AgUi;
use serde_json::Value;

#[path = "../../../../examples/support/web_chat_demo.rs"]
mod demo;

use crate::support::serve::serve;

/// The guide's walkthrough section.
fn walkthrough() -> &'static str {
    let guide = include_str!("../../../../docs/serving.md");
    let start = guide
        .find("## A walkthrough with curl")
        .expect("docs/serving.md has the walkthrough");
    let rest = &guide[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |end| end + 3);
    &rest[..end]
}

/// One documented request and what the guide shows it answers.
struct Step {
    url: String,
    body: Option<Value>,
    /// The lines of the response the guide shows (`...` lines leave some out).
    shown: Vec<String>,
}

/// The fenced blocks of `text`, as (language, content).
fn blocks(text: &str) -> Vec<(&str, String)> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(language) = line.strip_prefix("```") else {
            continue;
        };
        let content: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        blocks.push((language, content.join("\n")));
    }
    blocks
}

/// The `curl` commands of the walkthrough, each with the output block after it.
fn steps() -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for (language, content) in blocks(walkthrough()) {
        match language {
            "sh" if content.starts_with("curl") => {
                let url = content
                    .split_whitespace()
                    .find(|word| word.starts_with("http://"))
                    .expect("a curl command with a URL")
                    .to_owned();
                let body = content.split_once("-d '").map(|(_, body)| {
                    let body = body.strip_suffix('\'').expect("the body ends the command");
                    serde_json::from_str(body).expect("the documented body is JSON")
                });
                steps.push(Step {
                    url,
                    body,
                    shown: Vec::new(),
                });
            }
            "text" | "json" => {
                let step = steps.last_mut().expect("an output follows a command");
                step.shown = content.lines().map(str::to_owned).collect();
            }
            _ => {}
        }
    }
    steps
}

/// Whether `shown` (from the guide) is `actual`, a 22-character message id of the guide
/// (with a suffix such as `-reasoning`) standing for the same real id everywhere.
fn same(shown: &Value, actual: &Value, ids: &mut HashMap<String, String>) -> bool {
    match (shown, actual) {
        (Value::String(shown), Value::String(actual)) => {
            let id_len = 22;
            let is_id = |s: &str| {
                s.len() >= id_len
                    && s[..id_len]
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                    && (s.len() == id_len || s[id_len..].starts_with('-'))
            };
            if shown != actual
                && is_id(shown)
                && is_id(actual)
                && shown[id_len..] == actual[id_len..]
            {
                let real = ids
                    .entry(shown[..id_len].to_owned())
                    .or_insert_with(|| actual[..id_len].to_owned());
                return *real == actual[..id_len];
            }
            shown == actual
        }
        (Value::Array(shown), Value::Array(actual)) => {
            shown.len() == actual.len() && shown.iter().zip(actual).all(|(s, a)| same(s, a, ids))
        }
        (Value::Object(shown), Value::Object(actual)) => {
            shown.len() == actual.len()
                && shown
                    .iter()
                    .all(|(key, s)| actual.get(key).is_some_and(|a| same(s, a, ids)))
        }
        _ => shown == actual,
    }
}

/// `examples/web_chat.rs`'s server, offline, on a store in `dir`.
fn web_chat(dir: &std::path::Path) -> AgUi {
    let model = BoxedModel::new(demo::OfflineChat::new());
    AgUi::builder()
        .agent("assistant", demo::spec(model))
        .store(JsonFileSessionStore::new(dir))
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_curl_walkthrough_gets_what_the_guide_shows() {
    let steps = steps();
    let bodies: Vec<bool> = steps.iter().map(|step| step.body.is_some()).collect();
    assert_eq!(bodies, [true, false, true], "a run, the thread, the resume");
    let dir = tempfile::tempdir().unwrap();
    let server = serve(web_chat(dir.path())).await;
    let client = reqwest::Client::new();
    let mut ids = HashMap::new();
    for step in steps {
        let url = step.url.replace("http://127.0.0.1:3000", &server.base);
        let request = match &step.body {
            Some(body) => client.post(&url).json(body),
            None => client.get(&url),
        };
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200, "{}", step.url);
        let text = response.text().await.unwrap();
        if step.body.is_none() {
            // A JSON document, shown whole.
            let shown: Value = serde_json::from_str(&step.shown.join("\n")).unwrap();
            let actual: Value = serde_json::from_str(&text).unwrap();
            assert!(
                same(&shown, &actual, &mut ids),
                "{shown:#}\n\nis\n\n{actual:#}"
            );
            continue;
        }
        // Server-sent events: each shown `data:` line is one of them, in order.
        let actual: Vec<Value> = text
            .split("\n\n")
            .filter_map(|frame| frame.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect();
        let mut rest = actual.iter();
        for line in &step.shown {
            if line.trim() == "..." {
                continue;
            }
            let data = line
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not an event line: {line}"));
            let shown: Value = serde_json::from_str(data).unwrap();
            assert!(
                rest.any(|event| same(&shown, event, &mut ids)),
                "{} does not send (in this order)\n{data}\n\nit sends:\n{}",
                step.url,
                actual
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}
