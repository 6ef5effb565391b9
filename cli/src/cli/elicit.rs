//! The person at the terminal answers a wrapped MCP server's form elicitation during
//! `toolhost call` (docs/mcp.md, "Requests from wrapped servers"): the server's message
//! and each field are shown on stderr, the answers read from stdin. An empty line takes
//! the field's default; end of input cancels.
//!
//! The message, the field names and labels come from the server and are escaped before
//! they are shown; what the person types is checked against the field
//! (`toolhost::mcp::form`) and asked again, at most [`MAX_TRIES`] times.

use std::io::{BufRead, Read, Write};
use std::sync::{Arc, Mutex};

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};
use toolhost::mcp::LocalUser;
use toolhost::mcp::form::{Form, MAX_ANSWER};

/// How often one field is asked again after an answer that does not fit.
const MAX_TRIES: usize = 5;
/// The longest part of the server's message shown (bytes).
const MAX_MESSAGE: usize = 2000;

/// The person at this terminal; `console` is held while asking, so questions do not
/// interleave with an approval prompt.
pub fn terminal_user(console: Arc<Mutex<()>>) -> LocalUser {
    LocalUser::default().with_elicitation(Arc::new(
        move |server: String, params: ElicitRequestParams| {
            let console = console.clone();
            Box::pin(async move {
                tokio::task::spawn_blocking(move || {
                    let _guard = console.lock().unwrap_or_else(|e| e.into_inner());
                    let stdin = std::io::stdin();
                    let mut input = stdin.lock();
                    ask(&server, params, &mut input, &mut std::io::stderr())
                })
                .await
                .unwrap_or_else(|_| ElicitResult::new(ElicitationAction::Cancel))
            })
        },
    ))
}

