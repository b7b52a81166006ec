//! The trajectory: the tool calls an agent made ([`ToolCall`]), the ones a case expects
//! ([`ExpectedCall`]), and how they are compared ([`TrajectoryMode`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::matcher::{Matcher, clip, show};
use crate::score::{CriterionResult, ratio};

/// A tool call the agent made during a run, as its stream showed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The call's id (the model's).
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments.
    pub args: Value,
    /// The result's text, once the tool answered (`None`: it never did, e.g. the call was
    /// stopped for approval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Whether the result is an error the model saw (unknown tool, invalid arguments, a
    /// failing tool).
    #[serde(default)]
    pub is_error: bool,
}

impl ToolCall {
    /// A call of `tool` with `args`, not answered yet.
    pub fn new(id: impl Into<String>, tool: impl Into<String>, args: Value) -> Self {
        Self {
            id: id.into(),
            tool: tool.into(),
            args,
            result: None,
            is_error: false,
        }
    }
}

impl fmt::Display for ToolCall {
    /// `calculator({"expression":"6*7"})`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.tool, clip(&self.args.to_string(), 120))
    }
}

/// A tool call a case expects: the tool, and what its arguments must be.
///
/// ```json
/// {"tool": "create_order", "args": {"sku": "A-1", "id": {"$any": true}, "qty": {"$approx": 2}}}
/// ```
///
/// - `args` left out: any arguments;
/// - `args` given: every argument named must match its [`Matcher`], and the call may have
///   no other argument unless `"partial_args": true`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ExpectedCall {
    /// The tool's name.
    pub tool: String,
    /// What each argument must be (`None`: any arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<BTreeMap<String, Matcher>>,
    /// Whether the call may have arguments `args` does not name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial_args: bool,
}

impl ExpectedCall {
    /// A call of `tool` with any arguments.
    pub fn new(tool: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            args: None,
            partial_args: false,
        }
    }

    /// Requires the argument `name` to match `matcher` (a `serde_json::Value` is an equal
    /// match).
    #[must_use]
    pub fn arg(mut self, name: impl Into<String>, matcher: impl Into<Matcher>) -> Self {
        self.args
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), matcher.into());
        self
    }

    /// Allows arguments the expected call does not name.
    #[must_use]
    pub fn partial_args(mut self, partial: bool) -> Self {
        self.partial_args = partial;
        self
    }

    /// Whether `call` is this call; `Err` says why not (`called search, not calculator`,
    /// `argument "expression" is "6 * 7", not "6*7"`).
    pub fn check(&self, call: &ToolCall) -> Result<(), String> {
        if call.tool != self.tool {
            return Err(format!("called {}, not {}", call.tool, self.tool));
        }
        let Some(expected) = &self.args else {
            return Ok(());
        };
        let empty = serde_json::Map::new();
        let actual = match &call.args {
            Value::Object(object) => object,
            // A call without arguments.
            Value::Null => &empty,
            other => return Err(format!("its arguments are {}, not an object", show(other))),
        };
        for (name, matcher) in expected {
            matcher
                .check(actual.get(name))
                .map_err(|why| format!("argument \"{name}\" {why}"))?;
        }
        if !self.partial_args
            && let Some(extra) = actual.keys().find(|k| !expected.contains_key(*k))
        {
            return Err(format!(
                "it has the argument \"{extra}\" the case does not name (\"partial_args\": true allows it)"
            ));
        }
        Ok(())
    }
}

impl fmt::Display for ExpectedCall {
    /// `calculator(expression=/^6\*7$/)`, `search(any arguments)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.args {
            None => write!(f, "{}(any arguments)", self.tool),
            Some(args) => {
                write!(f, "{}(", self.tool)?;
                for (at, (name, matcher)) in args.iter().enumerate() {
                    if at > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{name}={matcher}")?;
                }
                if self.partial_args {
                    f.write_str(if args.is_empty() { "..." } else { ", ..." })?;
                }
                f.write_str(")")
            }
        }
    }
}

/// How the calls an agent made are compared with the expected ones. Each mode scores from 0
/// to 1 and passes only at 1.
///
/// | mode | passes when | score | ADK eval | agentevals |
/// |---|---|---|---|---|
/// | `strict` (default) | the same calls in the same order, nothing more | calls matching the expected call at their position / the longer list's length | `EXACT` | `strict` |
/// | `in_order` | the expected calls appear in order; other calls may come between | the longest in-order run of expected calls / the expected count | `IN_ORDER` | |
/// | `any_order` | the same calls in any order, nothing more | calls paired one to one / the longer list's length | | `unordered` |
/// | `subset` | every call made is one of the expected ones (some may be missing) | calls made that pair with an expected one / calls made | | `subset` |
/// | `superset` | every expected call was made, in any order (others may be too) | expected calls that pair with one made / the expected count | `ANY_ORDER` | `superset` |
///
/// Pairing is one to one: two calls made cannot both pair with one expected call. With no
/// call expected and none made, every mode scores 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TrajectoryMode {
    /// The same calls in the same order, nothing more.
    #[default]
    Strict,
    /// The expected calls in order, others allowed between.
    InOrder,
    /// The same calls in any order, nothing more.
    AnyOrder,
    /// Only expected calls were made (some may be missing).
    Subset,
    /// Every expected call was made (others may be too).
    Superset,
}

