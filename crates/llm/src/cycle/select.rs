//! Which tools a turn of [`LlmCycle`] offers the model ([`ToolSelection`]).
//!
//! - `All`: every tool of the registry (narrowed by `tool_tags`), every turn.
//! - `Search { k }`: the `k` tools a search of the conversation ranks first (the last user
//!   message and the model's last words, `toolhost-search`'s BM25 index of the registry,
//!   kept current with it), plus the tools the model called in its recent turns, so a
//!   tool it is working with does not vanish between turns. A tool the model names that
//!   this turn did not offer still runs, if the registry has it and `tool_tags` allow it:
//!   the offer is what the model is shown, not a permission.
//! - `CodeMode`: the registry's `run_code` tool alone (code mode, `toolhost-code`, which
//!   the caller registers): the model writes one script that calls the tools, and each
//!   of its inner calls passes the registry's pipeline. Only `run_code` may be called.
//!   Its offer declares the tools a script may call in TypeScript, and a run sees only
//!   the tools `tool_tags` allow (the run's context carries them as `Visible`).

use super::*;
use toolhost_core::tools::ToolEntry;
use toolhost_search::{LiveIndex, MAX_QUERY_BYTES, Query};

/// How many of the most recent messages are looked at for tools the model already
/// called (kept on offer in `Search` mode).
const RECENT_MESSAGES: usize = 8;

/// Which tools each turn offers the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolSelection {
    /// Every tool (that `tool_tags` allow), every turn.
    #[default]
    All,
    /// The `k` tools ranked first by a search of the conversation, plus those called in
    /// the recent turns.
    Search {
        /// How many ranked tools to offer (1 to `toolhost_search::MAX_LIMIT`).
        k: usize,
    },
    /// The registry's [`CODE_TOOL`] alone (none when the registry has no such tool).
    CodeMode,
}

/// The tool `ToolSelection::CodeMode` offers: code mode's `run_code`.
pub const CODE_TOOL: &str = "run_code";

/// Tools a script never calls (code mode refuses them inside a run), so not declared.
const NOT_IN_SCRIPTS: [&str; 3] = [CODE_TOOL, "search_tools", "call_tool"];

/// The most bytes of TypeScript declarations in `run_code`'s offer (about 8,000 tokens);
/// tools past it are named, not declared.
const CODE_DECLARATIONS_BUDGET: usize = 32 << 10;

impl LlmCycle {
    /// Whether `tool_tags` and `active_tools` let the model see this tool.
    pub(super) fn tagged(&self, e: &ToolEntry) -> bool {
        allowed(&self.config, e)
    }

    /// The tool definitions offered this turn.
    pub(super) fn offered_tools(&mut self, registry: &ToolRegistry) -> Vec<ToolDefinition> {
        let k = match self.config.tool_selection {
            ToolSelection::All => {
                return registry.definitions_where(|e| self.tagged(e));
            }
            ToolSelection::CodeMode => {
                let Some(code) = registry.entry(CODE_TOOL) else {
                    return Vec::new();
                };
                // The model writes calls it has seen the signatures of: the tools a
                // script may call, as TypeScript, after `run_code`'s own description.
                let entries = registry.entries();
                let callable = entries
                    .iter()
                    .filter(|e| !NOT_IN_SCRIPTS.contains(&e.name()) && self.tagged(e))
                    .map(|e| &**e);
                let mut def = code.definition();
                def.function.description = format!(
                    "{}\n\nThe tools a script may call:\n```ts\n{}```",
                    def.function.description,
                    toolhost_search::declarations(callable, CODE_DECLARATIONS_BUDGET)
                );
                return vec![def];
            }
            ToolSelection::Search { k } => k.clamp(1, toolhost_search::MAX_LIMIT),
        };
        let index = match &self.index {
            Some(i) if i.indexes(registry) => i.current(),
            _ => {
                let live = LiveIndex::new(registry.clone());
                let current = live.current();
                self.index = Some(live);
                current
            }
        };
        let mut names: Vec<String> = Vec::new();
        if let Ok(query) = Query::new(&self.conversation_query(), Some(k as u64)) {
            let visible = |name: &str| registry.entry(name).is_some_and(|e| self.tagged(&e));
            names.extend(index.search(&query, visible).into_iter().map(|h| h.name));
        }
        for name in self.recently_called() {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
            .iter()
            .filter_map(|n| registry.entry(n))
            .filter(|e| self.tagged(e))
            .map(|e| e.definition())
            .collect()
    }

    /// The names a call of this turn may use: the offered tools, and in `Search` mode
    /// every tool `tool_tags` allow.
    pub(super) fn callable_tools(
        &self,
        registry: &ToolRegistry,
        offered: &[ToolDefinition],
    ) -> Vec<String> {
        match self.config.tool_selection {
            ToolSelection::All | ToolSelection::CodeMode => {
                offered.iter().map(|d| d.function.name.clone()).collect()
            }
            ToolSelection::Search { .. } => registry
                .entries()
                .iter()
                .filter(|e| self.tagged(e))
                .map(|e| e.name().to_string())
                .collect(),
        }
    }

    /// The text a turn's tools are searched with: the last user message and the model's
    /// last words after it, cut to the query bound at a character boundary.
    fn conversation_query(&self) -> String {
        let mut parts: Vec<&str> = Vec::new();
        for m in self.messages.iter().rev() {
            match m {
                ChatMessage::User { .. } => {
                    parts.extend(m.text());
                    break;
                }
                ChatMessage::Assistant(a) => parts.extend(a.content.as_deref()),
                _ => {}
            }
        }
        parts.reverse();
        let q = parts.join("\n");
        toolhost_core::tools::render::head(&q, MAX_QUERY_BYTES).to_string()
    }

    /// The tools the model called in the recent messages, most recent first.
    fn recently_called(&self) -> Vec<String> {
        let mut names = Vec::new();
        for m in self.messages.iter().rev().take(RECENT_MESSAGES) {
            if let ChatMessage::Assistant(a) = m {
                for c in &a.tool_calls {
                    if !names.contains(&c.function.name) {
                        names.push(c.function.name.clone());
                    }
                }
            }
        }
        names
    }
}

/// Whether `config`'s `tool_tags` and `active_tools` let the model see the tool of `e`.
pub(super) fn allowed(config: &CycleConfig, e: &ToolEntry) -> bool {
    let tags = &config.tool_tags;
    (tags.is_empty() || e.tags().iter().any(|t| tags.contains(t)))
        && config
            .active_tools
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == e.name()))
}
