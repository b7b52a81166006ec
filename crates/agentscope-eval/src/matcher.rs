//! [`Matcher`]: what one argument of an expected tool call must be.

use std::fmt;
use std::sync::Arc;

use regex::Regex;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::error::EvalError;

/// What one argument of an expected tool call must be: a value (`equal`), anything
/// (`any`), a string matching a regular expression (`regex`), a number within a tolerance
/// (`approx`), or a value valid against a JSON Schema (`schema`).
///
/// In a case file a plain JSON value means `equal`; an object whose keys all start with `$`
/// is one of the other matchers:
///
/// | JSON | matches |
/// |---|---|
/// | `"6*7"`, `42`, `{"city": "Paris"}` | an equal value (numbers by value: `42` equals `42.0`; objects and arrays compared whole) |
/// | `{"$any": true}` | any value, as long as the argument is there (a generated id, a timestamp) |
/// | `{"$regex": "^6\\s*\\*\\s*7$"}` | a string the regular expression matches somewhere (anchor it with `^...$` to match the whole string; [`regex`](https://docs.rs/regex) syntax) |
/// | `{"$approx": 2.54, "$tolerance": 0.01}` | a number within the tolerance (absolute, `0` when left out; the rounding of decimals in binary is forgiven: 2.53 is within 0.01 of 2.54) |
/// | `{"$schema": {"type": "string", "format": "date"}}` | a value valid against the JSON Schema |
/// | `{"$eq": {"$any": true}}` | exactly the value given, even one that looks like a matcher |
///
/// ```
/// use agentscope_eval::Matcher;
/// use serde_json::json;
///
/// let id = Matcher::from_json(json!({"$regex": "^ord_[0-9]+$"}))?;
/// assert_eq!(id.check(Some(&json!("ord_1234"))), Ok(()));
/// assert_eq!(
///     id.check(Some(&json!("1234"))).unwrap_err(),
///     "is \"1234\", which does not match /^ord_[0-9]+$/"
/// );
/// assert_eq!(Matcher::approx(2.54, 0.01)?.check(Some(&json!(2.545))), Ok(()));
/// assert_eq!(Matcher::any().check(None).unwrap_err(), "is missing");
/// # Ok::<(), agentscope_eval::EvalError>(())
/// ```
#[derive(Clone)]
pub struct Matcher {
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Equal(Value),
    Any,
    Regex(Regex),
    Approx {
        value: f64,
        tolerance: f64,
    },
    Schema {
        schema: Value,
        validator: Arc<jsonschema::Validator>,
    },
}

/// The matcher keys, as the error for an unknown one lists them.
const KEYS: &str = "$eq, $any, $regex, $approx (with $tolerance), $schema";

impl Matcher {
    /// An equal value (numbers compared by value, objects and arrays whole).
    pub fn equal(value: impl Into<Value>) -> Self {
        Self {
            kind: Kind::Equal(value.into()),
        }
    }

    /// Any value, as long as the argument is present.
    pub fn any() -> Self {
        Self { kind: Kind::Any }
    }

    /// A string the regular expression matches (anywhere: anchor it to match all of it).
    ///
    /// # Errors
    ///
    /// [`EvalError::InvalidCase`] when the pattern does not compile.
    pub fn regex(pattern: &str) -> Result<Self, EvalError> {
        Ok(Self {
            kind: Kind::Regex(compile_regex(pattern)?),
        })
    }

    /// A number within `tolerance` of `value` (absolute).
    ///
    /// # Errors
    ///
    /// [`EvalError::InvalidCase`] when `value` is not finite or `tolerance` is negative or
    /// not finite.
    pub fn approx(value: f64, tolerance: f64) -> Result<Self, EvalError> {
        if !value.is_finite() || !tolerance.is_finite() || tolerance < 0.0 {
            return Err(EvalError::invalid(format!(
                "$approx needs a finite number and a finite, non-negative $tolerance (got {value} and {tolerance})"
            )));
        }
        Ok(Self {
            kind: Kind::Approx { value, tolerance },
        })
    }

