//! [`Comparison`]: a candidate run against a baseline, case by case, with a sign test
//! saying whether the pass rate moved beyond noise.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{CaseReport, Report};
use crate::score::percent;

/// How a case changed between the baseline and the candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeKind {
    /// It failed in the baseline and passes now.
    Fixed,
    /// It passed in the baseline and fails now.
    Broke,
    /// Same verdict, a higher pass rate.
    Better,
    /// Same verdict, a lower pass rate.
    Worse,
    /// Only in the candidate.
    Added,
    /// Only in the baseline.
    Removed,
}

/// One case that changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CaseChange {
    /// The case's id.
    pub id: String,
    /// How it changed.
    pub kind: ChangeKind,
    /// Its pass rate in the baseline (`None`: not there).
    pub baseline: Option<f64>,
    /// Its pass rate in the candidate (`None`: not there).
    pub candidate: Option<f64>,
}

/// A candidate evaluation against a baseline: which cases changed, and whether the pass
/// rate moved beyond noise.
///
/// Noise is judged with an exact two-sided **sign test** over the cases both reports
/// have: each case whose pass rate went up counts as a plus, down as a minus, unchanged
/// not at all; under "nothing changed" pluses and minuses are equally likely, and the
/// p-value is the chance of a split at least as lopsided. The move is **significant**
/// when p < 0.05. The test is paired by case (a hard case stays hard in both runs) and
/// assumes nothing about how scores are distributed; it needs several cases moving the
/// same way: with 4 cases all worse p = 0.125, with 6, p = 0.031. Repetitions make each
/// case's pass rate finer, so more moves are seen.
///
/// ```
/// # use agentscope_eval::{Comparison, Report};
/// # fn compare(baseline: &Report, candidate: &Report) {
/// let comparison = candidate.compare_to(baseline);
/// if comparison.significant && comparison.delta < 0.0 {
///     eprintln!("{}", comparison.to_markdown());
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Comparison {
    /// The baseline's pass rate (over its runs).
    pub baseline_pass_rate: f64,
    /// The candidate's pass rate.
    pub candidate_pass_rate: f64,
    /// Candidate minus baseline.
    pub delta: f64,
    /// Cases in both reports whose pass rate went up.
    pub improved: usize,
    /// Cases in both reports whose pass rate went down.
    pub regressed: usize,
    /// Cases in both reports with the same pass rate.
    pub unchanged: usize,
    /// The sign test's two-sided p-value (1 when no case moved).
    pub p_value: f64,
    /// Whether the pass rate moved beyond noise (p < [`Comparison::ALPHA`]).
    pub significant: bool,
    /// The cases that changed, in the candidate's order, then the removed ones.
    pub changes: Vec<CaseChange>,
}

impl Comparison {
    /// The significance level.
    pub const ALPHA: f64 = 0.05;

    /// Compares `candidate` with `baseline`.
    pub fn new(baseline: &Report, candidate: &Report) -> Self {
        let before: HashMap<&str, &CaseReport> =
            baseline.cases.iter().map(|c| (c.id.as_str(), c)).collect();
        let mut seen = std::collections::HashSet::new();
        let (mut improved, mut regressed, mut unchanged) = (0, 0, 0);
        let mut changes = Vec::new();
        for case in &candidate.cases {
            seen.insert(case.id.as_str());
            let Some(old) = before.get(case.id.as_str()) else {
                changes.push(CaseChange {
                    id: case.id.clone(),
                    kind: ChangeKind::Added,
                    baseline: None,
                    candidate: Some(case.pass_rate),
                });
                continue;
            };
            let kind = match (old.passed, case.passed) {
                (false, true) => Some(ChangeKind::Fixed),
                (true, false) => Some(ChangeKind::Broke),
                _ if case.pass_rate > old.pass_rate => Some(ChangeKind::Better),
                _ if case.pass_rate < old.pass_rate => Some(ChangeKind::Worse),
                _ => None,
            };
            if case.pass_rate > old.pass_rate {
                improved += 1;
            } else if case.pass_rate < old.pass_rate {
                regressed += 1;
            } else {
                unchanged += 1;
            }
            if let Some(kind) = kind {
                changes.push(CaseChange {
                    id: case.id.clone(),
                    kind,
                    baseline: Some(old.pass_rate),
                    candidate: Some(case.pass_rate),
                });
            }
        }
        for case in &baseline.cases {
            if !seen.contains(case.id.as_str()) {
                changes.push(CaseChange {
                    id: case.id.clone(),
                    kind: ChangeKind::Removed,
                    baseline: Some(case.pass_rate),
                    candidate: None,
                });
            }
        }
        let p_value = sign_test(improved, regressed);
        Comparison {
            baseline_pass_rate: baseline.pass_rate(),
            candidate_pass_rate: candidate.pass_rate(),
            delta: candidate.pass_rate() - baseline.pass_rate(),
            improved,
            regressed,
            unchanged,
            p_value,
            significant: p_value < Self::ALPHA,
            changes,
        }
    }

