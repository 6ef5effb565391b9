//! The builder of [`McpServer`]: [`McpServer::new`] and the `with_*` settings (discovery,
//! task support, the request-state key, the gateway, identity, instructions, the list
//! and `initialize` waits, the list hints, the skills served), kept apart from the MCP
//! handler in `server.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use toolhost_core::tools::ToolRegistry;

use super::gateway_session::Session;
use super::{DEFAULT_LIST_WAIT, Discovery, ListHints, McpServer, TaskSupport, discovery, rounds};
use crate::gateway::Gateway;

impl McpServer {
    /// A server named `toolhost` exposing every tool of `registry` (including tools added
    /// later).
    pub fn new(registry: ToolRegistry) -> Self {
        Self {
            registry,
            list_wait: DEFAULT_LIST_WAIT,
            list_hints: ListHints::default(),
            name: "toolhost".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            initialize_waits: false,
            gateway: None,
            session: Session::new(None),
            rounds: rounds::Rounds::new(None)
                .map(Arc::new)
                .map_err(|e| tracing::error!("2026-07-28 multi-round requests unavailable: {e}"))
                .ok(),
            tasks: Arc::default(),
            task_support: Arc::default(),
            search: None,
            skills: crate::skills::SkillSet::default(),
        }
    }

    /// Serves `skills` (the Skills extension: `skills/list`, `skills/get` and their files
    /// as `skill://` resources); the caller has checked them against the operator's
    /// approvals.
    pub fn with_skills(mut self, skills: crate::skills::SkillSet) -> Self {
        self.skills = skills;
        self
    }

    /// What `tools/list` shows: every tool ([`Discovery::All`], the default), or
    /// `search_tools`, `call_tool` and the pinned tools ([`Discovery::Search`]; see
    /// `server/discovery.rs`).
    pub fn with_discovery(mut self, discovery: Discovery) -> Self {
        self.search = match discovery {
            Discovery::All => None,
            Discovery::Search { pinned } => Some(discovery::SearchMode::new(
                pinned,
                toolhost_search::LiveIndex::new(self.registry.clone()),
            )),
        };
        self
    }

    /// How the tools named in `support` may run as tasks for clients of the tasks
    /// extension (`required`: always, and only, as a task; `forbidden`: never); every
    /// other tool is [`TaskSupport::Optional`] (a task when it outlives [`TASK_AFTER`]).
    pub fn with_task_support(mut self, support: BTreeMap<String, TaskSupport>) -> Self {
        self.task_support = Arc::new(support);
        self
    }

    /// Keeps this server's tasks in `board`, so whoever holds the board (an operator's
    /// console) sees how many each client has alive.
    pub fn with_task_board(mut self, board: super::TaskBoard) -> Self {
        self.tasks = board.0;
        self
    }

    /// Seals the `requestState` of 2026-07-28 multi-round requests with `key` (at least
    /// 32 bytes) instead of a random key of this process: replicas that share the key
    /// continue each other's restartable rounds (approvals).
    pub fn with_request_state_key(mut self, key: &[u8]) -> Result<Self, crate::McpServeError> {
        let rounds = rounds::Rounds::new(Some(key))
            .map_err(|e| crate::McpServeError::RequestStateKey(e.to_string()))?;
        self.rounds = Some(Arc::new(rounds));
        Ok(self)
    }

    /// A copy for a new session: same registry and identity, its own session state.
    pub(crate) fn for_session(&self) -> Self {
        Self {
            session: Session::new(self.gateway.clone()),
            ..self.clone()
        }
    }

    /// Serves what `gateway`'s servers offer besides tools: resources, templates and
    /// subscriptions, prompts, completions, their logs and instructions.
    pub fn with_gateway(mut self, gateway: Gateway) -> Self {
        self.session = Session::new(Some(gateway.clone()));
        self.gateway = Some(gateway);
        self
    }

    /// Sets the server name and version sent in the handshake.
    pub fn with_identity(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// Sets the `instructions` sent in the handshake.
    pub fn with_instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Makes `initialize` wait for the registry's pending loads, up to the list wait, as
    /// the first lists do: for a gateway whose wrapped servers join at the end of the
    /// load, so that the extensions it offers and the instructions it sends are theirs.
    pub fn with_initialize_wait(mut self, wait: bool) -> Self {
        self.initialize_waits = wait;
        self
    }

    /// Sets how long `tools/list` waits for the registry's pending loads
    /// ([`DEFAULT_LIST_WAIT`]); zero answers at once with what is ready.
    pub fn with_list_wait(mut self, wait: Duration) -> Self {
        self.list_wait = wait;
        self
    }

    /// Sets what the cache hints of `tools/list` are computed from ([`ListHints`]; the
    /// default assumes the list may change at any moment and only the asker may keep it).
    pub fn with_list_hints(mut self, hints: ListHints) -> Self {
        self.list_hints = hints;
        self
    }

    /// The registry served.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }
}
