//! Every argument matcher: what it accepts, what it rejects and the words it uses, and
//! the errors of a matcher that cannot be read.

use agentscope_eval::Matcher;
use serde_json::{Value, json};

fn matcher(json: Value) -> Matcher {
    Matcher::from_json(json).unwrap()
}

fn error(json: Value) -> String {
    Matcher::from_json(json).unwrap_err().to_string()
}

#[test]
fn equal_compares_numbers_by_value_and_objects_whole() {
    let m = matcher(json!(42));
    assert_eq!(m.check(Some(&json!(42))), Ok(()));
    assert_eq!(m.check(Some(&json!(42.0))), Ok(()));
    assert_eq!(m.check(Some(&json!(41))).unwrap_err(), "is 41, not 42");
    assert_eq!(
        m.check(Some(&json!("42"))).unwrap_err(),
        "is \"42\", not 42"
    );
    let city = matcher(json!({"city": "Paris", "days": [1, 2]}));
    assert_eq!(
        city.check(Some(&json!({"days": [1.0, 2], "city": "Paris"}))),
        Ok(())
    );
    assert_eq!(
        city.check(Some(
            &json!({"city": "Paris", "days": [1, 2], "extra": true})
        ))
        .unwrap_err(),
        "is {\"city\":\"Paris\",\"days\":[1,2],\"extra\":true}, not {\"city\":\"Paris\",\"days\":[1,2]}"
    );
    assert_eq!(matcher(json!("6*7")).check(None).unwrap_err(), "is missing");
}

#[test]
fn any_takes_every_value_but_not_a_missing_argument() {
    let m = matcher(json!({"$any": true}));
    for value in [json!(null), json!("ord_99"), json!({"a": 1}), json!([])] {
        assert_eq!(m.check(Some(&value)), Ok(()), "{value}");
    }
    assert_eq!(m.check(None).unwrap_err(), "is missing");
}

#[test]
fn regex_matches_strings_anywhere_unless_anchored() {
    let loose = matcher(json!({"$regex": "6\\s*\\*\\s*7"}));
    assert_eq!(loose.check(Some(&json!("(6 * 7)"))), Ok(()));
    let anchored = matcher(json!({"$regex": "^6\\s*\\*\\s*7$"}));
    assert_eq!(
        anchored.check(Some(&json!("(6 * 7)"))).unwrap_err(),
        "is \"(6 * 7)\", which does not match /^6\\s*\\*\\s*7$/"
    );
    assert_eq!(
        anchored.check(Some(&json!(42))).unwrap_err(),
        "is 42, not a string matching /^6\\s*\\*\\s*7$/"
    );
}

#[test]
fn approx_takes_numbers_within_the_tolerance() {
    let m = matcher(json!({"$approx": 2.54, "$tolerance": 0.01}));
    assert_eq!(m.check(Some(&json!(2.55))), Ok(()));
    assert_eq!(m.check(Some(&json!(2.53))), Ok(()));
    assert_eq!(
        m.check(Some(&json!(2.6))).unwrap_err(),
        "is 2.6, not within 0.01 of 2.54"
    );
    assert_eq!(
        m.check(Some(&json!("2.54"))).unwrap_err(),
        "is \"2.54\", not a number within 0.01 of 2.54"
    );
    // Without a tolerance: the same number.
    let exact = matcher(json!({"$approx": 2}));
    assert_eq!(exact.check(Some(&json!(2.0))), Ok(()));
    assert_eq!(
        exact.check(Some(&json!(2.0001))).unwrap_err(),
        "is 2.0001, not within 0 of 2"
    );
}

#[test]
fn schema_takes_values_the_schema_accepts() {
    let m = matcher(json!({"$schema": {"type": "string", "pattern": "^ord_[0-9]+$"}}));
    assert_eq!(m.check(Some(&json!("ord_1"))), Ok(()));
    assert_eq!(
        m.check(Some(&json!(7))).unwrap_err(),
        "is 7, which the schema rejects: 7 is not of type \"string\""
    );
    assert_eq!(
        m.check(Some(&json!("x"))).unwrap_err(),
        "is \"x\", which the schema rejects: \"x\" does not match \"^ord_[0-9]+$\""
    );
}

#[test]
fn eq_makes_a_literal_of_what_looks_like_a_matcher() {
    let m = matcher(json!({"$eq": {"$any": true}}));
    assert_eq!(m.check(Some(&json!({"$any": true}))), Ok(()));
    assert!(m.check(Some(&json!("anything"))).is_err());
    // Written back, it stays a literal.
    assert_eq!(m.to_json(), json!({"$eq": {"$any": true}}));
}

#[test]
fn each_matcher_is_written_back_as_read() {
    for json in [
        json!("6*7"),
        json!({"city": "Paris"}),
        json!({"$any": true}),
        json!({"$regex": "^a$"}),
        json!({"$approx": 1.5, "$tolerance": 0.5}),
        json!({"$schema": {"type": "integer"}}),
    ] {
        assert_eq!(matcher(json.clone()).to_json(), json);
        assert_eq!(serde_json::to_value(matcher(json.clone())).unwrap(), json);
    }
    // A plain value converts to an equal matcher.
    assert_eq!(Matcher::from(json!(1)), Matcher::equal(1));
    assert_eq!(
        format!("{}", matcher(json!({"$approx": 1.5, "$tolerance": 0.5}))),
        "1.5 ± 0.5"
    );
    assert_eq!(format!("{}", Matcher::any()), "any value");
}

#[test]
fn a_matcher_that_cannot_be_read_says_why() {
    assert_eq!(
        error(json!({"$like": "x"})),
        "unknown argument matcher $like (the matchers: $eq, $any, $regex, $approx (with $tolerance), $schema)"
    );
    assert_eq!(
        error(json!({"$regex": "a", "name": "b"})),
        "an argument matcher mixes $ keys and plain keys: {\"$regex\":\"a\",\"name\":\"b\"} (write a literal object that has $ keys as {\"$eq\": ...})"
    );
    assert_eq!(error(json!({"$any": false})), "$any takes true, not false");
    assert_eq!(error(json!({"$regex": 7})), "$regex takes a string, not 7");
    assert!(error(json!({"$regex": "("})).starts_with("invalid regular expression /(/: "));
    assert_eq!(
        error(json!({"$approx": "1"})),
        "$approx takes a number, not \"1\""
    );
    assert_eq!(error(json!({"$tolerance": 1})), "$tolerance needs $approx");
    assert_eq!(
        error(json!({"$regex": "a", "$tolerance": 1})),
        "$tolerance goes with $approx, not $regex"
    );
    assert_eq!(
        error(json!({"$approx": 1, "$tolerance": -1})),
        "$approx needs a finite number and a finite, non-negative $tolerance (got 1 and -1)"
    );
    assert_eq!(
        error(json!({"$regex": "a", "$any": true})),
        "an argument matcher has one $ key, this one has $any and $regex (the matchers: $eq, $any, $regex, $approx (with $tolerance), $schema)"
    );
    assert!(
        error(json!({"$schema": {"type": 12}})).starts_with("invalid JSON Schema {\"type\":12}: ")
    );
}