impl TrajectoryMode {
    /// The mode's name in case files (`strict`, `in_order`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            TrajectoryMode::Strict => "strict",
            TrajectoryMode::InOrder => "in_order",
            TrajectoryMode::AnyOrder => "any_order",
            TrajectoryMode::Subset => "subset",
            TrajectoryMode::Superset => "superset",
        }
    }

    /// The criterion's name: `trajectory.strict`, `trajectory.in_order`, ...
    pub fn criterion_name(self) -> String {
        format!("trajectory.{}", self.as_str())
    }

    /// Scores the calls `made` against the `expected` ones.
    ///
    /// ```
    /// use agentscope_eval::{ExpectedCall, ToolCall, TrajectoryMode};
    /// use serde_json::json;
    ///
    /// let expected = [ExpectedCall::new("search"), ExpectedCall::new("calculator")];
    /// let made = [ToolCall::new("c1", "calculator", json!({"expression": "6*7"}))];
    /// let result = TrajectoryMode::Superset.score(&expected, &made);
    /// assert_eq!(result.score, 0.5);
    /// assert!(!result.passed);
    /// assert_eq!(
    ///     result.reason,
    ///     "made 1 of the 2 expected calls (1 call in all); not made: search(any arguments)"
    /// );
    /// ```
    pub fn score(self, expected: &[ExpectedCall], made: &[ToolCall]) -> CriterionResult {
        let name = self.criterion_name();
        let (score, passed, reason) = match self {
            TrajectoryMode::Strict => strict(expected, made),
            TrajectoryMode::InOrder => in_order(expected, made),
            TrajectoryMode::AnyOrder => {
                let pairs = pair(expected, made);
                let paired = pairs.count();
                let passed = paired == expected.len() && paired == made.len();
                let score = ratio(paired, expected.len().max(made.len()));
                let reason = if passed {
                    format!(
                        "made exactly the {} in any order",
                        calls(expected.len(), "expected call")
                    )
                } else {
                    let mut reason = format!(
                        "{} of the {} paired with {} made",
                        paired,
                        calls(expected.len(), "expected call"),
                        calls(made.len(), "call")
                    );
                    pairs.explain_unpaired(expected, made, &mut reason, true, true);
                    reason
                };
                (score, passed, reason)
            }
            TrajectoryMode::Subset => {
                let pairs = pair(expected, made);
                let paired = pairs.count();
                let passed = paired == made.len();
                let reason = if passed {
                    format!(
                        "every one of the {} is expected ({} expected)",
                        calls(made.len(), "call made"),
                        expected.len()
                    )
                } else {
                    let mut reason = format!(
                        "{} of the {} expected ({} expected)",
                        paired,
                        calls(made.len(), "call made"),
                        expected.len()
                    );
                    pairs.explain_unpaired(expected, made, &mut reason, false, true);
                    reason
                };
                (ratio(paired, made.len()), passed, reason)
            }
            TrajectoryMode::Superset => {
                let pairs = pair(expected, made);
                let paired = pairs.count();
                let passed = paired == expected.len();
                let reason = if passed {
                    format!(
                        "made all {} ({} in all)",
                        calls(expected.len(), "expected call"),
                        calls(made.len(), "call")
                    )
                } else {
                    let mut reason = format!(
                        "made {} of the {} ({} in all)",
                        paired,
                        calls(expected.len(), "expected call"),
                        calls(made.len(), "call")
                    );
                    pairs.explain_unpaired(expected, made, &mut reason, true, false);
                    reason
                };
                (ratio(paired, expected.len()), passed, reason)
            }
        };
        CriterionResult::new(name, score, passed, reason)
    }
}

/// `1 call`, `2 calls`, `0 expected calls`, `3 calls made`.
fn calls(count: usize, what: &str) -> String {
    if count == 1 {
        return format!("1 {what}");
    }
    let plural = match what {
        "expected call" => "expected calls",
        "call made" => "calls made",
        _ => "calls",
    };
    format!("{count} {plural}")
}

fn strict(expected: &[ExpectedCall], made: &[ToolCall]) -> (f64, bool, String) {
    let longer = expected.len().max(made.len());
    let mut matching = 0;
    let mut problems = Vec::new();
    for (at, (want, call)) in expected.iter().zip(made).enumerate() {
        match want.check(call) {
            Ok(()) => matching += 1,
            Err(why) => problems.push(format!(
                "call {}: expected {want}, made {call}: {why}",
                at + 1
            )),
        }
    }
    for (at, want) in expected.iter().enumerate().skip(made.len()) {
        problems.push(format!("call {}: expected {want}, none made", at + 1));
    }
    for (at, call) in made.iter().enumerate().skip(expected.len()) {
        problems.push(format!("call {}: made {call}, none expected", at + 1));
    }
    let passed = problems.is_empty();
    let reason = if passed && made.is_empty() {
        "made no tool call, as expected".to_owned()
    } else if passed {
        format!(
            "made exactly the {}, in order",
            calls(made.len(), "expected call")
        )
    } else {
        format!(
            "{} of {} in place; {}",
            matching,
            calls(longer, "call"),
            problems.join("; ")
        )
    };
    (ratio(matching, longer), passed, reason)
}

