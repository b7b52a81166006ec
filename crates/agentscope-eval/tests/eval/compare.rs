//! A candidate against a baseline: which cases changed and how, and the sign test that
//! says whether the pass rate moved beyond noise.

use agentscope::prelude::*;
use agentscope_eval::{
    AnswerCriterion, Case, CaseChange, ChangeKind, Evaluator, Progress, Report, RunContext,
};
use agentscope_test::{ScriptedModel, ScriptedResponse};

/// An evaluation where each case's runs pass or fail as `outcomes` say (one per repetition).
async fn report_of(outcomes: &[(&str, &[bool])]) -> Report {
    let k = outcomes[0].1.len();
    let table: Vec<(String, Vec<bool>)> = outcomes
        .iter()
        .map(|(id, runs)| ((*id).to_owned(), runs.to_vec()))
        .collect();
    let evaluator = Evaluator::builder(move |run: &RunContext<'_>| {
        let (_, runs) = table.iter().find(|(id, _)| *id == run.case.id).unwrap();
        let answer = if runs[run.repetition as usize] {
            "42"
        } else {
            "41"
        };
        ReActAgent::builder()
            .model(ScriptedModel::new([ScriptedResponse::text(answer)]))
            .build()
    })
    .repetitions(k as u32)
    .progress(Progress::Off)
    .build()
    .unwrap();
    let cases: Vec<Case> = outcomes
        .iter()
        .map(|(id, _)| Case::new(*id, "6*7?").expect_answer(AnswerCriterion::contains("42")))
        .collect();
    evaluator.run(&cases).await
}

fn change(id: &str, kind: ChangeKind, baseline: Option<f64>, candidate: Option<f64>) -> CaseChange {
    serde_json::from_value(serde_json::json!({
        "id": id, "kind": kind, "baseline": baseline, "candidate": candidate
    }))
    .unwrap()
}

#[tokio::test]
async fn each_changed_case_is_named_with_how_it_changed() {
    let baseline = report_of(&[
        ("same", &[true, true]),
        ("fixed", &[true, false]),
        ("better", &[false, false]),
        ("broke", &[true, true]),
        ("gone", &[true, true]),
    ])
    .await;
    let candidate = report_of(&[
        ("same", &[true, true]),
        ("fixed", &[true, true]),
        ("better", &[true, false]),
        ("broke", &[true, false]),
        ("new", &[true, true]),
    ])
    .await;
    let comparison = candidate.compare_to(&baseline);
    assert_eq!(
        comparison.changes,
        [
            change("fixed", ChangeKind::Fixed, Some(0.5), Some(1.0)),
            change("better", ChangeKind::Better, Some(0.0), Some(0.5)),
            change("broke", ChangeKind::Broke, Some(1.0), Some(0.5)),
            change("new", ChangeKind::Added, None, Some(1.0)),
            change("gone", ChangeKind::Removed, Some(1.0), None),
        ]
    );
    assert_eq!(
        (
            comparison.improved,
            comparison.regressed,
            comparison.unchanged
        ),
        (2, 1, 1)
    );
    assert_eq!(
        (
            comparison.baseline_pass_rate,
            comparison.candidate_pass_rate
        ),
        (0.7, 0.8)
    );
    assert_eq!(comparison.p_value, 1.0);
    assert!(!comparison.significant);
    assert_eq!(
        comparison.verdict(),
        "pass rate 70.0% -> 80.0% (+10.0 points); 1 case worse, 2 cases better, 1 the same; sign test p = 1.000: within noise (needs p < 0.05)"
    );
    assert_eq!(
        comparison.to_markdown(),
        "# Baseline vs candidate

pass rate 70.0% -> 80.0% (+10.0 points); 1 case worse, 2 cases better, 1 the same; sign test p = 1.000: within noise (needs p < 0.05)

| case | change | baseline | candidate |
|---|---|---|---|
| fixed | fixed | 50.0% | 100.0% |
| better | better | 0.0% | 50.0% |
| broke | BROKE | 100.0% | 50.0% |
| new | added | - | 100.0% |
| gone | removed | 100.0% | - |
"
    );
}

#[tokio::test]
async fn a_drop_is_beyond_noise_only_when_enough_cases_move_together() {
    let ids = ["a", "b", "c", "d", "e", "f"];
    let all = |passed: bool, n: usize| -> Vec<(&str, &[bool])> {
        ids[..n]
            .iter()
            .map(|id| (*id, if passed { &[true][..] } else { &[false][..] }))
            .collect()
    };
    // Four cases that all broke: p = 2/16, within noise.
    let four = report_of(&all(false, 4))
        .await
        .compare_to(&report_of(&all(true, 4)).await);
    assert_eq!(
        (four.regressed, four.p_value, four.significant),
        (4, 0.125, false)
    );
    // Six: p = 2/64, beyond it.
    let six = report_of(&all(false, 6))
        .await
        .compare_to(&report_of(&all(true, 6)).await);
    assert_eq!(
        (six.regressed, six.p_value, six.significant),
        (6, 0.03125, true)
    );
    assert_eq!(
        six.verdict(),
        "pass rate 100.0% -> 0.0% (-100.0 points); 6 cases worse, 0 cases better, 0 the same; sign test p = 0.031: beyond noise (p < 0.05)"
    );
    // A comparison with itself: nothing changed.
    let same = report_of(&all(true, 6)).await;
    let itself = same.compare_to(&same);
    assert!(itself.changes.is_empty());
    assert_eq!(
        (itself.unchanged, itself.p_value, itself.significant),
        (6, 1.0, false)
    );
}
