//! The twelve event kinds ([`HookEventType`]) and sets of them ([`HookEventTypes`]): what a
//! hook declares interest in, and what the chain indexes its hooks by.

use std::fmt;
use std::ops::{BitOr, BitOrAssign};

use serde::{Deserialize, Serialize};

/// The kind of a [`HookEvent`](crate::HookEvent), without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HookEventType {
    /// Before the call starts.
    PreCall,
    /// After the call finished successfully.
    PostCall,
    /// Before each model call of the loop.
    PreReasoning,
    /// After each model call of the loop.
    PostReasoning,
    /// For each streamed model chunk.
    ReasoningChunk,
    /// Before each tool call.
    PreActing,
    /// After each tool call.
    PostActing,
    /// For each progress chunk a tool emits.
    ActingChunk,
    /// Before the summary at the iteration limit.
    PreSummary,
    /// After the summary.
    PostSummary,
    /// For each streamed summary chunk.
    SummaryChunk,
    /// When the call failed.
    Error,
}

impl HookEventType {
    /// All twelve kinds, in declaration order.
    pub const ALL: [HookEventType; 12] = [
        HookEventType::PreCall,
        HookEventType::PostCall,
        HookEventType::PreReasoning,
        HookEventType::PostReasoning,
        HookEventType::ReasoningChunk,
        HookEventType::PreActing,
        HookEventType::PostActing,
        HookEventType::ActingChunk,
        HookEventType::PreSummary,
        HookEventType::PostSummary,
        HookEventType::SummaryChunk,
        HookEventType::Error,
    ];

    /// The kind's position in [`HookEventType::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Whether hooks are notified of this kind (chunks and errors) rather than chained
    /// (Pre*/Post*). See the dispatch rules in the crate docs.
    pub const fn is_notification(self) -> bool {
        matches!(
            self,
            HookEventType::ReasoningChunk
                | HookEventType::ActingChunk
                | HookEventType::SummaryChunk
                | HookEventType::Error
        )
    }

    /// The kind's name, e.g. `"PreCall"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            HookEventType::PreCall => "PreCall",
            HookEventType::PostCall => "PostCall",
            HookEventType::PreReasoning => "PreReasoning",
            HookEventType::PostReasoning => "PostReasoning",
            HookEventType::ReasoningChunk => "ReasoningChunk",
            HookEventType::PreActing => "PreActing",
            HookEventType::PostActing => "PostActing",
            HookEventType::ActingChunk => "ActingChunk",
            HookEventType::PreSummary => "PreSummary",
            HookEventType::PostSummary => "PostSummary",
            HookEventType::SummaryChunk => "SummaryChunk",
            HookEventType::Error => "Error",
        }
    }
}

impl fmt::Display for HookEventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of [`HookEventType`]s: what a hook is interested in.
///
/// ```
/// use agentscope_core::{HookEventType, HookEventTypes};
///
/// let calls = HookEventType::PreCall | HookEventType::PostCall;
/// assert!(calls.contains(HookEventType::PostCall));
/// assert!(!calls.contains(HookEventType::Error));
/// assert!(HookEventTypes::ALL.contains(HookEventType::Error));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HookEventTypes(u16);

impl HookEventTypes {
    /// No kinds.
    pub const NONE: HookEventTypes = HookEventTypes(0);
    /// All twelve kinds.
    pub const ALL: HookEventTypes = HookEventTypes((1 << 12) - 1);
    /// The three chunk kinds.
    pub const CHUNKS: HookEventTypes = HookEventTypes(
        (1 << HookEventType::ReasoningChunk as u16)
            | (1 << HookEventType::ActingChunk as u16)
            | (1 << HookEventType::SummaryChunk as u16),
    );

    /// The set holding just `kind`.
    pub const fn only(kind: HookEventType) -> Self {
        HookEventTypes(1 << kind as u16)
    }

    /// Whether `kind` is in the set.
    pub const fn contains(self, kind: HookEventType) -> bool {
        self.0 & (1 << kind as u16) != 0
    }

    /// The set with `kind` added.
    #[must_use]
    pub const fn with(self, kind: HookEventType) -> Self {
        HookEventTypes(self.0 | (1 << kind as u16))
    }

    /// The set with `kind` removed.
    #[must_use]
    pub const fn without(self, kind: HookEventType) -> Self {
        HookEventTypes(self.0 & !(1 << kind as u16))
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The kinds in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = HookEventType> {
        HookEventType::ALL
            .into_iter()
            .filter(move |kind| self.contains(*kind))
    }
}

impl fmt::Debug for HookEventTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl From<HookEventType> for HookEventTypes {
    fn from(kind: HookEventType) -> Self {
        HookEventTypes::only(kind)
    }
}

impl FromIterator<HookEventType> for HookEventTypes {
    fn from_iter<I: IntoIterator<Item = HookEventType>>(iter: I) -> Self {
        iter.into_iter()
            .fold(HookEventTypes::NONE, HookEventTypes::with)
    }
}

impl BitOr for HookEventTypes {
    type Output = HookEventTypes;

    fn bitor(self, rhs: HookEventTypes) -> HookEventTypes {
        HookEventTypes(self.0 | rhs.0)
    }
}

impl BitOr<HookEventType> for HookEventTypes {
    type Output = HookEventTypes;

    fn bitor(self, rhs: HookEventType) -> HookEventTypes {
        self.with(rhs)
    }
}

impl BitOr for HookEventType {
    type Output = HookEventTypes;

    fn bitor(self, rhs: HookEventType) -> HookEventTypes {
        HookEventTypes::only(self).with(rhs)
    }
}

impl BitOrAssign for HookEventTypes {
    fn bitor_assign(&mut self, rhs: HookEventTypes) {
        self.0 |= rhs.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_type_set_operations() {
        let set = HookEventType::PreCall | HookEventType::Error;
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [HookEventType::PreCall, HookEventType::Error]
        );
        assert!(
            set.without(HookEventType::Error)
                .contains(HookEventType::PreCall)
        );
        assert!(
            !set.without(HookEventType::Error)
                .contains(HookEventType::Error)
        );
        assert_eq!(HookEventTypes::ALL.iter().count(), 12);
        assert_eq!(HookEventTypes::CHUNKS.iter().count(), 3);
        assert!(HookEventType::ALL.iter().all(|t| t.index() == *t as usize));
    }
}