fn in_order(expected: &[ExpectedCall], made: &[ToolCall]) -> (f64, bool, String) {
    // The longest common subsequence, with "matches" as equality.
    let (n, m) = (expected.len(), made.len());
    let mut table = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[i][j] = if expected[i].check(&made[j]).is_ok() {
                table[i + 1][j + 1] + 1
            } else {
                table[i + 1][j].max(table[i][j + 1])
            };
        }
    }
    let longest = table[0][0];
    // Which expected calls the run leaves out.
    let mut missing = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n {
        if j < m && expected[i].check(&made[j]).is_ok() && table[i][j] == table[i + 1][j + 1] + 1 {
            i += 1;
            j += 1;
        } else if j < m && table[i][j + 1] == table[i][j] {
            j += 1;
        } else {
            missing.push(i);
            i += 1;
        }
    }
    let passed = longest == n;
    let reason = if passed {
        format!(
            "made the {} in order ({} in all)",
            calls(n, "expected call"),
            calls(m, "call")
        )
    } else {
        let missing: Vec<String> = missing
            .iter()
            .map(|&at| {
                let want = &expected[at];
                format!("{want}{}", near_miss(want, made))
            })
            .collect();
        format!(
            "made {} of the {} in order ({} in all); missing from the order: {}",
            longest,
            calls(n, "expected call"),
            calls(m, "call"),
            missing.join("; ")
        )
    };
    (ratio(longest, n), passed, reason)
}

/// Why the closest call made (the first of the same tool) is not `want`, when there is one.
fn near_miss(want: &ExpectedCall, made: &[ToolCall]) -> String {
    made.iter()
        .find(|call| call.tool == want.tool)
        .and_then(|call| {
            want.check(call)
                .err()
                .map(|why| format!(" (made {call}: {why})"))
        })
        .unwrap_or_default()
}

/// A one-to-one pairing of expected calls with calls made.
struct Pairs {
    /// For each call made, the expected call it pairs with.
    of_made: Vec<Option<usize>>,
    /// For each expected call, the call made it pairs with.
    of_expected: Vec<Option<usize>>,
}

impl Pairs {
    fn count(&self) -> usize {
        self.of_made.iter().flatten().count()
    }

    fn explain_unpaired(
        &self,
        expected: &[ExpectedCall],
        made: &[ToolCall],
        reason: &mut String,
        show_expected: bool,
        show_made: bool,
    ) {
        if show_expected {
            let missing: Vec<String> = self
                .of_expected
                .iter()
                .enumerate()
                .filter(|(_, paired)| paired.is_none())
                .map(|(at, _)| format!("{}{}", expected[at], near_miss(&expected[at], made)))
                .collect();
            if !missing.is_empty() {
                reason.push_str("; not made: ");
                reason.push_str(&missing.join("; "));
            }
        }
        if show_made {
            let extra: Vec<String> = self
                .of_made
                .iter()
                .enumerate()
                .filter(|(_, paired)| paired.is_none())
                .map(|(at, _)| made[at].to_string())
                .collect();
            if !extra.is_empty() {
                reason.push_str("; not expected: ");
                reason.push_str(&extra.join("; "));
            }
        }
    }
}

/// The largest one-to-one pairing (augmenting paths, Kuhn's algorithm): a call made pairs
/// with an expected call it matches.
fn pair(expected: &[ExpectedCall], made: &[ToolCall]) -> Pairs {
    let fits: Vec<Vec<usize>> = expected
        .iter()
        .map(|want| {
            made.iter()
                .enumerate()
                .filter(|(_, call)| want.check(call).is_ok())
                .map(|(at, _)| at)
                .collect()
        })
        .collect();
    let mut of_made: Vec<Option<usize>> = vec![None; made.len()];
    for want in 0..expected.len() {
        let mut seen = vec![false; made.len()];
        augment(want, &fits, &mut of_made, &mut seen);
    }
    let mut of_expected = vec![None; expected.len()];
    for (call, want) in of_made.iter().enumerate() {
        if let Some(want) = want {
            of_expected[*want] = Some(call);
        }
    }
    Pairs {
        of_made,
        of_expected,
    }
}

fn augment(
    want: usize,
    fits: &[Vec<usize>],
    of_made: &mut [Option<usize>],
    seen: &mut [bool],
) -> bool {
    for &call in &fits[want] {
        if seen[call] {
            continue;
        }
        seen[call] = true;
        let free = match of_made[call] {
            None => true,
            Some(other) => augment(other, fits, of_made, seen),
        };
        if free {
            of_made[call] = Some(want);
            return true;
        }
    }
    false
}
