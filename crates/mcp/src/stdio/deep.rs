//! [`DeepLines`]: the stage of the stdio framing that keeps JSON nested too deep for the
//! parser from costing a server its whole answer.
//!
//! serde_json refuses JSON nested deeper than 128 levels, and rmcp drops a line it cannot
//! parse without a word: one tool with a 70-level schema (`properties` in `properties`
//! is two JSON levels a level) used to make the whole `tools/list` of its server wait
//! for the timeout and fail as "did not answer". So each line is measured (one pass,
//! its strings skipped) before rmcp sees it, and a line nested deeper than a tool may be
//! is looked into without being parsed:
//!
//! - in an answer carrying `result.tools` (a `tools/list` page), each tool whose
//!   definition nests deeper than [`MAX_TOOL_DEPTH`] levels is cut out of the list and
//!   refused by name in a warning; the other tools pass as sent;
//! - an answer still nested deeper than [`MAX_PARSED_DEPTH`] levels becomes a JSON-RPC
//!   error answer to the same request id, so the request fails at once, saying why,
//!   instead of waiting for its timeout.
//!
//! Everything else passes through byte for byte, one line out for each line in.
//! Malformed JSON is passed on unchanged (rmcp skips it as before).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The deepest a wrapped tool's definition may nest: 32 levels of JSON objects and arrays
/// in any field (`inputSchema`, `outputSchema`, `_meta`, ...), where `{}` is one level.
/// Real schemas nest a few levels; a tool deeper than this is refused by name and the
/// server's other tools are kept. Well below serde_json's 128, so a page of tools that
/// pass always parses.
pub const MAX_TOOL_DEPTH: usize = 32;

/// The deepest line handed to rmcp's parser: serde_json refuses JSON nested deeper than
/// 128 levels (and rmcp then drops the line unanswered); 120 leaves a margin.
pub const MAX_PARSED_DEPTH: usize = 120;

/// Depth of a tools/list answer down to one tool's object: the message, `result`,
/// the `tools` array, the tool.
const TOOL_ENVELOPE_DEPTH: usize = 4;

/// The warning for a tool refused because its definition nests too deep (shared with
/// the client's own check of parsed tools, so both say the same).
pub(crate) fn warn_too_deep(server: &str, tool: &str) {
    tracing::warn!(
        server = %server,
        tool = %shown(tool),
        "MCP server `{server}`: tool `{}` refused: its definition nests deeper than \
         {MAX_TOOL_DEPTH} levels (MAX_TOOL_DEPTH); the server's other tools are kept",
        shown(tool)
    );
}

/// A name the server chose, fit for a log line: escaped and cut to 128 characters.
pub(crate) fn shown(name: &str) -> String {
    let cut: String = name.chars().take(128).collect();
    toolhost_core::tools::escape::escape_line(&cut).into_owned()
}

/// Nesting of the bytes seen so far of one line.
#[derive(Debug, Default, Clone, Copy)]
struct Depth {
    now: usize,
    max: usize,
    in_string: bool,
    escaped: bool,
}

impl Depth {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.now += 1;
                    self.max = self.max.max(self.now);
                }
                b'}' | b']' => self.now = self.now.saturating_sub(1),
                _ => {}
            }
        }
    }

    fn of(bytes: &[u8]) -> usize {
        let mut d = Depth::default();
        d.feed(bytes);
        d.max
    }
}

/// An `AsyncRead` over a server's stdout that hands on whole lines, each measured and,
/// when nested too deep, rewritten as the module docs say. It holds at most one line (the
/// [`super::LineGuard`] beneath it bounds a line's length).
pub struct DeepLines<R> {
    inner: R,
    server: Arc<str>,
    /// The line being read.
    line: Vec<u8>,
    depth: Depth,
    /// Lines ready to be read, and how much of them was read.
    out: Vec<u8>,
    taken: usize,
    eof: bool,
}

