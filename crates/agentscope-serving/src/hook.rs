//! [`RunHook`]: the hook a served run's agent carries (last in the chain), which writes the
//! run's end into its record at PostCall or at the call's error, so that the call's last save
//! stores it with the conversation.

use std::sync::{Arc, Mutex, PoisonError};

use agentscope::hooks::ToolApprovalHook;
use agentscope::session::HookState;
use agentscope::{GenerateReason, Hook, HookError, HookEvent, HookEventType, HookEventTypes, Msg};

use crate::failure::failure;
use crate::record::{RunEvent, RunState, Runs};

/// Records how a served run's call ended in the run's record (the session's
/// [`Runs`]): at PostCall from the final message (`completed`, `input-required` for calls
/// awaiting approval or in doubt, `canceled` for an interrupted call), at the call's error
/// as `failed` (a generic reason and a correlation id; the details are logged). Priority
/// `i32::MAX`: it sees the final message as every other hook left it.
#[derive(Clone)]
pub struct RunHook {
    run: Arc<str>,
    approvals: Option<ToolApprovalHook>,
    ended: Arc<Mutex<Option<RunState>>>,
}

impl std::fmt::Debug for RunHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHook")
            .field("run", &self.run)
            .finish_non_exhaustive()
    }
}

impl RunHook {
    /// The hook's name in the chain.
    pub const NAME: &'static str = "served_run";

    /// The hook of run `run`; `approvals` is the run's approval hook, if it has one (its
    /// pending calls are what the run asks about when the call stops for approval).
    pub fn new(run: impl Into<Arc<str>>, approvals: Option<ToolApprovalHook>) -> Self {
        Self {
            run: run.into(),
            approvals,
            ended: Arc::default(),
        }
    }

    /// How the run's call ended, once it has (as recorded).
    pub fn ended(&self) -> Option<RunState> {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The state a run whose call ended with `reply` is in, and what it asks about.
    fn end_of(&self, reply: &Msg) -> (RunState, Option<RunEvent>) {
        let ids = |calls: Vec<String>| calls;
        match reply.generate_reason() {
            Some(GenerateReason::ToolInDoubt) => {
                let in_doubt = ids(reply.tool_uses().iter().map(|c| c.id.to_string()).collect());
                let asked = RunEvent::Asked {
                    approvals: Vec::new(),
                    in_doubt,
                    problem: None,
                };
                return (RunState::InputRequired, Some(asked));
            }
            Some(GenerateReason::Interrupted) => {
                return (
                    RunState::Canceled {
                        reply: Some(reply.id.to_string()),
                    },
                    None,
                );
            }
            _ => {}
        }
        let pending = self
            .approvals
            .as_ref()
            .map(ToolApprovalHook::pending)
            .unwrap_or_default();
        if !pending.is_empty() {
            let asked = RunEvent::Asked {
                approvals: pending.iter().map(|call| call.id.to_string()).collect(),
                in_doubt: Vec::new(),
                problem: None,
            };
            return (RunState::InputRequired, Some(asked));
        }
        (
            RunState::Completed {
                reply: reply.id.to_string(),
            },
            None,
        )
    }

    fn record(&self, hooks: Option<&mut HookState>, state: RunState, asked: Option<RunEvent>) {
        *self.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(state.clone());
        let Some(hooks) = hooks else {
            return;
        };
        // Unreadable runs stay as stored (the admission refused such a session already).
        let Ok(mut runs) = Runs::read(hooks) else {
            return;
        };
        if let Some(run) = runs.get_mut(&self.run) {
            run.events.extend(asked);
            run.set_state(state);
            runs.write(hooks);
        }
    }
}

impl Hook for RunHook {
    async fn on_event(&self, event: &mut HookEvent) -> Result<(), HookError> {
        match event {
            HookEvent::PostCall(e) => {
                let (state, asked) = self.end_of(e.final_message());
                self.record(e.extensions_mut().get_mut::<HookState>(), state, asked);
            }
            HookEvent::Error(e) => {
                let failure = failure("The agent failed", e.error());
                let state = RunState::Failed {
                    reason: failure.message,
                    error_id: Some(failure.id),
                };
                self.record(e.extensions_mut().get_mut::<HookState>(), state, None);
            }
            _ => {}
        }
        Ok(())
    }

    fn priority(&self) -> i32 {
        i32::MAX
    }

    fn interests(&self) -> HookEventTypes {
        HookEventTypes::NONE | HookEventType::PostCall | HookEventType::Error
    }

    fn name(&self) -> &str {
        Self::NAME
    }
}
