//! [`Work`]: the compaction itself. One model input as it is being compacted (its messages,
//! their tokens and where each comes from) and the steps that change it: an existing summary
//! in place of the messages it covers, previews of large tool results, a new summary of the
//! oldest turns, and the sliding window that leaves out the oldest units. Which steps run,
//! and with what limits, is [`compact`](super::compact)'s decision.

use std::hash::Hasher;

use agentscope_core::{Msg, SharedString};

use super::hash::WordHash;
use super::report::TruncatedResult;
use super::stash::{ToolResultLimit, stash_all, truncate_message};
use super::state::{Persisted, Sent, Shared};
use super::summary::SummaryRecord;
use super::tokens::{TokenCounter, reported_usage, usage_tokens};
use super::units::{cut_points, latest_user_turn, units};

/// Where a message of the working input comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// Memory's message at this index, sent as is or with previews.
    Memory { index: usize, truncated: bool },
    /// The summary.
    Summary,
}

/// The input being compacted: messages, their tokens and origins, and the measured total.
pub(super) struct Work {
    /// The messages, once they differ from the input (see `lazy`).
    msgs: Vec<Msg>,
    /// Whether the messages are still the input's, unchanged: `msgs` is empty and the
    /// input stands for it (see `view`), so a step that changes nothing copies nothing.
    lazy: bool,
    tokens: Vec<usize>,
    origins: Vec<Origin>,
    /// The tokens of the whole input (system message included), as measured.
    pub(super) total: usize,
    pub(super) used_usage: bool,
    /// The index in `msgs` of the latest user turn.
    user_turn: Option<usize>,
    /// How many of memory's first messages the summary stands for.
    pub(super) covered: usize,
    pub(super) truncated: Vec<TruncatedResult>,
}

impl Work {
    /// Steps 1 to 3 of the hook: `input` with the summary in use in place of the messages
    /// it covers, large tool results as previews (when `tool_results` is set), and its
    /// tokens measured.
    pub(super) fn new(
        shared: &Shared,
        tool_results: Option<ToolResultLimit>,
        input: &[Msg],
        system: Option<&Msg>,
        persisted: &Persisted,
        counter: &dyn TokenCounter,
        counter_key: u64,
    ) -> Self {
        let latest_user = latest_user_turn(input);
        let mut msgs = Vec::with_capacity(input.len() + 1);
        let mut origins = Vec::with_capacity(input.len() + 1);
        // 1: an existing summary of messages before the latest user turn, ending where the
        // conversation may be cut (a record made elsewhere might not).
        let covered = persisted.summary.as_ref().and_then(|record| {
            let at = input.iter().position(|m| m.id == record.through.as_str())?;
            let usable = latest_user.is_none_or(|user| at < user) && cut_points(input)[at + 1];
            usable.then_some((record, at))
        });
        let start = match covered {
            Some((record, at)) => {
                msgs.push(record.message(input[at].timestamp));
                origins.push(Origin::Summary);
                at + 1
            }
            None => 0,
        };
        // 2: previews of large tool results.
        let mut truncated = Vec::new();
        let mut previews = Vec::new();
        let stash = &shared.stash;
        if let Some(limit) = tool_results {
            stash_all(&input[..start], stash, limit);
            for (index, message) in input.iter().enumerate().skip(start) {
                if let Some((preview, results)) = truncate_message(message, stash, limit) {
                    truncated.extend(results.into_iter().map(|(stash_id, tool, chars)| {
                        TruncatedResult {
                            message: message.id.clone(),
                            stash_id,
                            tool,
                            chars,
                        }
                    }));
                    previews.push((index, preview));
                }
            }
        }
        let lazy = start == 0 && previews.is_empty();
        let mut previews = previews.into_iter().peekable();
        for (index, message) in input.iter().enumerate().skip(start) {
            let preview = previews
                .next_if(|(at, _)| *at == index)
                .map(|(_, preview)| preview);
            origins.push(Origin::Memory {
                index,
                truncated: preview.is_some(),
            });
            if !lazy {
                msgs.push(preview.unwrap_or_else(|| message.clone()));
            }
        }
        let user_turn = latest_user.and_then(|user| {
            origins
                .iter()
                .position(|origin| matches!(origin, Origin::Memory { index, .. } if *index == user))
        });
        // 3: tokens.
        let tokens = shared
            .counts
            .count(if lazy { input } else { &msgs }, counter, counter_key);
        let system_tokens = system.map_or(0, |system| counter.count_message(system));
        let counted = system_tokens + tokens.iter().sum::<usize>();
        let mut work = Self {
            msgs,
            lazy,
            tokens,
            origins,
            total: counted,
            used_usage: false,
            user_turn,
            covered: start,
            truncated,
        };
        if let Some(total) = work.reported_total(system, persisted, input) {
            work.total = total;
            work.used_usage = true;
        }
        work
    }

