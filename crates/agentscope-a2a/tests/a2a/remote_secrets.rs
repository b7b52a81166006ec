//! The client's credentials and secrets: the configured headers reach only the origin the
//! user named (the card's) and the origins they allowed, never an interface or a redirect
//! elsewhere; a key in an interface URL's query shows in no log line.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use agentscope::prelude::*;
use agentscope_a2a::{A2a, RemoteAgent, RemoteError};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use tracing_subscriber::layer::SubscriberExt;

use crate::fake::{self, Fake, card, fake, ok};

const TOKEN: &str = "s3cret-token-42";

/// Our server of an agent saying "Hello!", requiring the bearer token [`TOKEN`], at
/// `<base>/a2a`, each request recorded; its sessions are in the directory returned.
async fn guarded() -> (Fake, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let (server, url) = fake::recorded(&model, Toolkit::new(), dir.path(), None, Some(TOKEN)).await;
    (server, url, dir)
}

/// The requests `server` saw, each with the credentials it carried.
fn credentials(server: &Fake) -> Vec<String> {
    server
        .seen()
        .iter()
        .map(|seen| {
            format!(
                "{} authorization={:?} x-api-key={:?}",
                seen.line(),
                seen.header("authorization"),
                seen.header("x-api-key")
            )
        })
        .collect()
}

#[tokio::test]
async fn a_card_naming_an_interface_on_another_origin_never_sends_it_the_credentials() {
    let (agent, url, _dir) = guarded().await;
    // The card is served on one port and names the agent's interface on another.
    let card_url = url.clone();
    let cards = fake(move |_| ok(card("assistant", &card_url, "HTTP+JSON", true))).await;

    let connected = RemoteAgent::builder(format!("{}/a2a", cards.base))
        .bearer_token(TOKEN)
        .header("X-Api-Key", "key-SECRET")
        .connect()
        .await;
    if let Ok(remote) = &connected {
        // What the client did before: the call went there, credentials and all.
        let _ = remote.call("Hi").await;
    }
    let error = connected.unwrap_err();
    assert_eq!(
        error,
        RemoteError::Card {
            url: format!("{}/a2a/.well-known/agent-card.json", cards.base),
            reason: format!(
                "it names its interface at {0}, another origin than the one the credentials \
                 were given for ({1}): they are not sent there; allow it with \
                 RemoteAgentBuilder::send_credentials_to(\"{0}\") if you trust it",
                agent.base, cards.base
            ),
        }
    );
    // The origin the user named got the credentials (with the card request); the other
    // origin got nothing at all.
    assert_eq!(
        credentials(&cards),
        [
            r#"GET /a2a/.well-known/agent-card.json authorization=Some("Bearer s3cret-token-42") x-api-key=Some("key-SECRET")"#
        ]
    );
    assert_eq!(credentials(&agent), Vec::<String>::new());
    assert!(!error.to_string().contains("SECRET") && !error.to_string().contains(TOKEN));
}

