//! The report as Markdown, for people.

use std::fmt::Write as _;

use agentscope::ChatUsage;

use super::Report;
use crate::score::percent;

pub(super) fn write(report: &Report) -> String {
    let s = &report.summary;
    let k = report.repetitions;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Evaluation: {} of {} cases passed, {} of runs\n",
        s.cases_passed,
        s.cases,
        percent(s.pass_rate)
    );
    md.push_str("| | |\n|---|---|\n");
    let _ = writeln!(
        md,
        "| started | {} |",
        report.started_at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    if !s.models.is_empty() {
        let _ = writeln!(md, "| model | {} |", cell(&s.models.join(", ")));
    }
    let _ = writeln!(
        md,
        "| runs | {} ({} cases x {k}), {} passed, {} failed before scoring |",
        s.runs, s.cases, s.runs_passed, s.runs_errored
    );
    let _ = writeln!(md, "| pass rate (runs) | {} |", percent(s.pass_rate));
    let _ = writeln!(
        md,
        "| pass@{k} (a case passed at least once) | {} |",
        percent(s.pass_at_k)
    );
    let _ = writeln!(
        md,
        "| pass^{k} (a case passed every time) | {} |",
        percent(s.pass_all_k)
    );
    let _ = writeln!(
        md,
        "| cases passed (each needs {} of its runs) | {} of {} |",
        percent(report.case_threshold),
        s.cases_passed,
        s.cases
    );
    let _ = writeln!(
        md,
        "| agent | {} model calls, {} tool calls, {} |",
        s.model_calls,
        s.tool_calls,
        tokens(s.usage)
    );
    if s.judge_calls > 0 {
        let _ = writeln!(
            md,
            "| judge | {} calls, {} |",
            s.judge_calls,
            tokens(s.judge_usage)
        );
    }
    let per_run = if s.runs == 0 {
        0.0
    } else {
        s.run_time.as_secs_f64() / s.runs as f64
    };
    let _ = writeln!(
        md,
        "| time | {:.2} s elapsed, {:.3} s per run |",
        s.elapsed.as_secs_f64(),
        per_run
    );
    if !s.criteria.is_empty() {
        md.push_str("\n## Criteria\n\n| criterion | runs | passed | not evaluated | mean score |\n|---|---|---|---|---|\n");
        for (name, c) in &s.criteria {
            let _ = writeln!(
                md,
                "| {name} | {} | {} | {} | {:.3} |",
                c.runs, c.passed, c.errors, c.mean_score
            );
        }
    }
    md.push_str("\n## Cases\n\n| case | result | runs passed | pass rate | mean time | tokens | tags |\n|---|---|---|---|---|---|---|\n");
    for case in &report.cases {
        let time = if case.runs.is_empty() {
            0.0
        } else {
            case.runs
                .iter()
                .map(|r| r.metrics.wall.as_secs_f64())
                .sum::<f64>()
                / case.runs.len() as f64
        };
        let tokens: u64 = case
            .runs
            .iter()
            .filter_map(|r| r.metrics.usage)
            .map(|u| u.input_tokens + u.output_tokens)
            .sum();
        let _ = writeln!(
            md,
            "| {} | {} | {} of {} | {} | {:.3} s | {} | {} |",
            cell(&case.id),
            if case.passed { "pass" } else { "FAIL" },
            case.runs_passed,
            case.runs.len(),
            percent(case.pass_rate),
            time,
            tokens,
            cell(&case.tags.join(", "))
        );
    }
    let failing: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.runs_passed < c.runs.len())
        .collect();
    if !failing.is_empty() {
        md.push_str("\n## Failing runs\n");
        for case in failing {
            for run in case.runs.iter().filter(|r| !r.passed) {
                let _ = writeln!(md, "\n### {}, run {}\n", case.id, run.repetition + 1);
                if let Some(error) = &run.error {
                    let _ = writeln!(
                        md,
                        "- error ({}): {}",
                        run.error_type.as_deref().unwrap_or("_OTHER"),
                        error
                    );
                }
                for result in run.criteria.iter().filter(|r| !r.passed && !r.is_error()) {
                    let _ = writeln!(
                        md,
                        "- {} {:.3}: {}",
                        result.name, result.score, result.reason
                    );
                }
                for result in run
                    .criteria
                    .iter()
                    .filter(|r| r.is_error() && run.error.is_none())
                {
                    let _ = writeln!(
                        md,
                        "- {} not evaluated ({}): {}",
                        result.name,
                        result.error_type.as_deref().unwrap_or("_OTHER"),
                        result.reason
                    );
                }
                if !run.transcript.is_empty() {
                    md.push_str("\n```text\n");
                    for line in &run.transcript {
                        // A line cannot close the fence.
                        let _ = writeln!(md, "{}", line.replace("```", "'''"));
                    }
                    md.push_str("```\n");
                }
            }
        }
    }
    md
}

fn tokens(usage: Option<ChatUsage>) -> String {
    match usage {
        Some(u) => format!("{} tokens in, {} out", u.input_tokens, u.output_tokens),
        None => "no token usage reported".to_owned(),
    }
}

/// Text for a table cell: no line breaks, no column separators.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}
