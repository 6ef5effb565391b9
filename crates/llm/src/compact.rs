//! Tool-aware compaction: fitting a history under a token budget without breaking it
//! (`docs/llm.md`, "Token budget and compaction").
//!
//! The history is cut into **groups** that are kept or dropped whole: an assistant message
//! with its tool results (a call is never separated from its result), or any other single
//! message. Pinned, never touched: the leading system messages and the user message right
//! after them (the task). Protected, never touched: the last `keep_turns` groups.
//!
//! When the history (plus the offered tool definitions) passes the budget, in this order
//! until it fits:
//!
//! 1. **old large tool results** (more than [`MIN_REPLACED_RESULT_BYTES`]), oldest first,
//!    are replaced by a marker naming what was dropped: the tool, the call id, the size and
//!    the sha256 of the result;
//! 2. **the oldest groups** are dropped, replaced by one user message saying how many
//!    messages were dropped (earlier drop markers are folded into it).
//!
//! If the pinned and protected messages alone pass the budget, the history is left at that
//! and the report says `over_budget`; the provider decides.

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::tokens::TokenCounter;
use crate::types::ChatMessage;

/// Tool results at most this long are never replaced by a marker (a marker would not be
/// much shorter).
pub const MIN_REPLACED_RESULT_BYTES: usize = 256;

/// The longest a result marker can be (its tool name and call id are cut to 64 bytes).
pub const MAX_MARKER_BYTES: usize = 400;

/// How the text of a marker starts.
pub const MARKER_PREFIX: &str = "[compacted: ";

/// What one compaction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct CompactionReport {
    /// Tokens of the request before (history and tool definitions).
    pub tokens_before: usize,
    /// Tokens after.
    pub tokens_after: usize,
    /// Tool results replaced by a marker.
    pub results_replaced: usize,
    /// Messages dropped.
    pub messages_dropped: usize,
    /// Whether the history still passes the budget (pinned and recent turns alone do).
    pub over_budget: bool,
}

/// Fits `messages` under `budget` tokens, counting `fixed` tokens for the tool definitions.
/// Returns `None` when the history already fits (nothing changed).
pub fn compact(
    messages: &mut Vec<ChatMessage>,
    budget: usize,
    fixed: usize,
    keep_turns: usize,
    counter: &TokenCounter,
) -> Option<CompactionReport> {
    let mut counts: Vec<usize> = messages.iter().map(|m| counter.count_message(m)).collect();
    let before = fixed + counts.iter().sum::<usize>();
    if before <= budget {
        return None;
    }
    let mut total = before;
    let groups = groups(messages);
    let pinned = pinned_prefix(messages);
    let first_protected = groups
        .len()
        .saturating_sub(keep_turns)
        .min(groups.len().saturating_sub(1));
    let protected_from = groups.get(first_protected).map_or(messages.len(), |g| g.0);
    let mut report = CompactionReport {
        tokens_before: before,
        ..Default::default()
    };

    // 1. Old large tool results become markers, oldest first.
    'results: for &(start, end) in &groups {
        if start >= protected_from {
            break;
        }
        let Some(ChatMessage::Assistant(a)) = messages.get(start) else {
            continue;
        };
        let names: Vec<(String, String)> = a
            .tool_calls
            .iter()
            .map(|c| (c.id.clone(), c.function.name.clone()))
            .collect();
        for i in start + 1..end {
            if total <= budget {
                break 'results;
            }
            let Some(ChatMessage::Tool {
                tool_call_id,
                content,
            }) = messages.get_mut(i)
            else {
                continue;
            };
            // A marker is short; a long result that merely starts like one (a tool can
            // write anything) is replaced like any other.
            if content.len() <= MIN_REPLACED_RESULT_BYTES
                || (content.starts_with(MARKER_PREFIX) && content.len() <= MAX_MARKER_BYTES)
            {
                continue;
            }
            let tool = names
                .iter()
                .find(|(id, _)| id == tool_call_id)
                .map_or("?", |(_, n)| n.as_str());
            *content = result_marker(tool, tool_call_id, content);
            let n = counter.count_message(&messages[i]);
            total = total - counts[i] + n;
            counts[i] = n;
            report.results_replaced += 1;
        }
    }

    // 2. The oldest groups go, between the pinned prefix and the protected tail.
    if total > budget {
        let droppable: Vec<(usize, usize)> = groups
            .iter()
            .copied()
            .filter(|&(s, _)| s >= pinned && s < protected_from)
            .collect();
        let mut drop_end = None;
        let mut dropped = 0usize;
        let mut earlier = 0usize;
        let mut freed = 0usize;
        for &(s, e) in &droppable {
            // A marker for the dropped messages costs about what an earlier one did.
            let marker_cost = counter.count_text(&drop_marker(dropped + earlier + 99)) + 4;
            if total - freed + marker_cost <= budget && drop_end.is_some() {
                break;
            }
            freed += counts[s..e].iter().sum::<usize>();
            for m in &messages[s..e] {
                match dropped_by_marker(m) {
                    Some(n) => earlier += n,
                    None => dropped += 1,
                }
            }
            drop_end = Some(e);
        }
        if let (Some(end), Some(&(start, _))) = (drop_end, droppable.first()) {
            let marker = ChatMessage::user(drop_marker(dropped + earlier));
            let marker_tokens = counter.count_message(&marker);
            messages.splice(start..end, [marker]);
            total = total - freed + marker_tokens;
            report.messages_dropped = dropped;
        }
    }
    report.tokens_after = total;
    report.over_budget = total > budget;
    Some(report)
}

