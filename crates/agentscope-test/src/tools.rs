//! Small real tools for tests and examples. Most record the arguments of their calls
//! ([`CallLog`]; clones share the log); [`pay`] leaves what a run does to the test.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentscope_core::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{Value, json};

/// The arguments of every call a tool received, shared between clones of the tool.
#[derive(Debug, Clone, Default)]
pub struct CallLog(Arc<Mutex<Vec<Value>>>);

impl CallLog {
    fn record(&self, input: &Value) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(input.clone());
    }

    /// The recorded arguments, in call order.
    pub fn calls(&self) -> Vec<Value> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many calls were made.
    pub fn count(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// Writes a tool's `name`, `description` and `parameters` (the schema, an expression), inside
/// its `impl Tool`.
macro_rules! described {
    ($name:literal, $description:literal, $parameters:expr) => {
        fn name(&self) -> &str {
            $name
        }

        fn description(&self) -> &str {
            $description
        }

        fn parameters(&self) -> Value {
            $parameters
        }
    };
}

fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// Evaluates arithmetic: `+ - * / % ^`, parentheses, unary minus and decimals.
///
/// Arguments: `{"expression": "6*7"}`. Integral results print without a fraction (`42`).
///
/// ```
/// use agentscope_test::tools::evaluate;
/// assert_eq!(evaluate("2 + 3 * (4 - 1) ^ 2").unwrap(), 29.0);
/// assert!(evaluate("1 / 0").is_err());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Calculator {
    log: CallLog,
}

impl Calculator {
    /// A calculator named `"calculator"`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The calls received so far.
    pub fn log(&self) -> &CallLog {
        &self.log
    }
}

impl Tool for Calculator {
    described!(
        "calculator",
        "Evaluates an arithmetic expression with + - * / % ^ and parentheses.",
        object_schema(
            json!({"expression": {"type": "string", "description": "e.g. (2+3)*7"}}),
            &["expression"],
        )
    );

    async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.log.record(&input);
        let expression = input["expression"]
            .as_str()
            .ok_or_else(|| ToolError::invalid_arguments("'expression' must be a string"))?;
        let value = evaluate(expression).map_err(ToolError::msg)?;
        Ok(ToolOutput::text(format_number(value)))
    }
}

/// Formats a number the way [`Calculator`] prints it.
pub fn format_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// Evaluates an arithmetic expression (see [`Calculator`]).
pub fn evaluate(expression: &str) -> Result<f64, String> {
    let mut parser = Parser {
        chars: expression.chars().filter(|c| !c.is_whitespace()).collect(),
        at: 0,
    };
    let value = parser.sum()?;
    match parser.peek() {
        None if value.is_finite() => Ok(value),
        None => Err("the result is not a finite number".to_owned()),
        Some(c) => Err(format!("unexpected '{c}' at position {}", parser.at)),
    }
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn sum(&mut self) -> Result<f64, String> {
        let mut value = self.product()?;
        loop {
            if self.eat('+') {
                value += self.product()?;
            } else if self.eat('-') {
                value -= self.product()?;
            } else {
                return Ok(value);
            }
        }
    }

    fn product(&mut self) -> Result<f64, String> {
        let mut value = self.power()?;
        loop {
            if self.eat('*') {
                value *= self.power()?;
            } else if self.eat('/') {
                let divisor = self.power()?;
                if divisor == 0.0 {
                    return Err("division by zero".to_owned());
                }
                value /= divisor;
            } else if self.eat('%') {
                let divisor = self.power()?;
                if divisor == 0.0 {
                    return Err("division by zero".to_owned());
                }
                value %= divisor;
            } else {
                return Ok(value);
            }
        }
    }

    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if self.eat('^') {
            // Right-associative: 2^3^2 = 2^9.
            let exponent = self.power()?;
            Ok(base.powf(exponent))
        } else {
            Ok(base)
        }
    }

    fn unary(&mut self) -> Result<f64, String> {
        if self.eat('-') {
            Ok(-self.unary()?)
        } else if self.eat('+') {
            self.unary()
        } else {
            self.atom()
        }
    }

    fn atom(&mut self) -> Result<f64, String> {
        if self.eat('(') {
            let value = self.sum()?;
            if !self.eat(')') {
                return Err(format!("expected ')' at position {}", self.at));
            }
            return Ok(value);
        }
        let start = self.at;
        while matches!(self.peek(), Some(c) if c.is_ascii_digit() || c == '.') {
            self.at += 1;
        }
        if start == self.at {
            return Err(match self.peek() {
                Some(c) => format!("unexpected '{c}' at position {start}"),
                None => "unexpected end of expression".to_owned(),
            });
        }
        let text: String = self.chars[start..self.at].iter().collect();
        text.parse::<f64>()
            .map_err(|_| format!("invalid number '{text}'"))
    }
}