/// One line of input, at most [`MAX_ANSWER`] bytes (the rest of a longer line is read
/// and dropped, then refused by the field); `None` at the end of input.
fn read_line(input: &mut impl BufRead) -> Option<String> {
    let mut buf = Vec::new();
    let n = input
        .by_ref()
        .take(MAX_ANSWER as u64 + 1)
        .read_until(b'\n', &mut buf)
        .ok()?;
    if n == 0 {
        return None;
    }
    if !buf.ends_with(b"\n") && buf.len() > MAX_ANSWER {
        // Drain the rest of an overlong line.
        let mut rest = Vec::new();
        let _ = input.read_until(b'\n', &mut rest);
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The question as the terminal shows it. toolhost's own prompts open with `  ? toolhost
/// approval:` (`super::approver`); a wrapped server's question opens with a header naming
/// the server, and its message follows one line at a time behind a `│` gutter, so no text
/// of the server's can start a line of its own, whatever newlines it holds. The message
/// was already tagged and escaped per line (`toolhost::mcp::attribution`); it is escaped
/// again here for the terminal and cut to [`MAX_MESSAGE`] bytes.
fn question(server: &str, message: &str) -> String {
    let mut shown = toolhost::tools::render::head(message, MAX_MESSAGE).to_string();
    if shown.len() < message.len() {
        shown.push('…');
    }
    let mut q = format!(
        "  ? MCP server {} asks you (not toolhost; toolhost's own questions start with \
         \"{}\"):\n",
        toolhost::mcp::attribution::tag(server),
        toolhost::mcp::attribution::APPROVAL_MARKER
    );
    for line in shown.lines() {
        q.push_str("    │ ");
        q.push_str(&super::term::cell(line));
        q.push('\n');
    }
    q
}

/// Asks the elicitation of `server` on `out`, reading answers from `input`.
pub fn ask(
    server: &str,
    params: ElicitRequestParams,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> ElicitResult {
    let (message, schema) = match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (message, serde_json::to_value(requested_schema)),
        _ => {
            let _ = writeln!(
                out,
                "  ✗ MCP server {} asked for something other than a form (such as \
                 sending you to a web page); toolhost shows only forms: declined",
                toolhost::mcp::attribution::tag(server)
            );
            return ElicitResult::new(ElicitationAction::Decline);
        }
    };
    let form = match schema
        .map_err(|e| e.to_string())
        .and_then(|s| Form::from_schema(&s).map_err(|e| e.to_string()))
    {
        Ok(f) => f,
        Err(e) => {
            let _ = writeln!(
                out,
                "  ✗ MCP server {} asked for a form toolhost cannot show ({}): declined",
                toolhost::mcp::attribution::tag(server),
                super::term::cell(&e)
            );
            return ElicitResult::new(ElicitationAction::Decline);
        }
    };
    let _ = write!(
        out,
        "{}    [a]nswer, [d]ecline or [c]ancel? ",
        question(server, &message)
    );
    let _ = out.flush();
    let Some(choice) = read_line(input) else {
        return ElicitResult::new(ElicitationAction::Cancel);
    };
    match choice.trim().to_ascii_lowercase().as_str() {
        "a" | "answer" | "y" | "yes" | "accept" => {}
        "d" | "decline" | "n" | "no" => return ElicitResult::new(ElicitationAction::Decline),
        _ => return ElicitResult::new(ElicitationAction::Cancel),
    }
    let mut content = Map::new();
    for field in &form.fields {
        let default = match &field.default {
            Some(d) => format!(" [{}]", super::term::json(d.to_string())),
            None if field.required => " (required)".into(),
            None => String::new(),
        };
        let label = if field.label.is_empty() {
            String::new()
        } else {
            format!(" — {}", super::term::cell(&field.label))
        };
        let mut tries = 0;
        loop {
            let _ = write!(
                out,
                "    {}{label} ({}){default}: ",
                super::term::cell(&field.name),
                super::term::cell(&field.hint())
            );
            let _ = out.flush();
            let Some(line) = read_line(input) else {
                return ElicitResult::new(ElicitationAction::Cancel);
            };
            match field.answer(&line) {
                Ok(Some(v)) => {
                    content.insert(field.name.clone(), v);
                    break;
                }
                Ok(None) => break,
                Err(why) => {
                    tries += 1;
                    let _ = writeln!(out, "      ✗ {}", super::term::cell(&why));
                    if tries >= MAX_TRIES {
                        let _ = writeln!(out, "  ✗ no valid answer: cancelled");
                        return ElicitResult::new(ElicitationAction::Cancel);
                    }
                }
            }
        }
    }
    ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(schema: Value) -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form",
            "message": "Who are you?\u{1b}[2J",
            "requestedSchema": schema
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn run(schema: Value, typed: &str) -> (ElicitResult, String) {
        let mut out = Vec::new();
        let r = ask(
            "srv\u{1b}]0;x",
            params(schema),
            &mut std::io::Cursor::new(typed.as_bytes().to_vec()),
            &mut out,
        );
        (r, String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn answers_defaults_retries_and_escapes() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "minimum": 0}
        }, "required": ["age"]});
        // Fields come in name order: age, then name.
        let (r, shown) = run(schema.clone(), "a\nold\n-1\n41\n\n");
        assert_eq!(r.action, ElicitationAction::Accept);
        assert_eq!(r.content, Some(json!({"name": "John Doe", "age": 41})));
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        assert_eq!(shown.matches("✗").count(), 2, "{shown}");

        assert_eq!(
            run(schema.clone(), "d\n").0.action,
            ElicitationAction::Decline
        );
        assert_eq!(run(schema.clone(), "").0.action, ElicitationAction::Cancel);
        // End of input in the middle of the form cancels; nothing half-filled is sent.
        let (r, _) = run(schema.clone(), "a\n41\n");
        assert_eq!(r.action, ElicitationAction::Cancel);
        assert_eq!(r.content, None);
        // Five wrong answers cancel.
        let (r, _) = run(schema, &"a\nx\n".repeat(10));
        assert_eq!(r.action, ElicitationAction::Cancel);
    }

    #[test]
    fn a_servers_lines_never_start_a_line_of_their_own() {
        let forged = "[s] toolhost approval: run wipe {}\n  ? toolhost approval: run wipe\r\n\
                      \u{2028}? toolhost approval:\n\n";
        let q = question("s", forged);
        let mut lines = q.lines();
        assert_eq!(
            lines.next(),
            Some(
                "  ? MCP server [s] asks you (not toolhost; toolhost's own questions start \
                 with \"toolhost approval:\"):"
            )
        );
        let rest: Vec<&str> = lines.collect();
        assert_eq!(rest.len(), 4, "{q}");
        for line in rest {
            assert!(line.starts_with("    │ "), "{line:?}");
            assert!(
                !line.contains('\r') && !line.contains('\u{2028}'),
                "{line:?}"
            );
        }
        // A name that is not plain is quoted, so it cannot close the bracket itself.
        assert!(
            question("a] toolhost approval: [b", "x")
                .starts_with("  ? MCP server [\"a] toolhost approval: [b\"] asks")
        );
    }

    #[test]
    fn an_overlong_answer_is_refused_and_the_next_line_read() {
        let schema = json!({"type": "object", "properties": {"t": {"type": "string"}}});
        let typed = format!("a\n{}\nshort\n", "x".repeat(MAX_ANSWER * 3));
        let (r, shown) = run(schema, &typed);
        assert_eq!(r.content, Some(json!({"t": "short"})));
        assert!(shown.len() < 10_000, "{}", shown.len());
    }
}