    /// The messages: the input's while nothing changed them.
    pub(super) fn view<'a>(&'a self, input: &'a [Msg]) -> &'a [Msg] {
        if self.lazy { input } else { &self.msgs }
    }

    /// Copies the input's messages, to change them.
    fn materialize(&mut self, input: &[Msg]) {
        if self.lazy {
            self.msgs = input.to_vec();
            self.lazy = false;
        }
    }

    /// How many messages are sent.
    pub(super) fn len(&self) -> usize {
        self.origins.len()
    }

    /// The tokens measured from the provider's usage: when the last reply with usage
    /// answered exactly the input sent before it (same messages, same previews, same
    /// summary, same system message), its usage stands for everything up to it.
    fn reported_total(
        &self,
        system: Option<&Msg>,
        persisted: &Persisted,
        input: &[Msg],
    ) -> Option<usize> {
        let sent = persisted.sent.as_ref()?;
        let msgs = self.view(input);
        let (at, usage) = msgs.iter().enumerate().rev().find_map(|(at, message)| {
            matches!(self.origins[at], Origin::Memory { .. })
                .then(|| reported_usage(message))
                .flatten()
                .map(|usage| (at, usage))
        })?;
        if at != sent.messages {
            return None;
        }
        (fingerprint(system, &msgs[..at], &self.origins[..at]) == sent.fingerprint)
            .then(|| usage_tokens(usage) + self.tokens[at + 1..].iter().sum::<usize>())
    }

    /// What the hook remembers of this input once it is sent, to tell at the next model
    /// call whether the reply's usage measured it.
    pub(super) fn sent(&self, system: Option<&Msg>, input: &[Msg]) -> Sent {
        Sent {
            messages: self.len(),
            fingerprint: fingerprint(system, self.view(input), &self.origins),
        }
    }

    /// The messages to send in place of the input, when they differ from it (when they do
    /// not, the event keeps its own vector).
    pub(super) fn into_changed(self, messages_before: usize) -> Option<Vec<Msg>> {
        let changed = !self.lazy && self.msgs.len() != messages_before
            || self.origins.iter().any(|origin| {
                !matches!(
                    origin,
                    Origin::Memory {
                        truncated: false,
                        ..
                    }
                )
            });
        changed.then_some(self.msgs)
    }

    /// The summary text the input starts with, if any.
    pub(super) fn summary_text(&self, persisted: &Persisted) -> Option<String> {
        self.summary_in_use(persisted).map(|record| record.text)
    }

    /// The summary the input starts with, if any.
    pub(super) fn summary_in_use(&self, persisted: &Persisted) -> Option<SummaryRecord> {
        (self.origins.first() == Some(&Origin::Summary))
            .then(|| persisted.summary.clone())
            .flatten()
    }

    /// The messages to summarise, `from..cut`: everything after the current summary and
    /// before the most recent `keep_recent` messages (everything before the latest user
    /// turn when `forced`), never past the latest user turn, never inside a unit. `None`
    /// when that is nothing.
    pub(super) fn summary_range(
        &self,
        keep_recent: usize,
        forced: bool,
        input: &[Msg],
    ) -> Option<(usize, usize)> {
        let from = usize::from(self.origins.first() == Some(&Origin::Summary));
        let len = self.len();
        let mut cut = if forced {
            len
        } else {
            len.saturating_sub(keep_recent)
        };
        if let Some(user) = self.user_turn {
            cut = cut.min(user);
        }
        let allowed = cut_points(self.view(input));
        while cut > from && !allowed[cut] {
            cut -= 1;
        }
        (cut > from).then_some((from, cut))
    }

