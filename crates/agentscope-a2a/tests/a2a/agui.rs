//! One conversation over both protocols: an A2A context and an AG-UI thread of the same
//! name are one session of the shared store.

use a2a_client::A2AClientFactory;
use a2a_client::agent_card::AgentCardResolver;
use agentscope::prelude::*;
use agentscope_a2a::A2a;
use agentscope_server::{AgUi, AgentSpec};
use agentscope_test::messages::turns;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;

use crate::support::request;
use crate::{history, task_of};

#[tokio::test]
async fn a_context_continued_as_an_ag_ui_thread_is_one_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::text("Hello!"),
        ScriptedResponse::text("Fine, thanks."),
    ]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let factory = {
        let model = model.clone();
        move || ReActAgent::builder().name("assistant").model(model.clone())
    };
    let agui = AgUi::builder()
        .agent("assistant", AgentSpec::new(factory.clone()))
        .store(JsonFileSessionStore::new(dir.path()))
        .chat_page(false)
        .build()
        .unwrap();
    let a2a = A2a::builder()
        .agent(factory)
        .url(format!("{base}/a2a"))
        .store(JsonFileSessionStore::new(dir.path()))
        .build()
        .unwrap();
    let app = agui.router().nest("/a2a", a2a.router());
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let card = AgentCardResolver::new(None)
        .resolve(&format!("{base}/a2a"))
        .await
        .unwrap();
    let client = A2AClientFactory::builder()
        .build()
        .create_from_card(&card)
        .await
        .unwrap();
    let task = task_of(client.send_message(&request("Hi", "t1")).await.unwrap());
    assert_eq!(history(&task), ["user: Hi", "agent: Hello!"]);

    let http = reqwest::Client::new();
    let run = http
        .post(format!("{base}/agents/assistant"))
        .json(&json!({"threadId": "t1", "runId": "r1",
                      "messages": [{"id": "u2", "role": "user", "content": "And you?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(run.status(), 200);
    let events = run.text().await.unwrap();
    assert!(events.contains(r#""type":"RUN_FINISHED""#), "{events}");

    let seen = turns(&model.requests()[1].messages);
    assert_eq!(
        seen,
        [
            (Role::User, "Hi".to_owned()),
            (Role::Assistant, "Hello!".to_owned()),
            (Role::User, "And you?".to_owned()),
        ]
    );
    server.abort();
}
