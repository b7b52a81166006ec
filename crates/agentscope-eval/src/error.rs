//! [`EvalError`]: what can go wrong before or around an evaluation (never during one: a run
//! that fails is a result in the report, not an error).

use agentscope::session::SessionError;

/// What went wrong reading cases or reports, building an [`Evaluator`](crate::Evaluator), or
/// turning a stored session into a case.
///
/// A failing run (the agent's error, a time limit, a judge that answers garbage) is never
/// an `EvalError`: it is recorded in the [`Report`](crate::Report) and the evaluation goes
/// on.
///
/// ```
/// use agentscope_eval::Case;
///
/// let error = Case::parse_jsonl("{\"id\": \"a\", \"input\": \"hi\", \"trajectory\": \"sorted\"}")
///     .unwrap_err();
/// assert!(error.is_invalid_case());
/// assert_eq!(error.line(), Some(1));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A case cannot be read: not JSON, a missing or unknown field, a regex or JSON schema
    /// that does not compile, two cases with one id.
    #[error("{}", case_message(*.line, .case.as_deref(), .message))]
    InvalidCase {
        /// The line of the JSONL text (1-based), when read from one.
        line: Option<usize>,
        /// The case's id, when known.
        case: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// The evaluator's settings are invalid (reported by
    /// [`EvaluatorBuilder::build`](crate::EvaluatorBuilder::build), the first one met).
    #[error("invalid evaluator configuration: {message}")]
    InvalidConfig {
        /// What is wrong.
        message: String,
    },
    /// A stored session could not be loaded.
    #[error("cannot load the session to make a case of it: {0}")]
    Session(#[from] SessionError),
    /// The store holds no session with that id.
    #[error("no session '{session}' in the store")]
    NoSession {
        /// The session id.
        session: String,
    },
    /// The stored conversation cannot be a case (no user input, no final answer, input
    /// that is not text).
    #[error("session '{session}' cannot be a case: {message}")]
    NotACase {
        /// The session id.
        session: String,
        /// Why.
        message: String,
    },
    /// A JSON report (a baseline) cannot be read.
    #[error("invalid report: {message}")]
    InvalidReport {
        /// What is wrong (serde's message with line and column).
        message: String,
    },
}

fn case_message(line: Option<usize>, case: Option<&str>, message: &str) -> String {
    match (line, case) {
        (Some(line), Some(case)) => format!("line {line} (case '{case}'): {message}"),
        (Some(line), None) => format!("line {line}: {message}"),
        (None, Some(case)) => format!("case '{case}': {message}"),
        (None, None) => message.to_owned(),
    }
}

impl EvalError {
    /// Whether a case could not be read.
    pub fn is_invalid_case(&self) -> bool {
        matches!(self, EvalError::InvalidCase { .. })
    }

    /// Whether a file could not be read or written.
    pub fn is_io(&self) -> bool {
        matches!(self, EvalError::Io { .. })
    }

    /// Whether the evaluator's settings are invalid.
    pub fn is_invalid_config(&self) -> bool {
        matches!(self, EvalError::InvalidConfig { .. })
    }

    /// Whether a session could not be loaded, does not exist, or cannot be a case.
    pub fn is_session(&self) -> bool {
        matches!(
            self,
            EvalError::Session(_) | EvalError::NoSession { .. } | EvalError::NotACase { .. }
        )
    }

    /// Whether a JSON report could not be read.
    pub fn is_invalid_report(&self) -> bool {
        matches!(self, EvalError::InvalidReport { .. })
    }

    /// The JSONL line of an invalid case, when it was read from one.
    pub fn line(&self) -> Option<usize> {
        match self {
            EvalError::InvalidCase { line, .. } => *line,
            _ => None,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        EvalError::InvalidCase {
            line: None,
            case: None,
            message: message.into(),
        }
    }

    /// Adds the line and the case id to an [`InvalidCase`](EvalError::InvalidCase) error.
    pub(crate) fn at(self, at_line: usize, id: Option<&str>) -> Self {
        match self {
            EvalError::InvalidCase {
                line,
                case,
                message,
            } => EvalError::InvalidCase {
                line: line.or(Some(at_line)),
                case: case.or_else(|| id.map(str::to_owned)),
                message,
            },
            other => other,
        }
    }
}
