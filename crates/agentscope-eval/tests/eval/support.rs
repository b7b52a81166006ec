//! What the tests share: agents on scripted models, evaluators without a progress bar.

use agentscope::prelude::*;
use agentscope_eval::{Evaluator, EvaluatorBuilder, Progress, RunContext};
use agentscope_test::ScriptedModel;
use agentscope_test::tools::Calculator;

/// An evaluator whose runs each get an agent with the calculator on a fork of `model`
/// (each run plays the whole script).
pub(crate) fn calculator_evaluator(model: &ScriptedModel) -> EvaluatorBuilder {
    let model = model.clone();
    Evaluator::builder(move |_run: &RunContext<'_>| {
        ReActAgent::builder()
            .name("assistant")
            .model(model.fork())
            .toolkit(Toolkit::new().tool(Calculator::new()))
            .build()
    })
    .progress(Progress::Off)
}
