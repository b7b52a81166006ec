//! Multi-agent: a user and two agents plan a trip in a message hub.
//!
//! ```sh
//! cargo run --example multi_agent             # type your wish when asked (in a terminal)
//! echo "Somewhere warm" | cargo run --example multi_agent   # not a terminal: a canned wish
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run --example multi_agent   # alice on a real model
//! ```
//!
//! - `user` is a `UserAgent`: in a terminal it reads your line from stdin; otherwise its
//!   line comes from a channel the example fills.
//! - `alice`, the planner, is a ReAct agent on the model the environment names (see
//!   `examples/support/mod.rs`), or offline on a scripted stand-in; the first line says
//!   which.
//! - `bob`, the budget keeper, is an agent with a custom `Reply`: no model, he reads what
//!   the others said from his memory.
//!
//! They sit in a `MsgHub` with an announcement. A sequential pipeline (user, then alice,
//! then bob) makes the first round; a host's broadcast and a fan-out (alice and bob at
//! once) the second. Every
//! reply goes to the other participants, and a PostCall hook on each agent prints who said
//! what. At the end, each participant's memory shows what it heard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use agentscope::multi_agent::UserAgent;
use agentscope::multi_agent::{ChannelInput, StdinInput};
use agentscope::prelude::*;
use agentscope::{Agent, Reply, ReplyContext};
use agentscope_test::{ScriptedModel, ScriptedResponse};

/// Prints each reply as its agent makes it.
fn print_replies() -> impl Hook {
    hook_fn(|event| {
        if let HookEvent::PostCall(e) = event {
            let reply = e.final_message();
            println!("{:>6}: {}", reply.name, reply.text());
        }
        Ok(())
    })
    .with_interests(HookEventType::PostCall)
    .with_name("print-replies")
}

/// Bob's reply logic: checks the last price anyone else mentioned against his budget.
struct BudgetCheck {
    limit: u32,
}

impl Reply for BudgetCheck {
    async fn reply(&self, cx: &mut ReplyContext<'_, '_>) -> Result<Msg, AgentError> {
        let me = cx.agent().name().to_owned();
        let price = cx
            .memory()
            .messages()
            .iter()
            .rev()
            .filter(|m| m.name != me)
            .find_map(|m| first_number(&m.text()));
        let text = match price {
            Some(price) if price <= self.limit => {
                format!(
                    "{price} euros fits our {} euro budget. Approved.",
                    self.limit
                )
            }
            Some(price) => format!("{price} euros is over our {} euro budget.", self.limit),
            None => "Nobody has named a price yet.".to_owned(),
        };
        Ok(cx.message(text))
    }
}

fn first_number(text: &str) -> Option<u32> {
    text.split(|c: char| !c.is_ascii_digit())
        .find(|s| !s.is_empty())
        .and_then(|s| s.parse().ok())
}

#[tokio::main]
async fn main() -> ExitCode {
    support::run(example()).await
}

async fn example() -> Result<(), Box<dyn std::error::Error>> {
    // Alice's model, chosen (and named on the first line) before anything else runs.
    let alice_model = support::model_or(ScriptedModel::new([
        ScriptedResponse::text("How about Lisbon? Flights and two nights come to 240 euros."),
        ScriptedResponse::text("Then Lisbon it is: I'll book the Friday flight."),
    ]))?;

    // The user: stdin in a terminal, a canned line otherwise.
    let user_builder = ReActAgent::builder().name("user").hook(print_replies());
    let user: Arc<dyn Agent> = if std::io::stdin().is_terminal() {
        println!("(you are `user`: type what you would like, then Enter)");
        Arc::new(UserAgent::from_builder(user_builder, StdinInput::new())?)
    } else {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tx.send("Somewhere warm for the weekend, please.".to_owned())
            .await?;
        Arc::new(UserAgent::from_builder(
            user_builder,
            ChannelInput::new(rx),
        )?)
    };

    let alice = ReActAgent::builder()
        .name("alice")
        .sys_prompt("You plan trips. Name one place and its price in euros, in two sentences.")
        .model(alice_model)
        .hook(print_replies())
        .build()?;
    let bob = ReActAgent::builder()
        .name("bob")
        .reply(BudgetCheck { limit: 300 })
        .hook(print_replies())
        .build()?;
    let (alice, bob): (Arc<dyn Agent>, Arc<dyn Agent>) = (Arc::new(alice), Arc::new(bob));

    let announcement = Msg::builder()
        .name("host")
        .text("We are planning a weekend trip. The user wishes, alice proposes, bob checks the budget.")
        .build();
    println!("{:>6}: {}", announcement.name, announcement.text());
    let hub = MsgHub::builder()
        .participants([user.clone(), alice.clone(), bob.clone()])
        .announcement(announcement)
        .enter()
        .await?;

    println!("\n-- round 1: sequential (user, alice, bob)");
    hub.sequential(&[user.clone(), alice.clone(), bob.clone()], ())
        .await?;

    println!("\n-- round 2: a broadcast, then a fan-out (alice and bob at once)");
    let question = Msg::builder()
        .name("host")
        .text("Anything to add before we book?")
        .build();
    println!("{:>6}: {}", question.name, question.text());
    hub.broadcast(question).await?;
    hub.fanout(&[alice.clone(), bob.clone()], ()).await?;

    println!("\n-- what each participant heard (its memory)");
    for agent in hub.participants() {
        let state = agent.save_state()?;
        let heard: Vec<String> = state
            .messages
            .iter()
            .map(|m| format!("{}({})", m.name, m.role))
            .collect();
        println!("{:>6}: {}", agent.name(), heard.join(", "));
    }
    Ok(())
}
