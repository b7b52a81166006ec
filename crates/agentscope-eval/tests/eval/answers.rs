//! Every answer criterion with exact scores and reasons, and the errors of a criterion that
//! cannot be read.

use agentscope_eval::{AnswerCriterion, CriterionResult};
use serde_json::{Value, json};

fn criterion(json: Value) -> AnswerCriterion {
    AnswerCriterion::from_json(json).unwrap()
}

fn score(json: Value, answer: &str) -> (f64, bool, String) {
    let result: CriterionResult = criterion(json).score(answer, None);
    assert_eq!(result.error_type, None);
    (result.score, result.passed, result.reason)
}

fn error(json: Value) -> String {
    AnswerCriterion::from_json(json).unwrap_err().to_string()
}

#[test]
fn exact_compares_the_trimmed_answer() {
    assert_eq!(
        score(
            json!({"exact": "The answer is 42."}),
            "  The answer is 42.\n"
        ),
        (1.0, true, "the answer is \"The answer is 42.\"".into())
    );
    assert_eq!(
        score(json!({"exact": "The answer is 42."}), "the answer is 42."),
        (
            0.0,
            false,
            "the answer is \"the answer is 42.\", not \"The answer is 42.\"".into()
        )
    );
    assert_eq!(
        score(
            json!({"exact": "The answer is 42.", "ignore_case": true}),
            "THE ANSWER IS 42."
        )
        .0,
        1.0
    );
}

#[test]
fn contains_scores_the_share_of_texts_found() {
    assert_eq!(
        score(json!({"contains": "42"}), "It is 42."),
        (1.0, true, "the answer contains \"42\"".into())
    );
    assert_eq!(
        score(
            json!({"contains": ["42", "six", "seven"]}),
            "six times seven is 42"
        ),
        (
            1.0,
            true,
            "the answer contains \"42\", \"six\", \"seven\"".into()
        )
    );
    assert_eq!(
        score(
            json!({"contains": ["42", "Six", "Seven"]}),
            "six times seven is 42"
        ),
        (
            1.0 / 3.0,
            false,
            "the answer contains \"42\" but not \"Six\", \"Seven\"".into()
        )
    );
    assert_eq!(
        score(
            json!({"contains": ["Six", "Seven"], "ignore_case": true}),
            "six times seven"
        )
        .0,
        1.0
    );
    assert_eq!(
        score(json!({"contains": "42"}), "I don't know."),
        (
            0.0,
            false,
            "the answer \"I don't know.\" does not contain \"42\"".into()
        )
    );
    // A reason stays one line: the answer's line breaks are written \n.
    assert_eq!(
        score(json!({"contains": "42"}), "I don't\r\nknow.\n"),
        (
            0.0,
            false,
            "the answer \"I don't\\nknow.\" does not contain \"42\"".into()
        )
    );
}

#[test]
fn regex_matches_anywhere() {
    assert_eq!(
        score(json!({"regex": "\\b42\\b"}), "It is 42."),
        (1.0, true, "the answer matches /\\b42\\b/".into())
    );
    assert_eq!(
        score(json!({"regex": "\\b42\\b"}), "It is 420."),
        (
            0.0,
            false,
            "the answer \"It is 420.\" does not match /\\b42\\b/".into()
        )
    );
}

#[test]
fn rouge1_is_the_unigram_f1_against_the_reference() {
    // 4 of 6 words shared each way: precision = recall = F1 = 2/3.
    assert_eq!(
        score(json!({"rouge1": "the cat sat on the mat", "threshold": 0.5}), "the cat lay on a mat"),
        (
            2.0 / 3.0,
            true,
            "ROUGE-1 F1 0.667 (precision 0.667, recall 0.667) against \"the cat sat on the mat\", at or above the threshold 0.5".into()
        )
    );
    // The default threshold is 0.8; case and punctuation do not count.
    assert_eq!(
        score(json!({"rouge1": "The answer is 42."}), "the answer: 42"),
        (
            6.0 / 7.0,
            true,
            "ROUGE-1 F1 0.857 (precision 1.000, recall 0.750) against \"The answer is 42.\", at or above the threshold 0.8".into()
        )
    );
    assert_eq!(
        score(json!({"rouge1": "The answer is 42."}), "42"),
        (
            0.4,
            false,
            "ROUGE-1 F1 0.400 (precision 1.000, recall 0.250) against \"The answer is 42.\", below the threshold 0.8".into()
        )
    );
    assert_eq!(score(json!({"rouge1": "The answer is 42."}), "").0, 0.0);
}

