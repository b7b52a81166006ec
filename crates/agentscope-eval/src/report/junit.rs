//! The report as JUnit XML (the schema CI systems read: Jenkins, GitLab, GitHub actions'
//! test reporters).

use std::fmt::Write as _;

use super::{CaseReport, Report};
use crate::score::percent;

pub(super) fn write(report: &Report) -> String {
    let summary = &report.summary;
    let failures = report
        .cases
        .iter()
        .filter(|case| !case.passed && !all_errors(case))
        .count();
    let errors = report
        .cases
        .iter()
        .filter(|case| !case.passed && all_errors(case))
        .count();
    let seconds = summary.run_time.as_secs_f64();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"agentscope-eval\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{seconds:.3}\">",
        summary.cases
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"agentscope-eval\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{seconds:.3}\" timestamp=\"{}\">",
        summary.cases,
        report.started_at.format("%Y-%m-%dT%H:%M:%S")
    );
    xml.push_str("    <properties>\n");
    let mut property = |name: &str, value: &str| {
        let _ = writeln!(
            xml,
            "      <property name=\"{}\" value=\"{}\"/>",
            escape(name),
            escape(value)
        );
    };
    property("repetitions", &report.repetitions.to_string());
    property("pass_rate", &format!("{:.4}", summary.pass_rate));
    property("pass_at_k", &format!("{:.4}", summary.pass_at_k));
    property("pass_all_k", &format!("{:.4}", summary.pass_all_k));
    property("models", &summary.models.join(", "));
    xml.push_str("    </properties>\n");
    for case in &report.cases {
        testcase(&mut xml, report, case);
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}

/// Whether every failing run of `case` failed before it could be scored.
fn all_errors(case: &CaseReport) -> bool {
    let mut failing = case.runs.iter().filter(|run| !run.passed).peekable();
    failing.peek().is_some() && failing.all(|run| run.error.is_some())
}

fn testcase(xml: &mut String, report: &Report, case: &CaseReport) {
    let seconds: f64 = case.runs.iter().map(|r| r.metrics.wall.as_secs_f64()).sum();
    let _ = writeln!(
        xml,
        "    <testcase classname=\"agentscope-eval\" name=\"{}\" time=\"{seconds:.3}\">",
        escape(&case.id)
    );
    // Each criterion's mean score over the case's runs.
    let mut names: Vec<&str> = Vec::new();
    for run in &case.runs {
        for result in &run.criteria {
            if !names.contains(&result.name.as_str()) {
                names.push(&result.name);
            }
        }
    }
    if !names.is_empty() || !case.tags.is_empty() {
        xml.push_str("      <properties>\n");
        for name in names {
            let scores: Vec<f64> = case
                .runs
                .iter()
                .flat_map(|run| &run.criteria)
                .filter(|result| result.name == name && !result.is_error())
                .map(|result| result.score)
                .collect();
            let mean = if scores.is_empty() {
                "n/a".to_owned()
            } else {
                format!("{:.4}", scores.iter().sum::<f64>() / scores.len() as f64)
            };
            let _ = writeln!(
                xml,
                "        <property name=\"{}\" value=\"{mean}\"/>",
                escape(name)
            );
        }
        if !case.tags.is_empty() {
            let _ = writeln!(
                xml,
                "        <property name=\"tags\" value=\"{}\"/>",
                escape(&case.tags.join(", "))
            );
        }
        xml.push_str("      </properties>\n");
    }
    if !case.passed {
        let element = if all_errors(case) { "error" } else { "failure" };
        let message = format!(
            "{} of {} runs passed ({}; the case needs {})",
            case.runs_passed,
            case.runs.len(),
            percent(case.pass_rate),
            percent(report.case_threshold)
        );
        let mut details = String::new();
        for run in case.runs.iter().filter(|run| !run.passed) {
            let _ = writeln!(details, "run {}:", run.repetition + 1);
            if let Some(error) = &run.error {
                let _ = writeln!(details, "  error: {error}");
            }
            for result in run.criteria.iter().filter(|r| !r.passed && !r.is_error()) {
                let _ = writeln!(
                    details,
                    "  {} {:.2}: {}",
                    result.name, result.score, result.reason
                );
            }
        }
        let _ = writeln!(
            xml,
            "      <{element} message=\"{}\" type=\"{}\">{}</{element}>",
            escape(&message),
            if element == "error" {
                "run_error"
            } else {
                "criteria"
            },
            escape(&details)
        );
        let mut out = String::new();
        for run in case.runs.iter().filter(|run| !run.passed) {
            let _ = writeln!(out, "--- run {} transcript ---", run.repetition + 1);
            for line in &run.transcript {
                let _ = writeln!(out, "{line}");
            }
        }
        let _ = writeln!(xml, "      <system-out>{}</system-out>", escape(&out));
    }
    xml.push_str("    </testcase>\n");
}

/// Text for an XML attribute or element: the five entities, and characters XML 1.0 does
/// not allow replaced by U+FFFD.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn xml_text_is_escaped() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>\u{1}\n"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\u{FFFD}\n"
        );
    }
}
