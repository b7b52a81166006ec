//! The five trajectory modes with exact scores and reasons, argument checks, generated ids
//! and one-to-one pairing.

use agentscope_eval::{ExpectedCall, Matcher, ToolCall, TrajectoryMode};
use serde_json::json;

use TrajectoryMode::{AnyOrder, InOrder, Strict, Subset, Superset};

fn search(query: &str) -> ToolCall {
    ToolCall::new("s", "search", json!({"query": query}))
}

fn calc(expression: &str) -> ToolCall {
    ToolCall::new("c", "calculator", json!({"expression": expression}))
}

fn expect_search(query: &str) -> ExpectedCall {
    ExpectedCall::new("search").arg("query", json!(query))
}

fn expect_calc(expression: &str) -> ExpectedCall {
    ExpectedCall::new("calculator").arg("expression", json!(expression))
}

/// (score, passed, reason)
fn score(
    mode: TrajectoryMode,
    expected: &[ExpectedCall],
    made: &[ToolCall],
) -> (f64, bool, String) {
    let result = mode.score(expected, made);
    assert_eq!(result.name, format!("trajectory.{}", mode.as_str()));
    assert_eq!(result.error_type, None);
    (result.score, result.passed, result.reason)
}

#[test]
fn strict_wants_the_same_calls_in_the_same_order() {
    let expected = [expect_search("Paris"), expect_calc("6*7")];
    assert_eq!(
        score(Strict, &expected, &[search("Paris"), calc("6*7")]),
        (
            1.0,
            true,
            "made exactly the 2 expected calls, in order".into()
        )
    );
    assert_eq!(
        score(Strict, &expected, &[calc("6*7"), search("Paris")]),
        (
            0.0,
            false,
            "0 of 2 calls in place; call 1: expected search(query=\"Paris\"), made calculator({\"expression\":\"6*7\"}): called calculator, not search; call 2: expected calculator(expression=\"6*7\"), made search({\"query\":\"Paris\"}): called search, not calculator".into()
        )
    );
    assert_eq!(
        score(Strict, &expected, &[search("Paris"), calc("6 * 7"), calc("1+1")]),
        (
            1.0 / 3.0,
            false,
            "1 of 3 calls in place; call 2: expected calculator(expression=\"6*7\"), made calculator({\"expression\":\"6 * 7\"}): argument \"expression\" is \"6 * 7\", not \"6*7\"; call 3: made calculator({\"expression\":\"1+1\"}), none expected".into()
        )
    );
    assert_eq!(
        score(Strict, &expected, &[search("Paris")]),
        (
            0.5,
            false,
            "1 of 2 calls in place; call 2: expected calculator(expression=\"6*7\"), none made"
                .into()
        )
    );
    assert_eq!(
        score(Strict, &[], &[]),
        (1.0, true, "made no tool call, as expected".into())
    );
    assert_eq!(
        score(Strict, &[], &[calc("1")]),
        (
            0.0,
            false,
            "0 of 1 call in place; call 1: made calculator({\"expression\":\"1\"}), none expected"
                .into()
        )
    );
}

#[test]
fn in_order_allows_other_calls_between() {
    let expected = [expect_search("Paris"), expect_calc("6*7")];
    assert_eq!(
        score(
            InOrder,
            &expected,
            &[search("Paris"), calc("1+1"), calc("6*7")]
        ),
        (
            1.0,
            true,
            "made the 2 expected calls in order (3 calls in all)".into()
        )
    );
    // The other order: only one of the two can be in order.
    assert_eq!(
        score(InOrder, &expected, &[calc("6*7"), search("Paris")]),
        (
            0.5,
            false,
            "made 1 of the 2 expected calls in order (2 calls in all); missing from the order: calculator(expression=\"6*7\")".into()
        )
    );
    assert_eq!(
        score(InOrder, &expected, &[search("Lyon")]),
        (
            0.0,
            false,
            "made 0 of the 2 expected calls in order (1 call in all); missing from the order: search(query=\"Paris\") (made search({\"query\":\"Lyon\"}): argument \"query\" is \"Lyon\", not \"Paris\"); calculator(expression=\"6*7\")".into()
        )
    );
    assert_eq!(score(InOrder, &[], &[calc("1")]).0, 1.0);
}

#[test]
fn any_order_wants_the_same_calls_in_any_order() {
    let expected = [expect_search("Paris"), expect_calc("6*7")];
    assert_eq!(
        score(AnyOrder, &expected, &[calc("6*7"), search("Paris")]),
        (
            1.0,
            true,
            "made exactly the 2 expected calls in any order".into()
        )
    );
    assert_eq!(
        score(AnyOrder, &expected, &[calc("6*7"), search("Paris"), calc("1")]),
        (
            2.0 / 3.0,
            false,
            "2 of the 2 expected calls paired with 3 calls made; not expected: calculator({\"expression\":\"1\"})".into()
        )
    );
    assert_eq!(
        score(AnyOrder, &expected, &[calc("6*7")]),
        (
            0.5,
            false,
            "1 of the 2 expected calls paired with 1 call made; not made: search(query=\"Paris\")"
                .into()
        )
    );
}

