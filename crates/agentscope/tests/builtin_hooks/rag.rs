//! Knowledge / RAG: documents retrieved for the last user message of the new input reach the
//! model in this call's system message, for every reasoning step of the call, and nothing of
//! them is stored in memory.

use std::sync::Arc;

use crate::support::describe::brief::{describe, memory_of};
use crate::support::describe::system_texts;
use crate::support::failures::hook_error;
use crate::support::warnings::Warnings;
use agentscope::hooks::{
    Document, GenericRAGHook, InMemoryKnowledge, Knowledge, KnowledgeError, ScoredDocument,
};
use agentscope::prelude::*;
use agentscope_test::tools::Calculator;
use agentscope_test::{ScriptedModel, ScriptedResponse};
use serde_json::json;
use tracing_subscriber::Registry;
use tracing_subscriber::layer::SubscriberExt;

const HEADER: &str = "## Retrieved knowledge\n\
Documents retrieved from the knowledge base for the user's latest message, most relevant \
first. Use them when they help to answer; cite a document by its [id].";

const RETURNS: &str = "Items can be returned within 30 days with the receipt.";
const SHIPPING: &str = "Orders ship within two business days; express shipping takes one day.";
const HOURS: &str = "The shop is open from 9 to 5 on weekdays.";

fn knowledge() -> InMemoryKnowledge {
    InMemoryKnowledge::new().with_documents(vec![
        Document::new("returns", RETURNS),
        Document::new("shipping", SHIPPING),
        Document::new("hours", HOURS),
    ])
}

fn agent(model: &ScriptedModel, rag: GenericRAGHook) -> ReActAgent {
    ReActAgent::builder()
        .sys_prompt("You are a shop assistant.")
        .model(model.clone())
        .toolkit(Toolkit::new().tool(Calculator::new()))
        .hook(rag)
        .build()
        .unwrap()
}

fn sys(extra: Option<String>) -> Vec<String> {
    std::iter::once("You are a shop assistant.".to_owned())
        .chain(extra)
        .collect()
}

#[tokio::test]
async fn retrieved_text_reaches_every_step_of_the_call_and_is_never_stored() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "30 - 12"})),
        ScriptedResponse::text("You have 18 days left."),
        ScriptedResponse::text("We are open 9 to 5."),
    ]);
    let agent = agent(&model, GenericRAGHook::new(knowledge()).with_top_k(2));

    agent
        .call("Within how many days can items be returned?")
        .await
        .unwrap();
    agent.call("When is the shop open?").await.unwrap();

    // BM25 ranks the best match first; the second hit shares only common words.
    let first = format!("{HEADER}\n\n[returns] {RETURNS}\n\n[shipping] {SHIPPING}");
    let second = format!("{HEADER}\n\n[hours] {HOURS}\n\n[returns] {RETURNS}");
    assert_eq!(
        system_texts(&model),
        [
            sys(Some(first.clone())),
            sys(Some(first)),
            sys(Some(second))
        ]
    );
    // After the system message, the model sees exactly the conversation so far.
    let requests = model.requests();
    let rest: Vec<String> = requests[2].messages[1..].iter().map(describe).collect();
    assert_eq!(rest, memory_of(&agent)[..5]);
    assert_eq!(
        memory_of(&agent),
        [
            "user: text \"Within how many days can items be returned?\"",
            "assistant: tool_use c1 calculator {\"expression\":\"30 - 12\"}",
            "tool: tool_result c1 calculator \"18\"",
            "assistant: text \"You have 18 days left.\"",
            "user: text \"When is the shop open?\"",
            "assistant: text \"We are open 9 to 5.\"",
        ]
    );
}

#[tokio::test]
async fn hits_are_limited_by_top_k_and_min_score() {
    let query = "express shipping: which days is the shop open?";
    let hits = knowledge().search(query, 3);
    let ids: Vec<&str> = hits.iter().map(|h| h.document.id.as_str()).collect();
    assert_eq!(ids, ["hours", "shipping", "returns"]);

    let model = ScriptedModel::new([ScriptedResponse::text("a"), ScriptedResponse::text("b")]);
    let agent = agent(&model, GenericRAGHook::new(knowledge()).with_top_k(1));
    agent.call(query).await.unwrap();
    assert_eq!(
        system_texts(&model),
        [sys(Some(format!("{HEADER}\n\n[hours] {HOURS}")))]
    );

    let min = (hits[1].score + hits[2].score) / 2.0;
    let model2 = ScriptedModel::new([ScriptedResponse::text("a")]);
    let rag = GenericRAGHook::new(knowledge())
        .with_top_k(3)
        .with_min_score(min);
    self::agent(&model2, rag).call(query).await.unwrap();
    assert_eq!(
        system_texts(&model2),
        [sys(Some(format!(
            "{HEADER}\n\n[hours] {HOURS}\n\n[shipping] {SHIPPING}"
        )))]
    );

    // Nothing relevant: the system message is untouched.
    agent.call("xyzzy?").await.unwrap();
    assert_eq!(system_texts(&model)[1], sys(None));
}