/// The marker that replaces a tool result.
pub fn result_marker(tool: &str, call_id: &str, content: &str) -> String {
    format!(
        "{MARKER_PREFIX}the result of tool '{}' (call {}) was dropped to fit the token budget: {} bytes, sha256 {}]",
        cut(tool, 64),
        cut(call_id, 64),
        content.len(),
        hex::encode(Sha256::digest(content.as_bytes()))
    )
}

fn drop_marker(n: usize) -> String {
    format!(
        "{MARKER_PREFIX}{n} earlier message(s) of this conversation were dropped to fit the token budget]"
    )
}

/// How many messages an earlier drop marker stands for, if `m` is one.
fn dropped_by_marker(m: &ChatMessage) -> Option<usize> {
    let ChatMessage::User { content } = m else {
        return None;
    };
    let rest = content.strip_prefix(MARKER_PREFIX)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if !rest[digits.len()..].starts_with(" earlier message(s)") {
        return None;
    }
    digits.parse().ok()
}

/// At most `max` bytes of `s`, cut on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    toolhost_core::tools::render::head(s, max)
}

/// The leading system messages and the user message right after them.
fn pinned_prefix(messages: &[ChatMessage]) -> usize {
    let mut n = messages
        .iter()
        .take_while(|m| matches!(m, ChatMessage::System { .. }))
        .count();
    if matches!(messages.get(n), Some(ChatMessage::User { .. }))
        && messages.get(n).and_then(dropped_by_marker).is_none()
    {
        n += 1;
    }
    n
}

/// The groups of a history as `(start, end)` ranges: an assistant message with the tool
/// messages that follow it, or one other message.
fn groups(messages: &[ChatMessage]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let mut end = i + 1;
        if matches!(messages[i], ChatMessage::Assistant(_)) {
            while matches!(messages.get(end), Some(ChatMessage::Tool { .. })) {
                end += 1;
            }
        }
        out.push((i, end));
        i = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{AssistantMessage, AssistantToolCall};

    fn call_turn(i: usize, size: usize) -> Vec<ChatMessage> {
        vec![
            ChatMessage::Assistant(AssistantMessage {
                content: None,
                tool_calls: vec![AssistantToolCall::new(format!("c{i}"), "read", "{}")],
            }),
            ChatMessage::tool(format!("c{i}"), "x".repeat(size)),
        ]
    }

    #[test]
    fn a_history_under_budget_is_untouched() {
        let mut m = vec![ChatMessage::user("hi")];
        assert_eq!(compact(&mut m, 100, 0, 2, &TokenCounter::Estimate), None);
    }

    #[test]
    fn results_become_markers_before_turns_are_dropped() {
        let mut m = vec![ChatMessage::system("s"), ChatMessage::user("task")];
        for i in 0..6 {
            m.extend(call_turn(i, 3000));
        }
        let original = m.clone();
        // Room for the recent turns whole and markers for the rest.
        let r = compact(&mut m, 3000, 0, 2, &TokenCounter::Estimate);
        let Some(r) = r else {
            panic!("over budget, so compaction runs");
        };
        assert_eq!((r.results_replaced, r.messages_dropped), (4, 0), "{r:?}");
        assert!(!r.over_budget);
        assert_eq!(m.len(), original.len());
        assert_eq!(m[10..], original[10..], "the recent turns stay whole");
        let ChatMessage::Tool { content, .. } = &m[3] else {
            panic!("a tool message");
        };
        assert!(content.contains("'read'") && content.contains("3000 bytes"));
        assert!(content.contains(&hex::encode(Sha256::digest("x".repeat(3000)))));
    }

    #[test]
    fn old_turns_are_dropped_whole_and_markers_fold() {
        let mut m = vec![ChatMessage::user("task")];
        for i in 0..10 {
            m.extend(call_turn(i, 100));
        }
        let r = compact(&mut m, 200, 0, 2, &TokenCounter::Estimate);
        assert!(r.is_some_and(|r| r.messages_dropped > 0 && !r.over_budget));
        assert_eq!(m[0], ChatMessage::user("task"));
        let first = dropped_by_marker(&m[1]).unwrap_or(0);
        assert!(first > 0);
        assert!(matches!(m[2], ChatMessage::Assistant(_)));
        for i in 10..14 {
            m.extend(call_turn(i, 100));
        }
        let _ = compact(&mut m, 200, 0, 2, &TokenCounter::Estimate);
        let second = dropped_by_marker(&m[1]).unwrap_or(0);
        assert!(second > first, "{first} then {second}");
    }
}
