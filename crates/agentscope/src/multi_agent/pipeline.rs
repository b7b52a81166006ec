//! The pipelines kept as values, [`SequentialPipeline`] and [`FanoutPipeline`]: the same
//! agents, run on several inputs, in a hub or not. One definition makes both, so they hold
//! and run their agents the same way.

use std::fmt;
use std::sync::Arc;

use agentscope_core::Msg;

use super::error::MultiAgentError;
use super::fanout::fanout;
use super::hub::MsgHub;
use super::sequential::sequential;
use crate::agent::CallInput;
use crate::agent_trait::Agent;

/// Defines `$name`, a pipeline kept as a value: its agents, run by the function `$run` (and
/// in a hub by the [`MsgHub`] method of the same name).
macro_rules! pipeline {
    (
        $(#[$attr:meta])*
        pub struct $name:ident;
        new: $new:literal,
        run: $run:ident -> $output:ty,
    ) => {
        $(#[$attr])*
        #[derive(Clone)]
        pub struct $name {
            agents: Vec<Arc<dyn Agent>>,
        }

        impl $name {
            #[doc = $new]
            pub fn new(agents: impl IntoIterator<Item = Arc<dyn Agent>>) -> Self {
                Self {
                    agents: agents.into_iter().collect(),
                }
            }

            /// The agents, in order.
            pub fn agents(&self) -> &[Arc<dyn Agent>] {
                &self.agents
            }

            #[doc = concat!("Runs the pipeline on `input` (see [`", stringify!($run), "`]).")]
            ///
            /// # Errors
            ///
            #[doc = concat!("As [`", stringify!($run), "`].")]
            pub async fn run(
                &self,
                input: impl Into<CallInput>,
            ) -> Result<$output, MultiAgentError> {
                $run(&self.agents, input).await
            }

            #[doc = concat!(
                "Runs the pipeline on `input` in `hub` (see [`MsgHub::",
                stringify!($run),
                "`])."
            )]
            ///
            /// # Errors
            ///
            #[doc = concat!("As [`MsgHub::", stringify!($run), "`].")]
            pub async fn run_in(
                &self,
                hub: &MsgHub,
                input: impl Into<CallInput>,
            ) -> Result<$output, MultiAgentError> {
                hub.$run(&self.agents, input).await
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let names: Vec<&str> = self.agents.iter().map(|a| a.name()).collect();
                f.debug_struct(stringify!($name))
                    .field("agents", &names)
                    .finish()
            }
        }
    };
}

pipeline! {
    /// A sequential pipeline kept as a value: the same agents, run on several inputs, in or
    /// outside a hub. AgentScope Python's `SequentialPipeline`. See [`sequential`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agentscope::prelude::*;
    /// use agentscope::multi_agent::SequentialPipeline;
    /// use agentscope_test::{ScriptedModel, ScriptedResponse};
    ///
    /// # futures::executor::block_on(async {
    /// let echo = ReActAgent::builder().name("echo")
    ///     .model(ScriptedModel::new([ScriptedResponse::text("once")])).build()?;
    /// let pipeline = SequentialPipeline::new([Arc::new(echo) as Arc<dyn agentscope::Agent>]);
    /// assert_eq!(pipeline.run("hi").await?.text(), "once");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub struct SequentialPipeline;
    new: "A pipeline running `agents` in this order.",
    run: sequential -> Msg,
}

pipeline! {
    /// A fan-out pipeline kept as a value. AgentScope Python's `FanoutPipeline`. See
    /// [`fanout`].
    pub struct FanoutPipeline;
    new: "A pipeline fanning out to `agents` (replies come back in this order).",
    run: fanout -> Vec<Msg>,
}
