//! [`ToolInput`]: a tool call's JSON arguments, shared copy-on-write.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The arguments of a [`ToolUseBlock`](crate::ToolUseBlock): a JSON value shared between
/// clones and copied only when a clone is changed, like [`Content`](crate::Content) and
/// [`Metadata`](crate::Metadata).
///
/// A tool call travels a long way (the model's message, memory, the hook events, the tool's
/// job, the stream), and its arguments are often a JSON object of several allocations:
/// sharing them makes every copy a reference-count increment. It dereferences to the
/// [`Value`], so reading works as on a value (`input["city"]`, `input.get("city")`,
/// `input.as_object()`), and changing it (`input["unit"] = json!("celsius")`, or assigning
/// a new `ToolInput`) first copies a shared value. `Null` allocates nothing.
///
/// ```
/// use agentscope_core::{ToolInput, ToolUseBlock};
/// use serde_json::json;
///
/// let mut call = ToolUseBlock::new("c1", "weather", json!({"city": "Paris"}));
/// let copy = call.clone();                        // shares the arguments
/// call.input["unit"] = json!("celsius");          // copies, then changes
/// assert_eq!(call.input, json!({"city": "Paris", "unit": "celsius"}));
/// assert_eq!(copy.input, json!({"city": "Paris"}));
/// assert_eq!(copy.input["city"], "Paris");
///
/// call.input = ToolInput::from(json!({"city": "Lyon"}));
/// let value: serde_json::Value = call.input.into_value();
/// assert_eq!(value, json!({"city": "Lyon"}));
/// ```
#[derive(Clone, Default)]
pub struct ToolInput(Option<Arc<Value>>);

impl ToolInput {
    /// `Null` (allocates nothing).
    pub const fn null() -> Self {
        Self(None)
    }

    /// The value, copied only when it is shared.
    pub fn into_value(self) -> Value {
        match self.0 {
            Some(value) => Arc::try_unwrap(value).unwrap_or_else(|shared| (*shared).clone()),
            None => Value::Null,
        }
    }
}

impl Deref for ToolInput {
    type Target = Value;

    fn deref(&self) -> &Value {
        static NULL: Value = Value::Null;
        self.0.as_deref().unwrap_or(&NULL)
    }
}

impl DerefMut for ToolInput {
    /// Copies the value first when it is shared.
    fn deref_mut(&mut self) -> &mut Value {
        Arc::make_mut(self.0.get_or_insert_with(|| Arc::new(Value::Null)))
    }
}

impl From<Value> for ToolInput {
    /// Shares `value`; `Null` stays free.
    fn from(value: Value) -> Self {
        match value {
            Value::Null => Self(None),
            value => Self(Some(Arc::new(value))),
        }
    }
}

impl From<ToolInput> for Value {
    fn from(input: ToolInput) -> Self {
        input.into_value()
    }
}

impl PartialEq for ToolInput {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl PartialEq<Value> for ToolInput {
    fn eq(&self, other: &Value) -> bool {
        **self == *other
    }
}

impl PartialEq<ToolInput> for Value {
    fn eq(&self, other: &ToolInput) -> bool {
        *self == **other
    }
}

impl fmt::Debug for ToolInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for ToolInput {
    /// The arguments as compact JSON.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl Serialize for ToolInput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clones_share_until_one_changes() {
        let mut a = ToolInput::from(json!({"k": 1}));
        let b = a.clone();
        assert!(matches!((&a.0, &b.0), (Some(x), Some(y)) if Arc::ptr_eq(x, y)));
        a["k"] = json!(2);
        assert_eq!((a["k"].clone(), b["k"].clone()), (json!(2), json!(1)));
    }

    #[test]
    fn null_is_free_and_serde_is_the_plain_value() {
        let null = ToolInput::default();
        assert!(null.0.is_none());
        assert!(ToolInput::from(Value::Null).0.is_none());
        assert_eq!(*null, Value::Null);
        assert_eq!(serde_json::to_string(&null).unwrap(), "null");
        let input: ToolInput = serde_json::from_str(r#"{"a":[1,2]}"#).unwrap();
        assert_eq!(input, json!({"a": [1, 2]}));
        assert_eq!(serde_json::to_value(&input).unwrap(), json!({"a": [1, 2]}));
        assert_eq!(input.to_string(), r#"{"a":[1,2]}"#);
        let mut null = ToolInput::null();
        null["x"] = json!(true);
        assert_eq!(null, json!({"x": true}));
    }
}
