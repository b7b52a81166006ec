//! [`Metadata`]: a message's free-form metadata, shared copy-on-write.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The metadata of a [`Msg`](crate::Msg): a JSON object (`Map<String, Value>`) shared between
/// clones and copied only when a clone is changed, like [`Content`](crate::Content).
///
/// It dereferences to the map, so reading (`get`, indexing, `iter`) and changing (`insert`,
/// `remove`, ...) work as on a map; a change to a shared `Metadata` first copies it. Empty
/// metadata allocates nothing.
///
/// ```
/// use agentscope_core::{Metadata, Msg};
///
/// let mut a = Msg::assistant("hi");
/// a.metadata.insert("channel".into(), "web".into());
/// let b = a.clone();                                  // shares the map
/// a.metadata.insert("seen".into(), true.into());      // copies, then inserts
/// assert_eq!(a.metadata.len(), 2);
/// assert_eq!(b.metadata.len(), 1);
/// assert_eq!(b.metadata["channel"], "web");
///
/// let empty = Metadata::new();
/// assert!(empty.is_empty());
/// ```
#[derive(Clone, Default)]
pub struct Metadata(Option<Arc<Map<String, Value>>>);

/// What empty metadata dereferences to.
static EMPTY: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

impl Metadata {
    /// No entries (allocates nothing).
    pub const fn new() -> Self {
        Self(None)
    }

    /// The entries as a map, copied only when they are shared.
    pub fn into_map(self) -> Map<String, Value> {
        match self.0 {
            Some(map) => Arc::try_unwrap(map).unwrap_or_else(|shared| (*shared).clone()),
            None => Map::new(),
        }
    }
}

impl Deref for Metadata {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Map<String, Value> {
        self.0.as_deref().unwrap_or(&EMPTY)
    }
}

impl DerefMut for Metadata {
    /// Copies the entries first when they are shared.
    fn deref_mut(&mut self) -> &mut Map<String, Value> {
        Arc::make_mut(self.0.get_or_insert_with(Arc::default))
    }
}

impl From<Map<String, Value>> for Metadata {
    /// Shares `map`; an empty map stays free.
    fn from(map: Map<String, Value>) -> Self {
        match map.is_empty() {
            true => Self(None),
            false => Self(Some(Arc::new(map))),
        }
    }
}

impl From<Metadata> for Map<String, Value> {
    fn from(metadata: Metadata) -> Self {
        metadata.into_map()
    }
}

impl<'a> IntoIterator for &'a Metadata {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for Metadata {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl PartialEq<Map<String, Value>> for Metadata {
    fn eq(&self, other: &Map<String, Value>) -> bool {
        **self == *other
    }
}

impl fmt::Debug for Metadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::<String, Value>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clones_share_until_one_changes() {
        let mut a = Metadata::new();
        a.insert("k".into(), json!(1));
        let b = a.clone();
        assert!(matches!((&a.0, &b.0), (Some(x), Some(y)) if Arc::ptr_eq(x, y)));
        a.insert("k".into(), json!(2));
        assert_eq!((a["k"].clone(), b["k"].clone()), (json!(2), json!(1)));
    }

    #[test]
    fn empty_is_free_and_serde_is_a_plain_object() {
        let empty = Metadata::default();
        assert!(empty.0.is_none());
        assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
        let back: Metadata = serde_json::from_str(r#"{"a":true}"#).unwrap();
        assert_eq!(back["a"], true);
        assert_eq!(serde_json::to_value(&back).unwrap(), json!({"a": true}));
        let none: Metadata = serde_json::from_str("{}").unwrap();
        assert!(none.0.is_none());
    }
}