#[tokio::test]
async fn the_query_is_the_last_user_message_of_the_new_input() {
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "1+1"})),
        ScriptedResponse::error("model down"),
        ScriptedResponse::text("b"),
    ]);
    let agent = agent(&model, GenericRAGHook::new(knowledge()));
    // The call runs a tool, then fails: memory ends with the tool result.
    agent
        .call(vec![
            Msg::user("about returns"),
            Msg::user("actually, when do you open?"),
        ])
        .await
        .unwrap_err();
    // A call without new input (it continues from the tool result) has no query: no
    // retrieval (history is not searched).
    agent.call(()).await.unwrap();
    let retrieved = sys(Some(format!("{HEADER}\n\n[hours] {HOURS}")));
    assert_eq!(
        system_texts(&model),
        [retrieved.clone(), retrieved, sys(None)]
    );
}

#[tokio::test]
async fn documents_added_later_through_the_trait_are_found() {
    let knowledge = Arc::new(InMemoryKnowledge::new());
    let model = ScriptedModel::new([ScriptedResponse::text("a"), ScriptedResponse::text("b")]);
    let agent = agent(
        &model,
        GenericRAGHook::new(Arc::clone(&knowledge)).with_header("Facts:"),
    );
    agent.call("what about parrots?").await.unwrap();
    knowledge
        .add_documents(vec![Document::new("p", "Parrots can live for 50 years.")])
        .await
        .unwrap();
    agent.call("what about parrots?").await.unwrap();
    assert_eq!(
        system_texts(&model),
        [
            sys(None),
            sys(Some(
                "Facts:\n\n[p] Parrots can live for 50 years.".to_owned()
            ))
        ]
    );
}

struct Broken;

impl Knowledge for Broken {
    async fn add_documents(&self, _documents: Vec<Document>) -> Result<(), KnowledgeError> {
        Err(KnowledgeError::msg("index offline"))
    }

    async fn retrieve(
        &self,
        _query: &str,
        _k: usize,
    ) -> Result<Vec<ScoredDocument>, KnowledgeError> {
        Err(KnowledgeError::msg("index offline"))
    }
}

#[tokio::test]
async fn a_failing_knowledge_base_is_skipped_unless_required() {
    let model = ScriptedModel::new([ScriptedResponse::text("fine")]);
    let agent = agent(&model, GenericRAGHook::new(Broken));
    let warnings = Warnings::default();
    let default = tracing::subscriber::set_default(Registry::default().with(warnings.clone()));
    assert_eq!(agent.call("hello").await.unwrap().text(), "fine");
    drop(default);
    assert_eq!(
        warnings.lines(),
        [
            "message=knowledge retrieval failed; the call goes on without retrieved knowledge agent=assistant error=index offline"
        ]
    );
    assert_eq!(system_texts(&model), [sys(None)]);

    let model = ScriptedModel::new([]);
    let strict = self::agent(&model, GenericRAGHook::new(Broken).with_fail_on_error(true));
    let err = strict.call("hello").await.unwrap_err();
    hook_error(&err, "rag", HookEventType::PreCall);
    assert_eq!(
        err.to_string(),
        "hook 'rag' failed at PreCall: index offline"
    );
    assert!(strict.memory().is_empty());
    assert_eq!(model.request_count(), 0);
}

#[tokio::test]
async fn the_hook_is_visible_in_hook_order() {
    let model = ScriptedModel::new([]);
    let order = agent(&model, GenericRAGHook::new(knowledge())).hook_order();
    assert_eq!(order.len(), 1);
    assert_eq!((order[0].name.as_str(), order[0].priority), ("rag", 50));
    assert_eq!(order[0].interests, HookEventType::PreCall.into());
}
