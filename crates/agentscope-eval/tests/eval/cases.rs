//! The case file format: every field, comments, turns, errors with their line, ids, and
//! writing cases back.

use agentscope_eval::{
    AnswerCriterion, Budget, Case, EvalError, ExpectedCall, Input, Matcher, TrajectoryMode,
};

#[test]
fn a_case_file_reads_every_field() {
    let text = r#"
# the quickstart's arithmetic

{"id": "multiply", "input": "What is 6*7?", "tool_calls": [{"tool": "calculator", "args": {"expression": {"$regex": "^6\\*7$"}}, "partial_args": true}], "trajectory": "superset", "answer": [{"contains": "42"}, {"rouge1": "The answer is 42.", "threshold": 0.5}], "budget": {"tokens": 500, "model_calls": 3, "wall_ms": 10000}, "tags": ["math", "smoke"]}
{"id": "chat", "input": ["Hi, I'm Ada.", ["Thanks.", "What's my name?"]], "answer": [{"contains": "Ada"}]}
"#;
    let cases = Case::parse_jsonl(text).unwrap();
    assert_eq!(cases.len(), 2);
    let expected = Case::new("multiply", "What is 6*7?")
        .expect_calls(
            TrajectoryMode::Superset,
            [ExpectedCall::new("calculator")
                .arg("expression", Matcher::regex(r"^6\*7$").unwrap())
                .partial_args(true)],
        )
        .expect_answer(AnswerCriterion::contains("42"))
        .expect_answer(
            AnswerCriterion::rouge1("The answer is 42.")
                .with_threshold(0.5)
                .unwrap(),
        )
        .budget(Budget::new().tokens(500).model_calls(3).wall_ms(10_000))
        .tag("math")
        .tag("smoke");
    assert_eq!(cases[0], expected);
    assert_eq!(
        cases[0].criterion_names(),
        [
            "trajectory.superset",
            "answer.contains",
            "answer.rouge1",
            "budget.tokens",
            "budget.model_calls",
            "budget.wall_time"
        ]
    );
    assert_eq!(
        cases[1].input.turns,
        [vec!["Hi, I'm Ada."], vec!["Thanks.", "What's my name?"]]
    );
    assert_eq!(Input::turns(["a", "b"]).turns, [["a"], ["b"]]);
    // No `tool_calls`: the trajectory is not scored.
    assert_eq!(cases[1].tool_calls, None);
    assert_eq!(cases[1].criterion_names(), ["answer.contains"]);
}

#[test]
fn cases_are_written_back_as_read() {
    let text = concat!(
        r#"{"id":"a","input":"hi","tool_calls":[],"answer":[{"exact":"hello","ignore_case":true}]}"#,
        "\n",
        r#"{"id":"b","input":["one",["two","three"]],"tool_calls":[{"tool":"t","args":{"x":{"$any":true}}}],"trajectory":"in_order","budget":{"model_calls":2},"tags":["x"]}"#,
        "\n"
    );
    let cases = Case::parse_jsonl(text).unwrap();
    assert_eq!(Case::to_jsonl(&cases), text);
    assert_eq!(Case::parse_jsonl(&Case::to_jsonl(&cases)).unwrap(), cases);
}

fn error(text: &str) -> EvalError {
    Case::parse_jsonl(text).unwrap_err()
}

#[test]
fn an_invalid_line_is_reported_with_its_number_and_case() {
    let e = error(
        "{\"id\": \"a\", \"input\": \"x\"}\n\n{\"id\": \"b\", \"input\": \"y\", \"trajectroy\": \"strict\"}",
    );
    assert!(e.is_invalid_case());
    assert_eq!(e.line(), Some(3));
    assert!(
        e.to_string().starts_with("line 3 (case 'b'): unknown field `trajectroy`, expected one of `id`, `input`, `tool_calls`, `trajectory`, `answer`, `budget`, `tags`"),
        "{e}"
    );
    let e = error(
        "{\"id\": \"a\", \"input\": \"x\", \"tool_calls\": [{\"tool\": \"t\", \"args\": {\"x\": {\"$like\": 1}}}]}",
    );
    assert!(
        e.to_string()
            .starts_with("line 1 (case 'a'): unknown argument matcher $like"),
        "{e}"
    );
    let e = error("{\"id\": \"a\", \"input\": \"x\", \"trajectory\": \"sorted\"}");
    assert!(e.to_string().starts_with("line 1 (case 'a'): unknown variant `sorted`, expected one of `strict`, `in_order`, `any_order`, `subset`, `superset`"), "{e}");
    let e = error("not json");
    assert!(e.to_string().starts_with("line 1: expected ident"), "{e}");
    assert_eq!(
        error("{\"id\": \" \", \"input\": \"x\"}").to_string(),
        "line 1 (case ' '): \"id\" is empty"
    );
    assert_eq!(
        error("{\"id\": \"a\", \"input\": []}").to_string(),
        "line 1 (case 'a'): \"input\" has no turn"
    );
    assert_eq!(
        error("{\"id\": \"a\", \"input\": [\"x\", []]}").to_string(),
        "line 1 (case 'a'): turn 2 of \"input\" has no message"
    );
    assert!(
        error("{\"id\": \"a\", \"input\": 5}").to_string().starts_with(
            "line 1 (case 'a'): \"input\" is a string, or an array of turns (each a string or an array of strings)"
        )
    );
    assert!(
        error("{\"input\": \"x\"}")
            .to_string()
            .starts_with("line 1: missing field `id`")
    );
    assert_eq!(
        error("{\"id\": \"a\", \"input\": \"x\"}\n{\"id\": \"a\", \"input\": \"y\"}").to_string(),
        "line 2 (case 'a'): a case with this id comes earlier in the file"
    );
}

#[test]
fn a_missing_file_is_an_io_error() {
    let e = Case::load_jsonl("/nonexistent/cases.jsonl").unwrap_err();
    assert!(e.is_io());
    assert!(
        e.to_string().starts_with("/nonexistent/cases.jsonl: "),
        "{e}"
    );
}

#[test]
fn the_quickstart_case_set_reads() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/cases/quickstart.jsonl"
    );
    let cases = Case::load_jsonl(path).unwrap();
    assert_eq!(cases.len(), 6);
    assert!(cases.iter().all(|c| !c.criterion_names().is_empty()));
}
