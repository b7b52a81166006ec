//! [`SharedString`]: the text type of content blocks.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An immutable-looking, cheaply clonable, copy-on-write string.
///
/// Message text lives in a `SharedString` so that copying a conversation (which the engine
/// does for every model request and every `PreReasoning` event) costs one reference-count
/// increment per block, whatever the length of the text. Appending ([`push_str`]) happens in
/// place while the string is not shared, which is how streamed deltas are accumulated without
/// quadratic copying.
///
/// It dereferences to [`str`], compares equal to `&str` and `String`, and serialises as a
/// plain JSON string.
///
/// ```
/// use agentscope_core::SharedString;
///
/// let mut a = SharedString::from("hello");
/// let b = a.clone();            // no copy of the text
/// a.push_str(", world");        // copies once, because `b` shares the buffer
/// assert_eq!(a, "hello, world");
/// assert_eq!(b, "hello");
/// assert!(a.starts_with("hello"));
/// ```
///
/// [`push_str`]: SharedString::push_str
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SharedString(Arc<String>);

impl SharedString {
    /// Creates an empty string.
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns the text as a `&str`.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Appends `text`, in place when this is the only handle to the buffer.
    pub fn push_str(&mut self, text: &str) {
        Arc::make_mut(&mut self.0).push_str(text);
    }

    /// Returns the text as an owned `String`, without copying when not shared.
    pub fn into_string(self) -> String {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| (*shared).clone())
    }
}

impl Deref for SharedString {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for SharedString {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for SharedString {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for SharedString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SharedString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl From<String> for SharedString {
    fn from(value: String) -> Self {
        Self(Arc::new(value))
    }
}

impl From<&str> for SharedString {
    fn from(value: &str) -> Self {
        Self(Arc::new(value.to_owned()))
    }
}

impl From<&String> for SharedString {
    fn from(value: &String) -> Self {
        Self(Arc::new(value.clone()))
    }
}

impl From<SharedString> for String {
    fn from(value: SharedString) -> Self {
        value.into_string()
    }
}

impl PartialEq<str> for SharedString {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SharedString {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for SharedString {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<SharedString> for str {
    fn eq(&self, other: &SharedString) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<SharedString> for &str {
    fn eq(&self, other: &SharedString) -> bool {
        *self == other.as_str()
    }
}

impl Serialize for SharedString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SharedString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_shares_and_push_copies_on_write() {
        let mut a = SharedString::from("ab");
        let b = a.clone();
        assert!(Arc::ptr_eq(&a.0, &b.0));
        a.push_str("c");
        assert_eq!(a, "abc");
        assert_eq!(b, "ab");
        assert!(!Arc::ptr_eq(&a.0, &b.0));
    }

    #[test]
    fn push_is_in_place_when_unique() {
        let mut a = SharedString::from(String::with_capacity(64));
        a.push_str("x");
        let ptr = a.as_ptr();
        a.push_str("y");
        assert_eq!(ptr, a.as_ptr());
    }

    #[test]
    fn serde_is_a_plain_string() {
        let s = SharedString::from("hi \"there\"");
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, r#""hi \"there\"""#);
        let back: SharedString = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
    }
}