#[test]
fn json_schema_reads_the_structured_value_or_the_text() {
    let schema = json!({"json_schema": {
        "type": "object",
        "properties": {"total": {"type": "number"}},
        "required": ["total"]
    }});
    assert_eq!(
        score(schema.clone(), "```json\n{\"total\": 42}\n```"),
        (1.0, true, "the answer is valid against the schema".into())
    );
    assert_eq!(
        score(schema.clone(), "{\"total\": \"42\"}"),
        (
            0.0,
            false,
            "the schema rejects the answer at /total: \"42\" is not of type \"number\"".into()
        )
    );
    assert_eq!(
        score(schema.clone(), "{}"),
        (
            0.0,
            false,
            "the schema rejects the answer: \"total\" is a required property".into()
        )
    );
    assert_eq!(
        score(schema.clone(), "The total is 42."),
        (
            0.0,
            false,
            "the answer \"The total is 42.\" is not JSON: expected value at line 1 column 1".into()
        )
    );
    // A reply's structured value is what is checked, whatever its text.
    let result = criterion(schema).score("Here you go.", Some(&json!({"total": 42})));
    assert!(result.passed);
}

#[test]
fn a_judge_criterion_without_a_judge_is_an_error() {
    let result = criterion(json!({"judge": "Says 42."})).score("42", None);
    assert_eq!(result.name, "answer.judge");
    assert_eq!(result.error_type.as_deref(), Some("no_judge"));
    assert!(!result.passed);
    assert_eq!(result.score, 0.0);
    assert_eq!(
        result.reason,
        "a judge criterion needs a judge model (EvaluatorBuilder::judge)"
    );
}

#[test]
fn names_and_json_round_trip() {
    for (json, name) in [
        (json!({"exact": "a", "ignore_case": true}), "answer.exact"),
        (json!({"contains": ["a", "b"]}), "answer.contains"),
        (json!({"contains": "a"}), "answer.contains"),
        (json!({"regex": "^a"}), "answer.regex"),
        (json!({"rouge1": "a b", "threshold": 0.5}), "answer.rouge1"),
        (json!({"rouge1": "a b"}), "answer.rouge1"),
        (
            json!({"json_schema": {"type": "object"}}),
            "answer.json_schema",
        ),
        (json!({"judge": "good"}), "answer.judge"),
    ] {
        let c = criterion(json.clone());
        assert_eq!(c.name(), name);
        assert_eq!(c.to_json(), json);
    }
    assert_eq!(criterion(json!({"judge": "good"})).rubric(), Some("good"));
    assert_eq!(criterion(json!({"exact": "good"})).rubric(), None);
}

#[test]
fn a_criterion_that_cannot_be_read_says_why() {
    const KINDS: &str = "exact, contains, regex, rouge1, json_schema, judge";
    assert_eq!(
        error(json!({"exact": "a", "contains": "b"})),
        format!(
            "an answer criterion has exactly one of {KINDS}; this one has [\"contains\", \"exact\"]"
        )
    );
    assert_eq!(
        error(json!({"similar": "a"})),
        format!("unknown answer criterion \"similar\" (the criteria: {KINDS})")
    );
    assert_eq!(
        error(json!("42")),
        format!("an answer criterion is an object with one of {KINDS}, not \"42\"")
    );
    assert_eq!(
        error(json!({"exact": 42})),
        "\"exact\" takes a string, not 42"
    );
    assert_eq!(
        error(json!({"contains": []})),
        "\"contains\" needs at least one text"
    );
    assert_eq!(
        error(json!({"regex": "a", "ignore_case": true})),
        "\"ignore_case\" goes with exact and contains, not regex"
    );
    assert_eq!(
        error(json!({"contains": "a", "threshold": 0.5})),
        "\"threshold\" goes with rouge1, not contains"
    );
    assert_eq!(
        error(json!({"rouge1": "a", "threshold": 1.5})),
        "\"threshold\" is a number from 0 to 1, not 1.5"
    );
    assert!(error(json!({"regex": "("})).starts_with("invalid regular expression /(/: "));
}