    /// Replaces `msgs[..cut]` (the old summary and the messages after it) by a summary
    /// saying `text`, and returns its record.
    pub(super) fn summarise(
        &mut self,
        cut: usize,
        text: String,
        counter: &dyn TokenCounter,
        input: &[Msg],
    ) -> SummaryRecord {
        self.materialize(input);
        let (through, messages) = match self.origins[cut - 1] {
            // Previews keep their message's id.
            Origin::Memory { index, .. } => (self.msgs[cut - 1].id.to_string(), index + 1),
            // `cut` is past the old summary.
            Origin::Summary => (String::new(), 0),
        };
        let record = SummaryRecord::new(through, messages, text);
        let message = record.message(self.msgs[cut - 1].timestamp);
        let tokens = counter.count_message(&message);
        let removed: usize = self.tokens[..cut].iter().sum();
        self.total = self.total.saturating_sub(removed) + tokens;
        self.msgs.splice(..cut, [message]);
        self.tokens.splice(..cut, [tokens]);
        self.origins.splice(..cut, [Origin::Summary]);
        self.user_turn = self.user_turn.map(|user| user + 1 - cut);
        self.covered = messages;
        record
    }

    /// Leaves out the oldest units, keeping the summary, the latest user turn's unit and the
    /// last unit, until at most `max_messages` messages (besides the summary) and at most
    /// `budget` tokens remain. Returns the ids of the messages left out.
    pub(super) fn slide(
        &mut self,
        max_messages: Option<usize>,
        budget: Option<usize>,
        input: &[Msg],
    ) -> Vec<SharedString> {
        let summary = usize::from(self.origins.first() == Some(&Origin::Summary));
        let mut count = self.len() - summary;
        let over = |count: usize, total: usize| {
            max_messages.is_some_and(|max| count > max) || budget.is_some_and(|max| total > max)
        };
        if !over(count, self.total) {
            return Vec::new();
        }
        self.materialize(input);
        let units = units(&self.msgs);
        let last = units.len().saturating_sub(1);
        let mut keep = vec![true; self.msgs.len()];
        for (n, unit) in units.iter().enumerate() {
            if !over(count, self.total) {
                break;
            }
            let protected = n == last
                || unit.start < summary
                || self.user_turn.is_some_and(|user| unit.contains(&user));
            if protected {
                continue;
            }
            for at in unit.clone() {
                keep[at] = false;
                count -= 1;
                self.total = self.total.saturating_sub(self.tokens[at]);
            }
        }
        let mut dropped = Vec::new();
        let mut at = 0;
        let mut user_turn = self.user_turn;
        let msgs = std::mem::take(&mut self.msgs);
        let mut kept = Vec::with_capacity(msgs.len());
        for (index, message) in msgs.into_iter().enumerate() {
            if keep[index] {
                kept.push(message);
            } else {
                if let Some(user) = &mut user_turn
                    && index < *user
                {
                    *user -= 1;
                }
                dropped.push(message.id);
            }
        }
        self.msgs = kept;
        self.tokens.retain(|_| {
            at += 1;
            keep[at - 1]
        });
        at = 0;
        self.origins.retain(|_| {
            at += 1;
            keep[at - 1]
        });
        self.user_turn = user_turn;
        dropped
    }
}

/// A fingerprint of an input, as stored with a session: the system message's text and, per
/// message, its id and how it was sent (as is, with previews, a summary). Stable across
/// processes and versions ([`WordHash`]).
fn fingerprint(system: Option<&Msg>, msgs: &[Msg], origins: &[Origin]) -> String {
    let mut hash = WordHash::default();
    if let Some(system) = system {
        for block in system.content.iter() {
            if let Some(text) = block.as_text() {
                hash.write(text.as_bytes());
                hash.write_u8(0xfe);
            }
        }
    }
    hash.write_u8(0xfd);
    for (message, origin) in msgs.iter().zip(origins) {
        hash.write(message.id.as_bytes());
        hash.write_u8(match origin {
            Origin::Memory {
                truncated: false, ..
            } => 0xf0,
            Origin::Memory {
                truncated: true, ..
            } => 0xf1,
            Origin::Summary => 0xf2,
        });
    }
    format!("{:016x}", hash.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_see_ids_previews_and_the_system_message() {
        let a = Msg::user("a");
        let b = Msg::assistant("b");
        let plain = [
            Origin::Memory {
                index: 0,
                truncated: false,
            },
            Origin::Memory {
                index: 1,
                truncated: false,
            },
        ];
        let mut cut = plain;
        cut[1] = Origin::Memory {
            index: 1,
            truncated: true,
        };
        let msgs = [a.clone(), b.clone()];
        let base = fingerprint(None, &msgs, &plain);
        assert_eq!(base, fingerprint(None, &msgs, &plain));
        assert_ne!(base, fingerprint(None, &msgs, &cut));
        assert_ne!(base, fingerprint(Some(&Msg::system("s")), &msgs, &plain));
        assert_ne!(base, fingerprint(None, &[b, a], &plain));
    }
}
