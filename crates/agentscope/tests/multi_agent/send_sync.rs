//! Auto traits: the futures of the hub and the pipelines are `Send` (spawnable), the
//! handles are `Send + Sync`, and `AgentTool` is a `Tool`.

use std::sync::Arc;

use agentscope::multi_agent::AgentTool;
use agentscope::multi_agent::MsgHub;
use agentscope::multi_agent::MultiAgentError;
use agentscope::multi_agent::UserAgent;
use agentscope::multi_agent::{
    ChannelInput, FanoutPipeline, MsgHubBuilder, SequentialPipeline, StdinInput, fanout, sequential,
};
use agentscope::{Agent, Tool};

fn send<T: Send>(_: &T) {}
fn send_sync<T: Send + Sync + 'static>() {}

#[test]
fn handles_are_send_and_sync_and_futures_are_send() {
    send_sync::<MsgHub>();
    send_sync::<MsgHubBuilder>();
    send_sync::<SequentialPipeline>();
    send_sync::<FanoutPipeline>();
    send_sync::<UserAgent>();
    send_sync::<ChannelInput>();
    send_sync::<StdinInput>();
    send_sync::<MultiAgentError>();
    fn tool<T: Tool>() {}
    tool::<AgentTool>();

    let (agent, _, _) = crate::scripted("a", []);
    let agents: Vec<Arc<dyn Agent>> = vec![agent.clone()];
    let hub = MsgHub::builder().participant(agent.clone());
    send(&hub.enter());
    send(&sequential(&agents, "x"));
    send(&fanout(&agents, "x"));
}

#[tokio::test]
async fn hub_futures_are_send() {
    let (agent, _, _) = crate::scripted("a", []);
    let hub = MsgHub::builder()
        .participant(agent.clone())
        .enter()
        .await
        .unwrap();
    let agents = [agent.clone()];
    send(&hub.call(&agent, "x"));
    send(&hub.broadcast(crate::from("u", "x")));
    send(&hub.sequential(&agents, "x"));
    send(&hub.fanout(&agents, "x"));
    send(&hub.add(agent.clone()));
}
