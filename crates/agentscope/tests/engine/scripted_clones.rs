//! `ScriptedModel` under several agents, as a server's agent factory makes them (one agent
//! per run): clones take turns on one script, and the one that finds it used up says how
//! to give each agent its own; forks each play the whole script.

use agentscope::prelude::*;
use agentscope_test::{ScriptedModel, ScriptedResponse};

/// Agents made the way a server's factory makes them, one per run, on `model(template)`.
fn factory(
    template: ScriptedModel,
    model: fn(&ScriptedModel) -> ScriptedModel,
) -> impl Fn() -> ReActAgent {
    move || {
        ReActAgent::builder()
            .model(model(&template))
            .build()
            .unwrap()
    }
}

#[tokio::test]
async fn agents_on_clones_share_the_script_and_the_second_is_told_why_it_failed() {
    let template = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let agent = factory(template.clone(), ScriptedModel::clone);
    assert_eq!(agent().call("hi").await.unwrap().text(), "Hello!");
    let err = agent().call("hi again").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "model error: ScriptedModel 'scripted-model': no scripted response left for request #2 \
         (its only response was played). Clones of a ScriptedModel share one script: give each \
         agent its own with `fork()`, repeat the script with `cycling()`, or `push` more \
         responses"
    );
    // The template is the same model: it saw both requests.
    assert_eq!(template.request_count(), 2);
}

#[tokio::test]
async fn agents_on_forks_each_play_the_whole_script() {
    let template = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let agent = factory(template.clone(), ScriptedModel::fork);
    for input in ["hi", "hi again", "and again"] {
        assert_eq!(agent().call(input).await.unwrap().text(), "Hello!");
    }
    // Each fork recorded its own request; the template played nothing.
    assert_eq!((template.request_count(), template.remaining()), (0, 1));

    // A cycling model answers any number of requests, clones and all.
    let cycling = ScriptedModel::new([ScriptedResponse::text("Hello!")]).cycling();
    let agent = factory(cycling.clone(), ScriptedModel::clone);
    for input in ["hi", "hi again", "and again"] {
        assert_eq!(agent().call(input).await.unwrap().text(), "Hello!");
    }
    assert_eq!(cycling.request_count(), 3);
}