macro_rules! logged_tool {
    ($(#[$doc:meta])* $ty:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default)]
        pub struct $ty {
            log: CallLog,
        }

        impl $ty {
            /// Creates the tool.
            pub fn new() -> Self {
                Self::default()
            }

            /// The calls received so far.
            pub fn log(&self) -> &CallLog {
                &self.log
            }
        }
    };
}

logged_tool!(
    /// `echo`: returns its `text` argument.
    EchoTool
);

impl Tool for EchoTool {
    described!(
        "echo",
        "Returns the given text.",
        object_schema(json!({"text": {"type": "string"}}), &["text"])
    );

    async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.log.record(&input);
        Ok(ToolOutput::text(input["text"].as_str().unwrap_or_default()))
    }
}

logged_tool!(
    /// `fail`: always fails with its `message` argument (default `"tool failed"`).
    FailingTool
);

impl Tool for FailingTool {
    described!(
        "fail",
        "Always fails.",
        object_schema(json!({"message": {"type": "string"}}), &[])
    );

    async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.log.record(&input);
        Err(ToolError::msg(
            input["message"].as_str().unwrap_or("tool failed"),
        ))
    }
}

logged_tool!(
    /// `panic`: panics with the message `"tool panicked on purpose"`.
    PanickingTool
);

impl Tool for PanickingTool {
    described!("panic", "Panics.", object_schema(json!({}), &[]));

    #[allow(clippy::panic)]
    async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.log.record(&input);
        panic!("tool panicked on purpose")
    }
}

logged_tool!(
    /// `slow`: sleeps `ms` milliseconds (tokio timer), returning early with
    /// [`ToolError::Cancelled`] when the call is interrupted; then returns `"slept {ms}ms"`.
    SlowTool
);

impl Tool for SlowTool {
    described!(
        "slow",
        "Sleeps for `ms` milliseconds.",
        object_schema(json!({"ms": {"type": "integer", "minimum": 0}}), &["ms"])
    );

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.log.record(&input);
        let ms = input["ms"].as_u64().unwrap_or(0);
        let sleep = std::pin::pin!(tokio::time::sleep(Duration::from_millis(ms)));
        match futures::future::select(sleep, ctx.cancelled()).await {
            futures::future::Either::Left(_) => Ok(ToolOutput::text(format!("slept {ms}ms"))),
            futures::future::Either::Right(_) => Err(ToolError::Cancelled),
        }
    }
}

logged_tool!(
    /// `progress`: emits `steps` progress chunks `"step i/n"` through its context, then
    /// returns `"done"`.
    ProgressTool
);

impl Tool for ProgressTool {
    described!(
        "progress",
        "Reports progress, then finishes.",
        object_schema(
            json!({"steps": {"type": "integer", "minimum": 0}}),
            &["steps"],
        )
    );

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.log.record(&input);
        let steps = input["steps"].as_u64().unwrap_or(0);
        for i in 1..=steps {
            ctx.emit(format!("step {i}/{steps}")).await;
        }
        Ok(ToolOutput::text("done"))
    }
}

