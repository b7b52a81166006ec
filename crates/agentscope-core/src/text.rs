//! [`SharedString`]: the text type of content blocks.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use arrayvec::ArrayString;
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
///
/// Creating one costs at most one allocation (none for [`from_static`](Self::from_static),
/// and none for text of up to 24 bytes, which is stored in place: message ids, names, short
/// answers), and cloning none. A clone of longer text shares its buffer; a clone of short
/// text copies its at most 24 bytes, with no reference count to touch.
#[derive(Clone)]
pub struct SharedString(Repr);

/// The longest text stored in place (the most that keeps `SharedString` at 32 bytes).
const INLINE: usize = 24;

#[derive(Clone)]
enum Repr {
    /// Text that lives for the whole program: no allocation.
    Static(&'static str),
    /// Short text (message ids, names, short answers), stored in place: no allocation, and
    /// clones copy it instead of counting a shared buffer.
    Inline(ArrayString<INLINE>),
    /// Text made from a `&str`: one allocation, never grown in place.
    Frozen(Arc<str>),
    /// Text made from a `String`, or appended to: grows in place while unique.
    Growable(Arc<String>),
}

impl Default for SharedString {
    fn default() -> Self {
        Self::from_static("")
    }
}

impl SharedString {
    /// Creates an empty string.
    pub fn new() -> Self {
        Self::default()
    }

    /// Wraps a `'static` string without allocating.
    ///
    /// ```
    /// use agentscope_core::SharedString;
    ///
    /// const NAME: SharedString = SharedString::from_static("assistant");
    /// assert_eq!(NAME, "assistant");
    /// ```
    pub const fn from_static(text: &'static str) -> Self {
        Self(Repr::Static(text))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(text) => text,
            Repr::Inline(text) => text,
            Repr::Frozen(text) => text,
            Repr::Growable(text) => text.as_str(),
        }
    }

    /// Appends `text`, in place when this string is not shared, otherwise on a copy.
    pub fn push_str(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match &mut self.0 {
            Repr::Growable(buffer) => return Arc::make_mut(buffer).push_str(text),
            Repr::Inline(inline) if inline.remaining_capacity() >= text.len() => {
                return inline.push_str(text);
            }
            _ => {}
        }
        let current = self.as_str();
        let mut buffer = String::with_capacity(current.len() + text.len());
        buffer.push_str(current);
        buffer.push_str(text);
        self.0 = Repr::Growable(Arc::new(buffer));
    }

    /// The text as a `String`, without copying when this string owns an unshared `String`.
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Growable(buffer) => {
                Arc::try_unwrap(buffer).unwrap_or_else(|shared| (*shared).clone())
            }
            other => SharedString(other).as_str().to_owned(),
        }
    }

    /// Whether `self` and `other` share one buffer (clones of each other). Short text (up
    /// to 24 bytes) is stored in place and shares nothing: clones of it copy it.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Static(a), Repr::Static(b)) => std::ptr::eq(*a, *b),
            (Repr::Frozen(a), Repr::Frozen(b)) => Arc::ptr_eq(a, b),
            (Repr::Growable(a), Repr::Growable(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl PartialEq for SharedString {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SharedString {}

impl PartialOrd for SharedString {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SharedString {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for SharedString {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
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
        match ArrayString::from(&value) {
            Ok(inline) => Self(Repr::Inline(inline)),
            Err(_) => Self(Repr::Growable(Arc::new(value))),
        }
    }
}

impl From<&str> for SharedString {
    fn from(value: &str) -> Self {
        match ArrayString::from(value) {
            Ok(inline) => Self(Repr::Inline(inline)),
            Err(_) => Self(Repr::Frozen(Arc::from(value))),
        }
    }
}

impl From<&SharedString> for SharedString {
    fn from(value: &SharedString) -> Self {
        value.clone()
    }
}

impl From<&String> for SharedString {
    fn from(value: &String) -> Self {
        Self::from(value.as_str())
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

impl PartialEq<SharedString> for String {
    fn eq(&self, other: &SharedString) -> bool {
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

    const LONG: &str = "a text longer than twenty-four bytes";

    #[test]
    fn clone_shares_and_push_copies_on_write() {
        let mut a = SharedString::from(LONG);
        let b = a.clone();
        assert!(a.ptr_eq(&b));
        a.push_str("!");
        assert_eq!(a, format!("{LONG}!"));
        assert_eq!(b, LONG);
        assert!(!a.ptr_eq(&b));
    }

    #[test]
    fn short_text_is_stored_in_place_and_grows_out_of_it() {
        assert_eq!(std::mem::size_of::<SharedString>(), 32);
        let fits = "x".repeat(INLINE);
        for short in [
            SharedString::from("ab"),
            SharedString::from("ab".to_owned()),
            SharedString::from(fits.as_str()),
        ] {
            assert!(matches!(short.0, Repr::Inline(_)), "{short}");
            // A clone is a copy: nothing is shared.
            assert!(!short.ptr_eq(&short.clone()));
        }
        let over = "x".repeat(INLINE + 1);
        assert!(matches!(
            SharedString::from(over.as_str()).0,
            Repr::Frozen(_)
        ));
        assert!(matches!(SharedString::from(over).0, Repr::Growable(_)));

        // Appending stays in place while it fits, then moves to a growable buffer.
        let mut text = SharedString::from("ab");
        let copy = text.clone();
        text.push_str(&"c".repeat(INLINE - 2));
        assert!(matches!(text.0, Repr::Inline(_)));
        text.push_str("d");
        assert!(matches!(text.0, Repr::Growable(_)));
        assert_eq!(text, format!("ab{}d", "c".repeat(INLINE - 2)));
        assert_eq!(copy, "ab");
    }

    #[test]
    fn push_is_in_place_when_unique() {
        let mut a = SharedString::from(String::with_capacity(64));
        a.push_str("x");
        let ptr = a.as_ptr();
        a.push_str("y");
        assert_eq!(ptr, a.as_ptr());
        // A frozen or static string becomes growable on its first append.
        let mut frozen = SharedString::from("a");
        frozen.push_str("b");
        let mut fixed = SharedString::from_static("a");
        fixed.push_str("b");
        assert_eq!((frozen.as_str(), fixed.as_str()), ("ab", "ab"));
    }

    #[test]
    fn equality_ordering_and_hash_follow_the_text_whatever_the_representation() {
        use std::collections::hash_map::DefaultHasher;
        use std::hash::{Hash, Hasher};
        let hash = |s: &SharedString| {
            let mut h = DefaultHasher::new();
            s.hash(&mut h);
            h.finish()
        };
        let all = [
            SharedString::from_static("x"),
            SharedString::from("x"),
            SharedString::from("x".to_owned()),
        ];
        for a in &all {
            for b in &all {
                assert_eq!(a, b);
                assert_eq!(hash(a), hash(b));
            }
        }
        let (a, b) = (
            SharedString::from_static("a"),
            SharedString::from("b".to_owned()),
        );
        assert!(a < b);
        assert_eq!(SharedString::from_static("s").into_string(), "s");
        assert_eq!(SharedString::new(), "");
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