    /// One sentence: `pass rate 80.0% -> 60.0% (-20.0 points); 4 cases worse, 0 better, 2
    /// the same; sign test p = 0.125: within noise (needs p < 0.05)`.
    pub fn verdict(&self) -> String {
        format!(
            "pass rate {} -> {} ({:+.1} points); {} worse, {} better, {} the same; sign test p = {:.3}: {}",
            percent(self.baseline_pass_rate),
            percent(self.candidate_pass_rate),
            self.delta * 100.0,
            cases(self.regressed),
            cases(self.improved),
            self.unchanged,
            self.p_value,
            if self.significant {
                format!("beyond noise (p < {})", Self::ALPHA)
            } else {
                format!("within noise (needs p < {})", Self::ALPHA)
            }
        )
    }

    /// The comparison as Markdown: the verdict and a table of the cases that changed.
    pub fn to_markdown(&self) -> String {
        let mut md = format!("# Baseline vs candidate\n\n{}\n", self.verdict());
        if !self.changes.is_empty() {
            md.push_str("\n| case | change | baseline | candidate |\n|---|---|---|---|\n");
            let rate = |rate: Option<f64>| rate.map_or_else(|| "-".to_owned(), percent);
            for change in &self.changes {
                let kind = match change.kind {
                    ChangeKind::Fixed => "fixed",
                    ChangeKind::Broke => "BROKE",
                    ChangeKind::Better => "better",
                    ChangeKind::Worse => "worse",
                    ChangeKind::Added => "added",
                    ChangeKind::Removed => "removed",
                };
                let _ = writeln!(
                    md,
                    "| {} | {kind} | {} | {} |",
                    change.id.replace('|', "\\|"),
                    rate(change.baseline),
                    rate(change.candidate)
                );
            }
        }
        md
    }
}

fn cases(count: usize) -> String {
    if count == 1 {
        "1 case".to_owned()
    } else {
        format!("{count} cases")
    }
}

/// The exact two-sided sign test: the chance, with pluses and minuses equally likely, of
/// a split at least as lopsided as `plus` against `minus`.
pub(crate) fn sign_test(plus: usize, minus: usize) -> f64 {
    let n = plus + minus;
    if n == 0 {
        return 1.0;
    }
    let tail = plus.min(minus);
    let p = if n <= 1000 {
        lower_tail(n, tail)
    } else {
        lower_tail_in_logs(n, tail)
    };
    (2.0 * p).min(1.0)
}

/// P(X <= tail) for X ~ Binomial(n, 1/2), directly: exact for the small counts reports
/// have (C(n, k) and 2^-n are exact in a double up to n = 53), finite up to n = 1000.
fn lower_tail(n: usize, tail: usize) -> f64 {
    let half_n = 0.5f64.powi(n as i32);
    let mut choose = 1.0f64; // C(n, 0)
    let mut sum = 0.0;
    for k in 0..=tail {
        if k > 0 {
            choose = choose * (n - k + 1) as f64 / k as f64;
        }
        sum += choose * half_n;
    }
    sum
}

/// [`lower_tail`] in logs, for any n.
fn lower_tail_in_logs(n: usize, tail: usize) -> f64 {
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_choose = 0.0f64;
    let mut sum = 0.0;
    for k in 0..=tail {
        if k > 0 {
            ln_choose += ((n - k + 1) as f64).ln() - (k as f64).ln();
        }
        sum += (ln_choose + ln_half_n).exp();
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::{lower_tail, lower_tail_in_logs, sign_test};

    #[test]
    fn the_sign_test_is_exact() {
        assert_eq!(sign_test(0, 0), 1.0);
        // 4 of 4 one way: 2 * (1/16).
        assert_eq!(sign_test(0, 4), 0.125);
        // 6 of 6: 2 / 64.
        assert_eq!(sign_test(6, 0), 0.03125);
        // 1 against 5: 2 * (C(6,0) + C(6,1)) / 64.
        assert_eq!(sign_test(1, 5), 0.21875);
        // The two ways agree.
        for (n, tail) in [(10, 3), (100, 40), (1000, 480)] {
            let (direct, logs) = (lower_tail(n, tail), lower_tail_in_logs(n, tail));
            assert!(
                (direct - logs).abs() <= 1e-9 * direct,
                "{n} {tail}: {direct} {logs}"
            );
        }
        // An even split is no evidence at all.
        assert_eq!(sign_test(3, 3), 1.0);
        // Large n does not overflow: 0 of 2000.
        assert!(sign_test(0, 2000) < 1e-300);
        assert_eq!(sign_test(1000, 1000), 1.0);
    }
}