logged_tool!(
    /// `external`: suspends for external execution (returns [`ToolOutput::Suspended`]).
    SuspendingTool
);

impl Tool for SuspendingTool {
    described!(
        "external",
        "Runs outside the agent; its result arrives later.",
        object_schema(json!({"task": {"type": "string"}}), &[])
    );

    async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.log.record(&input);
        Ok(ToolOutput::suspended())
    }
}

/// `pay {"invoice": n}`: the payment tool of the tests where a payment must not happen
/// twice (a server killed mid-tool, a call in doubt, a client that stops a run). What a run
/// does is `run`'s: it gets the invoice (`0` when the arguments have none) and the call's
/// context (its idempotency key, progress, cancellation) and returns the result's text.
///
/// ```
/// use agentscope_core::{Tool, ToolContext, ToolOutput, ToolUseBlock};
/// use agentscope_test::tools::pay;
/// use serde_json::json;
///
/// let tool = pay(|invoice, _ctx| async move { format!("paid invoice {invoice}") });
/// assert_eq!(tool.name(), "pay");
/// let ctx = ToolContext::new(ToolUseBlock::new("c1", "pay", json!({"invoice": 7})));
/// let out = futures::executor::block_on(tool.call(json!({"invoice": 7}), ctx)).unwrap();
/// assert_eq!(out, ToolOutput::text("paid invoice 7"));
/// ```
pub fn pay<F, Fut>(run: F) -> PayTool<F>
where
    F: Fn(u64, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = String> + Send + 'static,
{
    PayTool { run }
}

/// The tool [`pay`] builds.
pub struct PayTool<F> {
    run: F,
}

impl<F> std::fmt::Debug for PayTool<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PayTool").finish_non_exhaustive()
    }
}

impl<F, Fut> Tool for PayTool<F>
where
    F: Fn(u64, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = String> + Send + 'static,
{
    described!(
        "pay",
        "Pays an invoice.",
        object_schema(json!({"invoice": {"type": "integer"}}), &["invoice"])
    );

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        let run = (self.run)(input["invoice"].as_u64().unwrap_or_default(), ctx);
        async move { Ok(ToolOutput::text(run.await)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentscope_core::ToolUseBlock;
    use futures::executor::block_on;

    fn ctx() -> ToolContext {
        ToolContext::new(ToolUseBlock::new("c", "t", json!({})))
    }

    #[test]
    fn calculator_evaluates_with_precedence() {
        assert_eq!(evaluate("6*7").unwrap(), 42.0);
        assert_eq!(evaluate("2^3^2").unwrap(), 512.0);
        assert_eq!(evaluate("-(1.5 + 2.5) * 2").unwrap(), -8.0);
        assert_eq!(evaluate("7 % 4").unwrap(), 3.0);
        assert!(evaluate("2 +").unwrap_err().contains("unexpected end"));
        assert!(evaluate("2 $ 3").unwrap_err().contains("unexpected '$'"));
        assert!(evaluate("(1").unwrap_err().contains("expected ')'"));
        let calc = Calculator::new();
        let out = block_on(calc.call(json!({"expression": "6*7"}), ctx())).unwrap();
        assert_eq!(out, ToolOutput::text("42"));
        let out = block_on(calc.call(json!({"expression": "1/4"}), ctx())).unwrap();
        assert_eq!(out, ToolOutput::text("0.25"));
        assert_eq!(calc.log().count(), 2);
    }

    #[test]
    fn failing_and_echo() {
        let err = block_on(FailingTool::new().call(json!({"message": "x"}), ctx())).unwrap_err();
        assert_eq!(err.to_string(), "x");
        let out = block_on(EchoTool::new().call(json!({"text": "hey"}), ctx())).unwrap();
        assert_eq!(out, ToolOutput::text("hey"));
    }
}