#[tokio::test]
async fn an_origin_the_user_allows_gets_the_credentials() {
    let (agent, url, _dir) = guarded().await;
    let card_url = url.clone();
    let cards = fake(move |_| ok(card("assistant", &card_url, "HTTP+JSON", true))).await;
    let remote = RemoteAgent::builder(format!("{}/a2a", cards.base))
        .bearer_token(TOKEN)
        .send_credentials_to(&agent.base)
        .connect()
        .await
        .unwrap();
    assert_eq!(remote.call("Hi").await.unwrap().text(), "Hello!");
    assert_eq!(
        credentials(&agent),
        [r#"POST /a2a/message:stream authorization=Some("Bearer s3cret-token-42") x-api-key=None"#]
    );

    // An origin is a scheme, a host and a port, nothing more.
    for not_an_origin in [
        format!("{url}/more"),
        format!("{}?key=k-SECRET", agent.base),
    ] {
        let error = RemoteAgent::builder(&url)
            .send_credentials_to(&not_an_origin)
            .connect()
            .await
            .unwrap_err();
        assert!(
            matches!(error, RemoteError::InvalidOrigin { .. }),
            "{error:?}"
        );
        assert!(!error.to_string().contains("k-SECRET"), "{error}");
    }
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed_with_the_credentials() {
    let elsewhere = fake(|_| {
        ok(card(
            "assistant",
            "http://127.0.0.1:9/a2a",
            "HTTP+JSON",
            true,
        ))
    })
    .await;
    let target = format!("{}/card.json", elsewhere.base);
    let redirecting = fake(move |_| {
        (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, target.clone())],
        )
            .into_response()
    })
    .await;
    let error = RemoteAgent::builder(format!("{}/a2a", redirecting.base))
        .bearer_token(TOKEN)
        .header("X-Api-Key", "key-SECRET")
        .connect()
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "the agent card at {}/a2a/.well-known/agent-card.json cannot be used: the server \
             redirected to {}, another origin than the credentials are sent to ({}); allow it \
             with RemoteAgentBuilder::send_credentials_to if you trust it",
            redirecting.base, elsewhere.base, redirecting.base
        )
    );
    assert_eq!(credentials(&elsewhere), Vec::<String>::new());

    // Without credentials there is nothing to keep: the redirect is followed.
    let remote = RemoteAgent::connect(format!("{}/a2a", redirecting.base))
        .await
        .unwrap();
    assert_eq!(remote.name(), "assistant");
    assert_eq!(
        credentials(&elsewhere),
        ["GET /card.json authorization=None x-api-key=None"]
    );
}

/// Every event and span (their fields included) at DEBUG and above, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<String>>);

impl Captured {
    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Captured {
    fn enabled(
        &self,
        metadata: &tracing::Metadata<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        *metadata.level() <= tracing::Level::DEBUG
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut line = format!(
            "{} {}:",
            event.metadata().level(),
            event.metadata().target()
        );
        event.record(&mut Fields(&mut line));
        self.0.lock().unwrap().push_str(&(line + "\n"));
    }

    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut line = format!("span {}:", attrs.metadata().name());
        attrs.record(&mut Fields(&mut line));
        self.0.lock().unwrap().push_str(&(line + "\n"));
    }
}

#[tokio::test]
async fn debug_logs_never_show_the_key_of_an_interface_url() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(captured.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    // A gateway that takes its key in the query: the card names its interfaces with it.
    let (listener, base) = fake::listener().await;
    let url = format!("{base}/a2a?key=q-SECRET-KEY");
    let model = ScriptedModel::new([ScriptedResponse::text("Hello!")]);
    let dir = tempfile::tempdir().unwrap();
    let a2a = A2a::builder()
        .agent(move || ReActAgent::builder().name("assistant").model(model.clone()))
        .url(&url)
        .store(JsonFileSessionStore::new(dir.path()))
        .build()
        .unwrap();
    let _server = fake::serve_on(
        listener,
        base.clone(),
        axum::Router::new().nest("/a2a", a2a.router()),
        fake::Log::default(),
    );
    // Tracing caches whether a call site is of interest, for the whole process: one first
    // reached on another test's thread while this subscriber was being set could be left
    // out. Once reached (a first connect), the cache is rebuilt with this subscriber.
    RemoteAgent::connect(&url).await.unwrap();
    tracing::callsite::rebuild_interest_cache();
    captured.0.lock().unwrap().clear();

    let remote = RemoteAgent::connect(&url).await.unwrap();
    let called = remote.call("Hi").await;

    let logs = captured.text();
    assert!(!logs.contains("SECRET"), "{logs}");
    // The requests are logged, their URLs without the key.
    assert!(
        logs.contains(&format!(
            "DEBUG agentscope_a2a::remote: message=A2A request method=POST \
             url={base}/a2a/message:stream?key=<redacted>"
        )),
        "{logs}"
    );
    assert_eq!(called.unwrap().text(), "Hello!");
}