/// A held buffer larger than this is given back once emptied (a 4 MiB line stays in
/// memory only while it is read).
const KEEP_CAPACITY: usize = 64 * 1024;

impl<R> DeepLines<R> {
    /// Reads lines of server `server` (the name its warnings give) from `inner`.
    pub fn new(inner: R, server: impl Into<Arc<str>>) -> Self {
        Self {
            inner,
            server: server.into(),
            line: Vec::new(),
            depth: Depth::default(),
            out: Vec::new(),
            taken: 0,
            eof: false,
        }
    }

    /// The reader beneath.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Moves the line read so far (with `newline`) to the output, rewritten if needed.
    fn finish_line(&mut self, newline: bool) {
        let depth = std::mem::take(&mut self.depth);
        if depth.max > TOOL_ENVELOPE_DEPTH + MAX_TOOL_DEPTH {
            match rewrite(&self.line, &self.server) {
                Some(new) => self.out.extend_from_slice(&new),
                None => self.out.extend_from_slice(&self.line),
            }
        } else {
            self.out.extend_from_slice(&self.line);
        }
        if newline {
            self.out.push(b'\n');
        }
        self.line.clear();
        if self.line.capacity() > KEEP_CAPACITY {
            self.line = Vec::new();
        }
    }

    /// Takes in bytes read from the server: whole lines go to the output.
    fn take_in(&mut self, mut bytes: &[u8]) {
        while let Some(at) = bytes.iter().position(|b| *b == b'\n') {
            self.depth.feed(&bytes[..at]);
            self.line.extend_from_slice(&bytes[..at]);
            self.finish_line(true);
            bytes = &bytes[at + 1..];
        }
        self.depth.feed(bytes);
        self.line.extend_from_slice(bytes);
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for DeepLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.taken < this.out.len() {
                let ready = &this.out[this.taken..];
                let n = ready.len().min(buf.remaining());
                buf.put_slice(&ready[..n]);
                this.taken += n;
                if this.taken == this.out.len() {
                    this.out.clear();
                    this.taken = 0;
                    if this.out.capacity() > KEEP_CAPACITY {
                        this.out = Vec::new();
                    }
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                if this.line.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                // The last line, unterminated, is handed on as it is read.
                this.finish_line(false);
                continue;
            }
            let mut chunk = [0u8; 8192];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    if n == 0 {
                        this.eof = true;
                    } else {
                        this.take_in(&chunk[..n]);
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// The line rewritten (see the module docs), or `None` to pass it on unchanged. Every
/// span sliced here comes from the scanner below and lies within `line`.
fn rewrite(line: &[u8], server: &str) -> Option<Vec<u8>> {
    let start = skip_ws(line, 0);
    let top = members(line, start)?;
    let mut edits: Vec<(usize, usize, Vec<u8>)> = Vec::new();
    for m in top.iter().filter(|m| m.key == "result") {
        let Some(tools) = members(line, m.start).and_then(|r| {
            r.into_iter()
                .find(|t| t.key == "tools" && line.get(t.start) == Some(&b'['))
        }) else {
            continue;
        };
        let Some(elements) = elements(line, tools.start) else {
            continue;
        };
        let mut kept: Vec<&[u8]> = Vec::with_capacity(elements.len());
        let mut refused = 0usize;
        for (s, e, depth) in elements {
            let tool = &line[s..e];
            // The tool's own object is one level; its fields may nest `MAX_TOOL_DEPTH`.
            if depth > MAX_TOOL_DEPTH + 1 {
                refused += 1;
                let name = members(line, s)
                    .and_then(|ms| ms.into_iter().find(|m| m.key == "name"))
                    .and_then(|m| serde_json::from_slice::<String>(&line[m.start..m.end]).ok())
                    .unwrap_or_else(|| "(no name)".into());
                warn_too_deep(server, &name);
            } else {
                kept.push(tool);
            }
        }
        if refused > 0 {
            // The array's inside, between its brackets.
            edits.push((tools.start + 1, tools.end - 1, kept.join(&b',')));
        }
    }
    let mut new = splice(line, &edits);
    if Depth::of(&new) > MAX_PARSED_DEPTH {
        // Only an answer (`result` or `error`) with an id has a request to fail; anything
        // else is left for rmcp to skip, as before.
        let is_answer = top.iter().any(|m| m.key == "result" || m.key == "error");
        let id = top
            .iter()
            .find(|m| m.key == "id")
            .map(|m| &line[m.start..m.end])
            .filter(|id| matches!(id.first(), Some(b'"' | b'-' | b'0'..=b'9')));
        let (true, Some(id)) = (is_answer, id) else {
            return (!edits.is_empty()).then_some(new);
        };
        tracing::warn!(
            server = %server,
            "MCP server `{server}` answered with JSON nested deeper than \
             {MAX_PARSED_DEPTH} levels (MAX_PARSED_DEPTH); the request fails"
        );
        new = Vec::with_capacity(160);
        new.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        new.extend_from_slice(id);
        new.extend_from_slice(
            format!(
                ",\"error\":{{\"code\":-32603,\"message\":\"toolhost refused the answer: \
                 its JSON nests deeper than {MAX_PARSED_DEPTH} levels\"}}}}"
            )
            .as_bytes(),
        );
        return Some(new);
    }
    (!edits.is_empty()).then_some(new)
}

/// `line` with each `(start, end, replacement)` (sorted, apart) put in.
fn splice(line: &[u8], edits: &[(usize, usize, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut at = 0;
    for (s, e, with) in edits {
        out.extend_from_slice(&line[at..*s]);
        out.extend_from_slice(with);
        at = *e;
    }
    out.extend_from_slice(&line[at..]);
    out
}

/// One member of a JSON object: its key (decoded) and where its value is.
#[derive(Debug)]
struct Member {
    key: String,
    start: usize,
    end: usize,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// The end (exclusive) of the string whose opening quote is at `i`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// The end (exclusive) of the value starting at `i`, and its depth (`0` for a scalar,
/// `1` for `{}`).
fn value_end(b: &[u8], i: usize) -> Option<(usize, usize)> {
    match b.get(i)? {
        b'"' => Some((string_end(b, i)?, 0)),
        b'{' | b'[' => {
            let mut d = Depth::default();
            let mut j = i;
            while let Some(&c) = b.get(j) {
                d.feed(&[c]);
                j += 1;
                if d.now == 0 {
                    return Some((j, d.max));
                }
            }
            None
        }
        _ => {
            let mut j = i;
            while let Some(c) = b.get(j) {
                if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                    break;
                }
                j += 1;
            }
            (j > i).then_some((j, 0))
        }
    }
}

/// The members of the object at `i`, or `None` when there is none or it is malformed.
fn members(b: &[u8], i: usize) -> Option<Vec<Member>> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut out = Vec::new();
    let mut j = skip_ws(b, i + 1);
    if b.get(j) == Some(&b'}') {
        return Some(out);
    }
    loop {
        if b.get(j) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(b, j)?;
        let key = serde_json::from_slice::<String>(&b[j..key_end]).ok()?;
        j = skip_ws(b, key_end);
        if b.get(j) != Some(&b':') {
            return None;
        }
        let start = skip_ws(b, j + 1);
        let (end, _) = value_end(b, start)?;
        out.push(Member { key, start, end });
        j = skip_ws(b, end);
        match b.get(j)? {
            b',' => j = skip_ws(b, j + 1),
            b'}' => return Some(out),
            _ => return None,
        }
    }
}

/// The elements of the array at `i` (start, end, depth), or `None` when malformed.
fn elements(b: &[u8], i: usize) -> Option<Vec<(usize, usize, usize)>> {
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let mut j = skip_ws(b, i + 1);
    if b.get(j) == Some(&b']') {
        return Some(out);
    }
    loop {
        let (end, depth) = value_end(b, j)?;
        out.push((j, end, depth));
        j = skip_ws(b, end);
        match b.get(j)? {
            b',' => j = skip_ws(b, j + 1),
            b']' => return Some(out),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn nested(levels: usize) -> String {
        let mut s = r#"{"type":"string"}"#.to_string();
        for _ in 0..levels {
            s = format!(r#"{{"type":"object","properties":{{"n":{s}}}}}"#);
        }
        s
    }

    fn tool(name: &str, schema: &str) -> String {
        format!(r#"{{"name":"{name}","inputSchema":{schema}}}"#)
    }

    async fn through(input: &str) -> String {
        let mut r = DeepLines::new(input.as_bytes(), "s");
        let mut out = String::new();
        r.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn shallow_lines_pass_byte_for_byte() {
        let input = "{\"a\":[1,{\"b\":\"}]\\\"{\"}]}\n\nnot json {{{\n{\"x\":1}";
        assert_eq!(through(input).await, input);
    }

    #[tokio::test]
    async fn too_deep_tools_are_cut_out_by_name_and_the_rest_pass() {
        let good = tool("echo", r#"{"type":"object"}"#);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"tools":[{good}, {}, {}, {}],"nextCursor":"2"}}}}"#,
            tool("deep", &nested(100)),
            tool("sum", &nested(3)),
            tool("edge", &nested(15)),
        );
        let out = through(&format!("{line}\n")).await;
        assert!(out.ends_with('\n') && out.matches('\n').count() == 1);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let names: Vec<&str> = v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        // `edge`'s schema nests 31 levels (15 × 2 + 1): kept.
        assert_eq!(names, ["echo", "sum", "edge"]);
        assert_eq!(v["result"]["nextCursor"], "2");
        assert_eq!(v["id"], 7);
    }

    #[tokio::test]
    async fn one_level_past_the_limit_is_refused() {
        // 16 levels: 33 JSON levels in the schema.
        let line = format!(
            r#"{{"id":1,"result":{{"tools":[{},{}]}}}}"#,
            tool("a", &nested(16)),
            tool("b", &nested(15))
        );
        let v: serde_json::Value = serde_json::from_str(&through(&line).await).unwrap();
        assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 1);
        assert_eq!(v["result"]["tools"][0]["name"], "b");
    }

    #[tokio::test]
    async fn a_deep_answer_of_another_kind_becomes_an_error_for_its_id() {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":"r-9","result":{{"x":{}}}}}"#,
            nested(80)
        );
        let v: serde_json::Value = serde_json::from_str(&through(&line).await).unwrap();
        assert_eq!(v["id"], "r-9");
        assert_eq!(v["error"]["code"], -32603);
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("120 levels")
        );
        // A deep answer within the parser's reach passes unchanged.
        let fine = format!(r#"{{"id":2,"result":{{"x":{}}}}}"#, nested(40));
        assert_eq!(through(&fine).await, fine);
        // A deep request of the server has no answer to become: unchanged.
        let req = format!(r#"{{"id":3,"method":"m","params":{}}}"#, nested(80));
        assert_eq!(through(&req).await, req);
    }

    #[tokio::test]
    async fn malformed_deep_lines_pass_unchanged() {
        let line = format!("{{\"id\":1,\"result\":{{\"tools\":[{}", "[".repeat(300));
        assert_eq!(through(&line).await, line);
    }

    #[test]
    fn escaped_keys_are_read_as_the_parser_reads_them() {
        let line = format!(
            r#"{{"id":1,"\u0072esult":{{"tools":[{}]}}}}"#,
            tool("x", &nested(40))
        );
        let new = rewrite(line.as_bytes(), "s").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&new).unwrap();
        assert_eq!(v["result"]["tools"], serde_json::json!([]));
    }
}
