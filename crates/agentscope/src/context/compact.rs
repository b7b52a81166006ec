//! The compaction decision: for one model input (at PreReasoning, or PreSummary at the
//! iteration limit), the window that applies (the model's, or less after a refusal), whether
//! the oldest turns are due for a summary, the token budget of the sliding window and the
//! hard limit, and what is reported and traced. [`Work`] carries the decisions out.

use agentscope_core::{Extensions, HookError, Msg, PreReasoningEvent, PreSummaryEvent};

use super::call_notes::notes;
use super::config::Config;
use super::report::{CollectCompactionReports, CompactionReport, SummaryUse};
use super::state::{HOOK_NAME, Shared};
use super::work::Work;

/// Compacts the input of `target`'s model call, per the hook's `config`: steps 1 to 5 of
/// [`ContextWindowHook`](super::ContextWindowHook), then the report, the trace and what is
/// remembered of the input sent.
pub(super) async fn compact(
    config: &Config,
    shared: &Shared,
    mut target: Target<'_>,
) -> Result<(), HookError> {
    let forced = target.context_exceeded();
    let agent = target.agent_id();
    let instance = shared.instance;
    let model = match &mut target {
        Target::Reasoning(e) => {
            let model = e.model_name().to_owned();
            notes(e.extensions_mut(), instance).model = Some(model.clone());
            model
        }
        Target::Summary(e) => notes(e.extensions_mut(), instance)
            .model
            .clone()
            .unwrap_or_default(),
    };
    let messages_before = target.input().len();
    if messages_before == 0 {
        return Ok(());
    }
    let system = target.system().cloned();
    let mut persisted = shared.conversations.load(target.extensions(), &agent)?;
    let (counter, counter_key) = config.counter_for(&model);
    let wants_report = config.reports || target.extensions().contains::<CollectCompactionReports>();

    // 1-3: the existing summary, previews, tokens.
    let mut work = Work::new(
        shared,
        config.tool_results,
        target.input(),
        system.as_ref(),
        &persisted,
        &*counter,
        counter_key,
    );
    let tokens_before = work.total;

    let model_window = config.windows.window_for(&model);
    if forced {
        let refused = notes(target.extensions_mut(), instance).sent_tokens;
        if let Some(refused) = refused {
            let learned = (refused.saturating_mul(9) / 10).max(1);
            persisted.window = Some(persisted.window.map_or(learned, |w| w.min(learned)));
        }
    }
    let window = persisted
        .window
        .map_or(model_window, |w| w.min(model_window));

    // 4: summarise the oldest turns.
    let mut summary_error = None;
    let mut fresh_summary = false;
    if let Some(summarizer) = &config.summarizer {
        // Rounded: 0.85 as an f32 is a hair above 0.85.
        let threshold = (f64::from(summarizer.threshold()) * window as f64).round();
        let due = forced || work.total as f64 >= threshold;
        if due
            && let Some((from, cut)) =
                work.summary_range(summarizer.keep_recent(), forced, target.input())
        {
            let previous = work.summary_text(&persisted);
            match summarizer
                .summarize(previous.as_deref(), &work.view(target.input())[from..cut])
                .await
            {
                Ok(text) => {
                    let record = work.summarise(cut, text, &*counter, target.input());
                    persisted.summary = Some(record);
                    fresh_summary = true;
                }
                Err(error) => {
                    tracing::warn!(
                        target: "agentscope::context",
                        hook = HOOK_NAME,
                        %error,
                        "summarising the oldest turns failed; the input is not summarised"
                    );
                    summary_error = Some(error.to_string());
                }
            }
        }
    }

    // 5: the sliding window and the hard limit.
    let reserve = match &target {
        Target::Reasoning(e) => e.generate_options().max_tokens.map_or(0, |n| n as usize),
        Target::Summary(e) => e.generate_options().max_tokens.map_or(0, |n| n as usize),
    };
    let mut budget = config.max_input_tokens;
    let mut limit = |tokens: usize| budget = Some(budget.map_or(tokens, |b| b.min(tokens)));
    if config.hard_limit {
        limit(window.saturating_sub(reserve).max(1));
    }
    if forced {
        limit(((window as f64) * f64::from(config.forced_target)) as usize);
    }
    let dropped = work.slide(config.max_messages, budget, target.input());

    // What is sent.
    let summary = work.summary_in_use(&persisted);
    let report = CompactionReport {
        model: model.clone(),
        window,
        tokens_before,
        tokens_after: work.total,
        used_reported_usage: work.used_usage,
        messages_before,
        messages_after: work.len(),
        forced,
        dropped,
        // Listing thousands of ids at every step only when someone reads them.
        summarized: if wants_report {
            target.input()[..work.covered]
                .iter()
                .map(|m| m.id.clone())
                .collect()
        } else {
            Vec::new()
        },
        summary: summary.as_ref().map(|record| SummaryUse {
            through: record.through.as_str().into(),
            messages: record.messages,
            fresh: fresh_summary,
        }),
        summary_error,
        truncated: std::mem::take(&mut work.truncated),
    };
    trace(&report, work.covered);
    if report.changed() || work.covered > 0 {
        crate::engine::spans::record(
            target.extensions_mut(),
            crate::engine::spans::Decision::Compacted {
                before: report.tokens_before as u64,
                after: report.tokens_after as u64,
            },
        );
    }

    if let Target::Reasoning(_) = target {
        persisted.sent = Some(work.sent(system.as_ref(), target.input()));
        notes(target.extensions_mut(), instance).sent_tokens = Some(work.total);
    }
    shared
        .conversations
        .store(target.extensions_mut(), &agent, persisted);
    if wants_report {
        target.extensions_mut().insert(report);
    } else {
        target.extensions_mut().remove::<CompactionReport>();
    }
    if let Some(messages) = work.into_changed(messages_before) {
        target.set_input(messages);
    }
    Ok(())
}

