//! The redaction hook `docs/hooks.md` shows ("Redacting what tools return"), verbatim from
//! the marker on: [`assert_the_guide_shows_it`] checks that the guide holds exactly this code.
//! `agentscope-server`'s tests include this very file (`#[path]`): one copy.

use agentscope::prelude::*;

/// Fails unless `docs/hooks.md` shows the code of this file from the marker on.
pub(crate) fn assert_the_guide_shows_it() {
    let guide = include_str!("../../../../docs/hooks.md");
    let source = include_str!("redaction.rs");
    let marker = "// The guide's code:\n";
    let code = &source[source.rfind(marker).unwrap() + marker.len()..];
    assert!(
        guide.contains(code),
        "docs/hooks.md no longer shows:\n{code}"
    );
}

/// The guide's hook.
pub(crate) fn hook() -> impl Hook {
    redact_emails_hook()
}

// The guide's code:
/// `text` with every word that looks like an e-mail address replaced by `[email]`.
fn redact_emails(text: &str) -> String {
    text.split_inclusive(char::is_whitespace)
        .map(|piece| {
            // The word without the space and punctuation after it ("ada@example.com, ").
            let word = piece.trim_end_matches(|c: char| c.is_whitespace() || ",.;:!?)".contains(c));
            match word.split_once('@') {
                Some((user, domain)) if !user.is_empty() && domain.contains('.') => {
                    format!("[email]{}", &piece[word.len()..])
                }
                _ => piece.to_owned(),
            }
        })
        .collect()
}

/// A tool result or progress chunk with the e-mail addresses of its text replaced.
fn redacted(result: &ToolResultBlock) -> ToolResultBlock {
    let output = result.output.iter().map(redacted_block).collect();
    ToolResultBlock {
        output,
        ..result.clone()
    }
}

fn redacted_block(block: &ContentBlock) -> ContentBlock {
    match block {
        ContentBlock::Text(text) => ContentBlock::text(redact_emails(&text.text)),
        ContentBlock::Thinking(thinking) => {
            ContentBlock::thinking(redact_emails(&thinking.thinking))
        }
        // The result of an inner agent's tool, which an `AgentTool` forwards as progress.
        ContentBlock::ToolResult(result) => ContentBlock::ToolResult(redacted(result)),
        other => other.clone(),
    }
}

/// Keeps e-mail addresses out of what tools return: their results and their progress.
fn redact_emails_hook() -> impl Hook {
    hook_fn(|event| {
        match event {
            HookEvent::PostActing(e) => {
                let result = redacted(e.tool_result());
                e.set_tool_result(result);
            }
            HookEvent::ActingChunk(e) => {
                let chunk = redacted(e.chunk());
                e.set_chunk(chunk);
            }
            _ => {}
        }
        Ok(())
    })
    .with_interests(HookEventType::PostActing | HookEventType::ActingChunk)
    .with_name("redact-emails")
}
