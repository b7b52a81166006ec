//! Tools whose argument schema comes from a Rust type: [`typed_tool_fn`] (the `schema`
//! feature, schemars), and the JSON schema of a type as models want it (`schema_of`, also
//! used by structured output).

use std::future::Future;

use agentscope_core::{ToolContext, ToolError, ToolOutput};
use futures::future::{Either, Ready, ready};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::toolkit::{ToolFn, tool_fn};

/// Builds a tool whose argument schema comes from a type (`serde::Deserialize` +
/// `schemars::JsonSchema`); the closure gets the deserialised arguments.
///
/// ```
/// use agentscope::{typed_tool_fn, Toolkit};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// First addend.
///     a: f64,
///     /// Second addend.
///     b: f64,
/// }
///
/// let add = typed_tool_fn("add", "Adds two numbers.", |args: AddArgs, _ctx| async move {
///     Ok((args.a + args.b).to_string())
/// });
/// let toolkit = Toolkit::new().tool(add);
/// assert_eq!(toolkit.schemas()[0].parameters["required"], serde_json::json!(["a", "b"]));
/// ```
///
/// Arguments that do not match the schema never reach the closure: the model gets an error
/// result naming the problem and can try again. `examples/typed_tools.rs` runs a typed tool
/// in an agent (`cargo run -p agentscope-example-typed-tools --example typed_tools`), on a real model when the environment
/// names one.
pub fn typed_tool_fn<A, F, Fut, O>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> ToolFn<impl Fn(Value, ToolContext) -> TypedCall<Fut, O> + Send + Sync + 'static>
where
    A: DeserializeOwned + schemars::JsonSchema + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: Into<ToolOutput> + Send + 'static,
{
    // The toolkit validated the arguments against A's schema; serde-only rejections still
    // go back to the model as parameter errors.
    tool_fn(
        name,
        description,
        schema_of::<A>(),
        move |input, ctx| match serde_json::from_value::<A>(input) {
            Ok(args) => Either::Left(f(args, ctx)),
            Err(error) => Either::Right(ready(Err(ToolError::invalid_arguments(error)))),
        },
    )
}

/// The future of one [`typed_tool_fn`] call: the closure's, or the argument error.
pub type TypedCall<Fut, O> = Either<Fut, Ready<Result<O, ToolError>>>;

/// The JSON schema of `T`, without the `$schema` and `title` keys models don't need.
pub(crate) fn schema_of<T: schemars::JsonSchema>() -> Value {
    let mut value = schemars::schema_for!(T).to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    value
}