#[test]
fn subset_wants_only_expected_calls() {
    let expected = [expect_search("Paris"), expect_calc("6*7")];
    assert_eq!(
        score(Subset, &expected, &[calc("6*7")]),
        (
            1.0,
            true,
            "every one of the 1 call made is expected (2 expected)".into()
        )
    );
    assert_eq!(
        score(Subset, &expected, &[calc("6*7"), calc("2*2"), search("Paris")]),
        (
            2.0 / 3.0,
            false,
            "2 of the 3 calls made expected (2 expected); not expected: calculator({\"expression\":\"2*2\"})".into()
        )
    );
    assert_eq!(
        score(Subset, &expected, &[]),
        (
            1.0,
            true,
            "every one of the 0 calls made is expected (2 expected)".into()
        )
    );
}

#[test]
fn superset_wants_every_expected_call() {
    let expected = [expect_search("Paris"), expect_calc("6*7")];
    assert_eq!(
        score(
            Superset,
            &expected,
            &[calc("1"), calc("6*7"), search("Paris")]
        ),
        (
            1.0,
            true,
            "made all 2 expected calls (3 calls in all)".into()
        )
    );
    assert_eq!(
        score(Superset, &expected, &[calc("6 * 7")]),
        (
            0.0,
            false,
            "made 0 of the 2 expected calls (1 call in all); not made: search(query=\"Paris\"); calculator(expression=\"6*7\") (made calculator({\"expression\":\"6 * 7\"}): argument \"expression\" is \"6 * 7\", not \"6*7\")".into()
        )
    );
}

#[test]
fn pairing_is_one_to_one() {
    // One expected call that any calculator call matches, two calls made.
    let expected = [ExpectedCall::new("calculator")];
    let made = [calc("1"), calc("2")];
    assert_eq!(score(Superset, &expected, &made).0, 1.0);
    assert_eq!(score(AnyOrder, &expected, &made).0, 0.5);
    assert_eq!(score(Subset, &expected, &made).0, 0.5);
    assert_eq!(score(Strict, &expected, &made).0, 0.5);
    // Augmenting paths: the loose expectation must not take the only call the strict one fits.
    let expected = [ExpectedCall::new("calculator"), expect_calc("2")];
    assert_eq!(score(AnyOrder, &expected, &[calc("2"), calc("1")]).0, 1.0);
}

#[test]
fn a_generated_id_fails_an_equal_match_but_not_a_matcher() {
    let made = [ToolCall::new(
        "c1",
        "create_order",
        json!({"sku": "A-1", "id": "ord_8f3a", "qty": 2.0}),
    )];
    let equal = ExpectedCall::new("create_order")
        .arg("sku", json!("A-1"))
        .arg("id", json!("ord_0001"))
        .arg("qty", json!(2));
    assert_eq!(
        score(Strict, &[equal], &made),
        (
            0.0,
            false,
            "0 of 1 call in place; call 1: expected create_order(id=\"ord_0001\", qty=2, sku=\"A-1\"), made create_order({\"id\":\"ord_8f3a\",\"qty\":2.0,\"sku\":\"A-1\"}): argument \"id\" is \"ord_8f3a\", not \"ord_0001\"".into()
        )
    );
    let matched = ExpectedCall::new("create_order")
        .arg("sku", json!("A-1"))
        .arg("id", Matcher::any())
        .arg("qty", Matcher::approx(2.0, 0.0).unwrap());
    assert_eq!(score(Strict, &[matched], &made).0, 1.0);
}

#[test]
fn arguments_not_named_fail_unless_partial() {
    let made = [ToolCall::new(
        "w",
        "weather",
        json!({"city": "Paris", "units": "metric"}),
    )];
    let expected = ExpectedCall::new("weather").arg("city", json!("Paris"));
    assert_eq!(
        expected.check(&made[0]).unwrap_err(),
        "it has the argument \"units\" the case does not name (\"partial_args\": true allows it)"
    );
    assert_eq!(expected.clone().partial_args(true).check(&made[0]), Ok(()));
    // No `args` at all: any arguments.
    assert_eq!(ExpectedCall::new("weather").check(&made[0]), Ok(()));
    // A call without arguments matches an empty argument list.
    let bare = ToolCall::new("t", "time", serde_json::Value::Null);
    let no_args: ExpectedCall =
        serde_json::from_value(json!({"tool": "time", "args": {}})).unwrap();
    assert_eq!(no_args.check(&bare), Ok(()));
    assert_eq!(
        no_args
            .check(&ToolCall::new("t", "time", json!(5)))
            .unwrap_err(),
        "its arguments are 5, not an object"
    );
    assert_eq!(
        format!("{}", expected.partial_args(true)),
        "weather(city=\"Paris\", ...)"
    );
}
