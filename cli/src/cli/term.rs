//! What the CLI prints to a terminal, made safe.
//!
//! - Text that came from a plugin or an MCP server (names, descriptions, render text, error
//!   messages, load warnings) goes through [`text`] (multi-line output) or [`cell`] (one
//!   table cell or one line), which show control characters, ESC, CR, DEL, C1 controls and
//!   bidi overrides as visible escapes (`\x1b`, `\r`, `\u{202e}`); the rule lives in
//!   `toolhost::tools::escape`. JSON output needs none of this: serde escapes controls.
//! - Logs go to stderr through [`LogWriter`], which never panics and drops what it cannot
//!   write (a full non-blocking pipe, a closed one), with ANSI colours only when stderr
//!   is a terminal and `NO_COLOR` is unset. Log lines and error messages quote URLs that
//!   toolhost did not write (configured MCP servers, upstream errors): both hide the
//!   URLs' credentials (user-info, secret query parameters) with
//!   `toolhost::tools::redact::scrub_urls` (rule: `docs/security.md`, "Secrets in the
//!   audit log and in error texts").
//! - Printing into a closed pipe (`toolhost list --json | head -1`) ends the process
//!   quietly with the conventional status 141 (128 + SIGPIPE) instead of a panic
//!   message: see [`exit_quietly_on_broken_pipe`].

use std::borrow::Cow;
use std::io::{IsTerminal, Write};

/// Untrusted multi-line text for the terminal: newlines and tabs kept, every other
/// control or bidi character escaped.
pub fn text(s: &str) -> Cow<'_, str> {
    toolhost::tools::escape::escape_text(s)
}

/// Untrusted text for one table cell or one line: like [`text`], and newlines and tabs
/// escaped too, so a value cannot forge extra rows.
pub fn cell(s: &str) -> Cow<'_, str> {
    toolhost::tools::escape::escape_line(s)
}

/// An error message for the terminal: [`text`], after hiding the credentials of the URLs
/// it quotes (`https://[REDACTED]@host`, `?access_token=[REDACTED]`).
pub fn error(s: &str) -> String {
    text(&toolhost::tools::redact::scrub_urls(s)).into_owned()
}

/// Serialised JSON for the terminal. serde already escapes C0 controls (ESC, CR) inside
/// strings, but not DEL, C1 controls (U+009B is an 8-bit CSI to some terminals) or bidi
/// overrides; those become `\uXXXX` escapes here. The JSON means the same: outside
/// strings JSON is plain ASCII, so every such character sits inside a string.
pub fn json(serialised: String) -> String {
    if !serialised
        .chars()
        .any(toolhost::tools::escape::is_terminal_unsafe)
    {
        return serialised;
    }
    let mut out = String::with_capacity(serialised.len() + 16);
    for c in serialised.chars() {
        // `\n` (and spaces) of pretty-printed JSON are layout, not string content.
        if toolhost::tools::escape::is_terminal_unsafe(c) && c != '\n' {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The exit status of a process that stops because its output pipe closed, as a shell
/// reports one killed by SIGPIPE.
pub const BROKEN_PIPE_STATUS: i32 = 141;

/// Makes the `print!` family exit quietly with [`BROKEN_PIPE_STATUS`] when stdout or
/// stderr is a closed pipe.
///
/// Rust ignores SIGPIPE, so a write to a closed pipe is an `EPIPE` error, and `println!`
/// turns it into a panic ("failed printing to stdout: Broken pipe"). Restoring SIGPIPE's
/// default action would be wrong here: the host also writes to MCP servers' stdin pipes,
/// and a crashed server must not kill it. So the panic hook recognises exactly that panic
/// and exits without a message; every other panic goes to the previous hook.
pub fn exit_quietly_on_broken_pipe() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        let printing = payload.starts_with("failed printing to stdout")
            || payload.starts_with("failed printing to stderr");
        if printing && payload.contains("Broken pipe") {
            std::process::exit(BROKEN_PIPE_STATUS);
        }
        previous(info);
    }));
}

/// Whether log lines on stderr may carry ANSI colours: only on a terminal, and not when
/// `NO_COLOR` is set (<https://no-color.org>).
pub fn stderr_colours() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A `tracing` writer to stderr that never fails and never panics. A log line that cannot
/// be written (`EAGAIN` on a non-blocking pipe someone else shares, `EPIPE` on a closed
/// one) is dropped: logs must never take the process down. The credentials of URLs in a
/// line are hidden (`toolhost::tools::redact::scrub_urls`): tracing's formatter hands over
/// one whole event per `write`, so a URL is never split between two calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let scrubbed = match std::str::from_utf8(buf) {
            Ok(line) => match toolhost::tools::redact::scrub_urls(line) {
                std::borrow::Cow::Owned(clean) => Some(clean),
                std::borrow::Cow::Borrowed(_) => None,
            },
            Err(_) => None,
        };
        let mut err = std::io::stderr().lock();
        let mut rest = scrubbed.as_deref().map_or(buf, str::as_bytes);
        // A few retries for a pipe that is momentarily full; then give up on this line.
        let mut tries = 0;
        while !rest.is_empty() {
            match err.write(rest) {
                Ok(0) => break,
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(_) => break,
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().lock().flush();
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> Self::Writer {
        LogWriter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_forge_rows() {
        assert_eq!(cell("a\r\nb\x1b[2J"), "a\\r\\nb\\x1b[2J");
        assert_eq!(text("a\nb\x1b]0;t\x07"), "a\nb\\x1b]0;t\\x07");
    }

    #[test]
    fn json_stays_json_without_c1_or_bidi() {
        let raw =
            serde_json::to_string_pretty(&serde_json::json!({"d": "a\u{9b}b\u{202e}c\x7f\x1b"}))
                .unwrap_or_default();
        let out = json(raw);
        assert!(
            !out.chars()
                .any(|c| c != '\n' && toolhost::tools::escape::is_terminal_unsafe(c))
        );
        let back: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(back["d"], "a\u{9b}b\u{202e}c\x7f\x1b");
    }
}