    /// A value valid against the JSON Schema `schema`.
    ///
    /// # Errors
    ///
    /// [`EvalError::InvalidCase`] when `schema` is not a valid JSON Schema.
    pub fn schema(schema: Value) -> Result<Self, EvalError> {
        let validator = compile_schema(&schema)?;
        Ok(Self {
            kind: Kind::Schema { schema, validator },
        })
    }

    /// The matcher a case file's JSON describes (see the table above).
    ///
    /// # Errors
    ///
    /// [`EvalError::InvalidCase`] for an unknown `$` key, an object mixing `$` keys and
    /// plain ones, or a matcher whose value is of the wrong type or does not compile.
    pub fn from_json(value: Value) -> Result<Self, EvalError> {
        let Value::Object(object) = value else {
            return Ok(Self::equal(value));
        };
        let operators = object.keys().filter(|k| k.starts_with('$')).count();
        if operators == 0 {
            return Ok(Self::equal(Value::Object(object)));
        }
        if operators != object.len() {
            return Err(EvalError::invalid(format!(
                "an argument matcher mixes $ keys and plain keys: {} (write a literal object that has $ keys as {{\"$eq\": ...}})",
                Value::Object(object)
            )));
        }
        matcher_from(object)
    }

    /// The JSON a case file writes for this matcher (the inverse of
    /// [`from_json`](Self::from_json)).
    pub fn to_json(&self) -> Value {
        match &self.kind {
            Kind::Equal(value) => {
                let looks_like_matcher = value
                    .as_object()
                    .is_some_and(|o| o.keys().any(|k| k.starts_with('$')));
                if looks_like_matcher {
                    json!({"$eq": value})
                } else {
                    value.clone()
                }
            }
            Kind::Any => json!({"$any": true}),
            Kind::Regex(regex) => json!({"$regex": regex.as_str()}),
            Kind::Approx { value, tolerance } => json!({"$approx": value, "$tolerance": tolerance}),
            Kind::Schema { schema, .. } => json!({"$schema": schema}),
        }
    }

    /// Checks an argument's value (`None`: the call has no such argument). `Err` says why
    /// it does not match, in words that follow the argument's name: `is missing`,
    /// `is "6 * 7", which does not match /^6\*7$/`.
    pub fn check(&self, actual: Option<&Value>) -> Result<(), String> {
        let Some(actual) = actual else {
            return Err("is missing".to_owned());
        };
        match &self.kind {
            Kind::Equal(expected) if json_equal(expected, actual) => Ok(()),
            Kind::Equal(expected) => Err(format!("is {}, not {}", show(actual), show(expected))),
            Kind::Any => Ok(()),
            Kind::Regex(regex) => match actual.as_str() {
                Some(text) if regex.is_match(text) => Ok(()),
                Some(_) => Err(format!(
                    "is {}, which does not match /{}/",
                    show(actual),
                    regex.as_str()
                )),
                None => Err(format!(
                    "is {}, not a string matching /{}/",
                    show(actual),
                    regex.as_str()
                )),
            },
            Kind::Approx { value, tolerance } => match actual.as_f64() {
                Some(number) if within(number, *value, *tolerance) => Ok(()),
                Some(_) => Err(format!(
                    "is {}, not within {} of {}",
                    show(actual),
                    tolerance,
                    value
                )),
                None => Err(format!(
                    "is {}, not a number within {} of {}",
                    show(actual),
                    tolerance,
                    value
                )),
            },
            Kind::Schema { validator, .. } => match validator.iter_errors(actual).next() {
                None => Ok(()),
                Some(error) => Err(format!(
                    "is {}, which the schema rejects: {}",
                    show(actual),
                    error
                )),
            },
        }
    }
}