/// The event whose input the hook compacts.
pub(super) enum Target<'a> {
    Reasoning(&'a mut PreReasoningEvent),
    Summary(&'a mut PreSummaryEvent),
}

impl Target<'_> {
    fn context_exceeded(&self) -> bool {
        match self {
            Target::Reasoning(e) => e.context_exceeded(),
            Target::Summary(_) => false,
        }
    }

    fn agent_id(&self) -> String {
        match self {
            Target::Reasoning(e) => e.agent().id().to_owned(),
            Target::Summary(e) => e.agent().id().to_owned(),
        }
    }

    fn input(&self) -> &[Msg] {
        match self {
            Target::Reasoning(e) => e.input_messages(),
            Target::Summary(e) => e.input_messages(),
        }
    }

    fn system(&self) -> Option<&Msg> {
        match self {
            Target::Reasoning(e) => e.system_message(),
            Target::Summary(e) => e.system_message(),
        }
    }

    fn extensions(&self) -> &Extensions {
        match self {
            Target::Reasoning(e) => e.extensions(),
            Target::Summary(e) => e.extensions(),
        }
    }

    fn extensions_mut(&mut self) -> &mut Extensions {
        match self {
            Target::Reasoning(e) => e.extensions_mut(),
            Target::Summary(e) => e.extensions_mut(),
        }
    }

    fn set_input(&mut self, messages: Vec<Msg>) {
        match self {
            Target::Reasoning(e) => e.set_input_messages(messages),
            Target::Summary(e) => e.set_input_messages(messages),
        }
    }
}

/// Emits the `tracing` event of one compaction (`summarized`: how many messages the summary
/// stands for).
fn trace(report: &CompactionReport, summarized: usize) {
    macro_rules! event {
        ($level:expr, $message:literal) => {
            tracing::event!(
                target: "agentscope::context",
                $level,
                hook = HOOK_NAME,
                model = %report.model,
                window = report.window,
                tokens_before = report.tokens_before,
                tokens_after = report.tokens_after,
                messages_before = report.messages_before,
                messages_after = report.messages_after,
                dropped = report.dropped.len(),
                summarized = summarized,
                truncated = report.truncated.len(),
                forced = report.forced,
                $message
            )
        };
    }
    if report.changed() || summarized > 0 {
        event!(tracing::Level::INFO, "context compacted");
    } else {
        event!(tracing::Level::DEBUG, "context within limits");
    }
}
