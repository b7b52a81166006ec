//! [`Content`]: a message's blocks, shared copy-on-write.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::block::ContentBlock;

/// The blocks of a [`Msg`](crate::Msg), in order: a `Vec<ContentBlock>` that is shared
/// between clones and copied only when a clone is changed.
///
/// The engine copies messages often (into every model request, into the events hooks
/// receive, into memory); with `Content` those copies cost a reference-count increment
/// instead of a new vector and a copy of every block. It dereferences to
/// `Vec<ContentBlock>`, so reading is as with a vector (`len`, `iter`, indexing, slices), and
/// so is changing (`push`, `retain`, `iter_mut`, ...): a change to a shared `Content` first
/// copies it, leaving the other clones as they were. An empty `Content` allocates nothing.
///
/// ```
/// use agentscope_core::{Content, ContentBlock, Msg};
///
/// let mut a = Msg::user("hello");
/// let b = a.clone();                         // shares the blocks
/// assert!(a.content.ptr_eq(&b.content));
/// a.content.push(ContentBlock::text("world")); // copies, then appends
/// assert_eq!(a.content.len(), 2);
/// assert_eq!(b.content.len(), 1);
///
/// let content: Content = vec![ContentBlock::text("x")].into();
/// assert_eq!(content[0].as_text(), Some("x"));
/// ```
#[derive(Clone, Default)]
pub struct Content(Option<Arc<Vec<ContentBlock>>>);

/// What an empty `Content` dereferences to.
static EMPTY: Vec<ContentBlock> = Vec::new();

impl Content {
    /// No blocks (allocates nothing).
    pub const fn new() -> Self {
        Self(None)
    }

    /// Whether `self` and `other` share their blocks (one is a clone of the other, unchanged).
    /// Two empty contents share.
    pub fn ptr_eq(&self, other: &Content) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// The blocks as a vector, copied only when they are shared.
    pub fn into_vec(self) -> Vec<ContentBlock> {
        match self.0 {
            Some(blocks) => Arc::try_unwrap(blocks).unwrap_or_else(|shared| (*shared).clone()),
            None => Vec::new(),
        }
    }
}

impl Deref for Content {
    type Target = Vec<ContentBlock>;

    fn deref(&self) -> &Vec<ContentBlock> {
        self.0.as_deref().unwrap_or(&EMPTY)
    }
}

impl DerefMut for Content {
    /// Copies the blocks first when they are shared.
    fn deref_mut(&mut self) -> &mut Vec<ContentBlock> {
        Arc::make_mut(self.0.get_or_insert_with(Arc::default))
    }
}

impl From<Vec<ContentBlock>> for Content {
    /// Shares `blocks`; a vector that never allocated stays free.
    fn from(blocks: Vec<ContentBlock>) -> Self {
        match blocks.capacity() {
            0 => Self(None),
            _ => Self(Some(Arc::new(blocks))),
        }
    }
}

impl From<Content> for Vec<ContentBlock> {
    fn from(content: Content) -> Self {
        content.into_vec()
    }
}

impl FromIterator<ContentBlock> for Content {
    fn from_iter<I: IntoIterator<Item = ContentBlock>>(iter: I) -> Self {
        Vec::from_iter(iter).into()
    }
}

impl Extend<ContentBlock> for Content {
    fn extend<I: IntoIterator<Item = ContentBlock>>(&mut self, iter: I) {
        (**self).extend(iter);
    }
}

impl<'a> IntoIterator for &'a Content {
    type Item = &'a ContentBlock;
    type IntoIter = std::slice::Iter<'a, ContentBlock>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Content {
    type Item = &'a mut ContentBlock;
    type IntoIter = std::slice::IterMut<'a, ContentBlock>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl IntoIterator for Content {
    type Item = ContentBlock;
    type IntoIter = std::vec::IntoIter<ContentBlock>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl PartialEq for Content {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || **self == **other
    }
}

impl PartialEq<Vec<ContentBlock>> for Content {
    fn eq(&self, other: &Vec<ContentBlock>) -> bool {
        **self == *other
    }
}

impl PartialEq<[ContentBlock]> for Content {
    fn eq(&self, other: &[ContentBlock]) -> bool {
        self.as_slice() == other
    }
}

impl<const N: usize> PartialEq<[ContentBlock; N]> for Content {
    fn eq(&self, other: &[ContentBlock; N]) -> bool {
        self.as_slice() == other
    }
}

impl fmt::Debug for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<ContentBlock>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_until_one_changes() {
        let mut a: Content = vec![ContentBlock::text("x")].into();
        let b = a.clone();
        assert!(a.ptr_eq(&b));
        a[0] = ContentBlock::text("y");
        assert!(!a.ptr_eq(&b));
        assert_eq!(a[0].as_text(), Some("y"));
        assert_eq!(b[0].as_text(), Some("x"));
    }

    #[test]
    fn a_unique_content_changes_in_place() {
        let mut a: Content = Vec::with_capacity(4).into();
        a.push(ContentBlock::text("x"));
        let before = a.as_ptr();
        a.push(ContentBlock::text("y"));
        assert_eq!(before, a.as_ptr());
        assert_eq!(a.into_vec().len(), 2);
    }

    #[test]
    fn empty_is_free_and_equal_to_an_empty_vec() {
        let mut a = Content::new();
        assert!(a.is_empty());
        assert_eq!(a, Vec::new());
        assert!(a.ptr_eq(&Content::default()));
        a.push(ContentBlock::text("x"));
        assert_eq!(a.len(), 1);
    }

    #[test]
    fn serde_is_a_plain_array() {
        let a: Content = vec![ContentBlock::text("x")].into();
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, r#"[{"type":"text","text":"x"}]"#);
        let back: Content = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
    }
}