fn matcher_from(mut object: Map<String, Value>) -> Result<Matcher, EvalError> {
    let key = object.keys().find(|k| *k != "$tolerance").cloned();
    let Some(key) = key else {
        return Err(EvalError::invalid("$tolerance needs $approx"));
    };
    let value = object.remove(&key).unwrap_or(Value::Null);
    let tolerance = object.remove("$tolerance");
    if let Some(extra) = object.keys().next() {
        return Err(EvalError::invalid(format!(
            "an argument matcher has one $ key, this one has {key} and {extra} (the matchers: {KEYS})"
        )));
    }
    if tolerance.is_some() && key != "$approx" {
        return Err(EvalError::invalid(format!(
            "$tolerance goes with $approx, not {key}"
        )));
    }
    match key.as_str() {
        "$eq" => Ok(Matcher::equal(value)),
        "$any" => match value {
            Value::Bool(true) => Ok(Matcher::any()),
            other => Err(EvalError::invalid(format!("$any takes true, not {other}"))),
        },
        "$regex" => match value {
            Value::String(pattern) => Matcher::regex(&pattern),
            other => Err(EvalError::invalid(format!(
                "$regex takes a string, not {other}"
            ))),
        },
        "$approx" => {
            let Some(number) = value.as_f64() else {
                return Err(EvalError::invalid(format!(
                    "$approx takes a number, not {value}"
                )));
            };
            let tolerance = match tolerance {
                None => 0.0,
                Some(tolerance) => tolerance.as_f64().ok_or_else(|| {
                    EvalError::invalid(format!("$tolerance takes a number, not {tolerance}"))
                })?,
            };
            Matcher::approx(number, tolerance)
        }
        "$schema" => Matcher::schema(value),
        other => Err(EvalError::invalid(format!(
            "unknown argument matcher {other} (the matchers: {KEYS})"
        ))),
    }
}

pub(crate) fn compile_regex(pattern: &str) -> Result<Regex, EvalError> {
    Regex::new(pattern)
        .map_err(|e| EvalError::invalid(format!("invalid regular expression /{pattern}/: {e}")))
}

pub(crate) fn compile_schema(schema: &Value) -> Result<Arc<jsonschema::Validator>, EvalError> {
    jsonschema::validator_for(schema)
        .map(Arc::new)
        .map_err(|e| EvalError::invalid(format!("invalid JSON Schema {schema}: {e}")))
}

/// Whether `number` is within `tolerance` of `value`, forgiving the rounding of decimal
/// numbers in binary (2.53 is within 0.01 of 2.54, though `2.54 - 2.53` is a little more
/// than 0.01 in doubles): a slack of 1e-9 of the largest magnitude involved.
fn within(number: f64, value: f64, tolerance: f64) -> bool {
    let slack = 1e-9 * number.abs().max(value.abs()).max(tolerance);
    (number - value).abs() <= tolerance + slack
}

/// JSON equality with numbers compared by value (`42` equals `42.0`).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, x)| y.get(key).is_some_and(|y| json_equal(x, y)))
        }
        _ => a == b,
    }
}

/// A value as compact JSON, cut to 80 characters.
pub(crate) fn show(value: &Value) -> String {
    clip(&value.to_string(), 80)
}

/// `text` on one line (line breaks written `\n`), cut to `max` characters: how reasons
/// quote answers and transcripts show messages, so that each stays one line of a report.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    if !text.contains(['\n', '\r']) {
        return clip(text, max);
    }
    let flat = text.replace("\r\n", "\n").replace(['\n', '\r'], "\\n");
    clip(&flat, max)
}

/// `text` cut to `max` characters, with `...` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}...", &text[..at]),
    }
}

impl fmt::Debug for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Matcher({})", self.to_json())
    }
}

impl fmt::Display for Matcher {
    /// How reasons name what was expected: the JSON of the value, `any value`,
    /// `/pattern/`, `2.54 ± 0.01`, `a value valid against {schema}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Equal(value) => f.write_str(&show(value)),
            Kind::Any => f.write_str("any value"),
            Kind::Regex(regex) => write!(f, "/{}/", regex.as_str()),
            Kind::Approx { value, tolerance } => write!(f, "{value} ± {tolerance}"),
            Kind::Schema { schema, .. } => write!(f, "a value valid against {}", show(schema)),
        }
    }
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.to_json() == other.to_json()
    }
}

impl Serialize for Matcher {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Matcher {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Matcher::from_json(value).map_err(serde::de::Error::custom)
    }
}

impl From<Value> for Matcher {
    /// An [`equal`](Matcher::equal) matcher (use [`Matcher::from_json`] to read `$` keys).
    fn from(value: Value) -> Self {
        Self::equal(value)
    }
}
