//! [`ToolRegistry`]: registration, discovery and the invocation pipeline.
//!
//! `invoke` runs five stages; each of the first three is a gate that ends the call early
//! (`docs/design.md`, "The pipeline"):
//!
//! 1. **lookup** the tool by name;
//! 2. **validate** the arguments against the tool's JSON Schema (compiled once, at
//!    registration) (`registry/validate.rs`);
//! 3. **permission gate**: the static [`PermissionChecker`] (if set), then the
//!    [`PermissionHook`]s in order (any deny wins), then, for destructive tools, a
//!    remembered approval or the [`Approver`] (denied when none is set)
//!    (`registry/approval.rs`);
//! 4. **execute** in an execution slot (the fair scheduler of [`crate::tools::share`]:
//!    shared by the clients of a served host, none crowding out another), under the
//!    per-call timeout and the caller's cancellation, with panics caught
//!    (`registry/pipeline.rs`);
//! 5. **render** the output: check its content blocks (limits, formats; see
//!    [`crate::tools::content`]) and its canonical value against the tool's output schema,
//!    and truncate the text the model sees.
//!
//! Every path, including "not found" and "denied", ends in a [`ToolInvocation`], and a
//! [`ToolEvent::Completed`]. A call stopped at stages 1–3 never reaches the tool.
//!
//! Files: `entry.rs` (a registered tool and the registration checks), `registration.rs`
//! (adding and removing tools), `call.rs` (a call and its record), `loading.rs` (pending
//! loads: a call of a tool that is still loading waits for it), and the stages above.
//!
//! The registry is a cheap-to-clone shared handle (`Arc` inside, like Rig's
//! `ToolServerHandle`): clones see the same tools, and tools can be added or removed while
//! calls are in flight. Each call holds its own `Arc` of the entry it started with.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use indexmap::{IndexMap, IndexSet};
use tokio::sync::{broadcast, watch};

use crate::tools::approvals::Approver;
use crate::tools::approvals::{ApprovalStore, MemoryApprovals};
use crate::tools::base::BaseTool;
use crate::tools::content::ContentLimits;
use crate::tools::definition::ToolDefinition;
use crate::tools::events::{ToolEvent, ToolEventListener};
use crate::tools::hooks::PermissionHook;
use crate::tools::permission::PermissionChecker;
use crate::tools::render::DEFAULT_MAX_TOOL_RESULT_BYTES;
use crate::tools::share::Slots;

mod approval;
mod call;
mod entry;
mod loading;
mod names;
mod pipeline;
mod registration;
mod validate;

pub use call::{ToolCall, ToolInvocation};
pub use entry::{ToolEntry, ToolStats, is_valid_tool_name};
pub use loading::LoadingGuard;
pub use names::{
    NameClash, NameFollower, Naming, QUALIFIER, contested_names, qualified_name, safe_name,
};
pub use registration::{MAX_INPUT_EXAMPLES, Registration, RegistrationGuard};

/// Default per-call timeout.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// Default number of tool calls that may execute at once; extra calls wait their turn.
pub const DEFAULT_MAX_CONCURRENT: usize = 4;
/// Most "allow for this session" decisions kept; the oldest is dropped first (its
/// session is asked again), so a client opening sessions without end cannot grow memory.
pub const MAX_SESSION_APPROVALS: usize = 10_000;
/// Minimum length of a tool description, in characters.
pub const MIN_DESCRIPTION_CHARS: usize = 10;
/// Largest output schema a tool may declare (`ToolMetadata::output_schema`), in bytes of
/// compact JSON. A schema is compiled at registration and kept per tool; 64 KiB is far
/// beyond any real result shape.
pub const MAX_OUTPUT_SCHEMA_BYTES: usize = 64 * 1024;

struct Settings {
    checker: Option<Arc<PermissionChecker>>,
    hooks: Arc<[Arc<dyn PermissionHook>]>,
    approver: Option<Arc<dyn Approver>>,
    approvals: Arc<dyn ApprovalStore>,
    default_timeout: Duration,
    max_result_bytes: usize,
    content_limits: ContentLimits,
    slots: Arc<Slots>,
}

struct Inner {
    tools: RwLock<IndexMap<String, Arc<ToolEntry>>>,
    settings: RwLock<Settings>,
    /// "Allow for this session" decisions: (session id, tool), oldest first, at most
    /// [`MAX_SESSION_APPROVALS`].
    session_allowed: Mutex<IndexSet<(String, String)>>,
    listeners: RwLock<Vec<Arc<dyn ToolEventListener>>>,
    events: broadcast::Sender<ToolEvent>,
    changes: watch::Sender<u64>,
    /// Loads of tools still pending (see `registry/loading.rs`).
    loading: watch::Sender<usize>,
    next_id: AtomicU64,
    /// Every source's claimed names (see `registry/names.rs`).
    claims: Mutex<names::Claims>,
    /// Bumped when the contested names change.
    names: watch::Sender<u64>,
}

/// The tool registry: an ordered, shared, concurrently changeable set of tools and the
/// invocation pipeline (see the module docs).
#[derive(Clone)]
pub struct ToolRegistry {
    inner: Arc<Inner>,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.list_tools())
            .finish_non_exhaustive()
    }
}

// Lock helpers: a poisoned lock means a panic while holding it; every critical section
// here only reads or swaps whole values, so the data is consistent and we carry on.
fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}
fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

impl ToolRegistry {
    /// An empty registry: no permission checker (static checks off), no approver
    /// (destructive tools denied), 60 s timeout, 4 concurrent calls, 20 000-byte results,
    /// content blocks up to 1024 blocks and 16 MiB.
    pub fn new() -> Self {
        let (events, _) = broadcast::channel(1024);
        let (changes, _) = watch::channel(0);
        let (loading, _) = watch::channel(0);
        Self {
            inner: Arc::new(Inner {
                tools: RwLock::new(IndexMap::new()),
                settings: RwLock::new(Settings {
                    checker: None,
                    hooks: Arc::from(Vec::new()),
                    approver: None,
                    approvals: Arc::new(MemoryApprovals::default()),
                    default_timeout: DEFAULT_TOOL_TIMEOUT,
                    max_result_bytes: DEFAULT_MAX_TOOL_RESULT_BYTES,
                    content_limits: ContentLimits::default(),
                    slots: Slots::new(DEFAULT_MAX_CONCURRENT),
                }),
                session_allowed: Mutex::new(IndexSet::new()),
                listeners: RwLock::new(Vec::new()),
                events,
                changes,
                loading,
                next_id: AtomicU64::new(1),
                claims: Mutex::new(names::Claims::default()),
                names: watch::channel(0).0,
            }),
        }
    }

    /// Sets the static permission checker. Without one, no static check runs;
    /// destructive tools still need an approver.
    pub fn with_permission_checker(self, checker: PermissionChecker) -> Self {
        self.set_permission_checker(Some(Arc::new(checker)));
        self
    }

    /// Sets (or clears) the permission checker on a live registry.
    pub fn set_permission_checker(&self, checker: Option<Arc<PermissionChecker>>) {
        write(&self.inner.settings).checker = checker;
    }

    /// Adds a permission hook at the end of the chain (see [`crate::tools::hooks`]).
    pub fn with_permission_hook(self, hook: Arc<dyn PermissionHook>) -> Self {
        self.add_permission_hook(hook);
        self
    }

    /// Adds a permission hook at the end of the chain on a live registry; calls that
    /// already passed stage 3 are not affected.
    pub fn add_permission_hook(&self, hook: Arc<dyn PermissionHook>) {
        let mut s = write(&self.inner.settings);
        let mut hooks: Vec<_> = s.hooks.iter().cloned().collect();
        hooks.push(hook);
        s.hooks = Arc::from(hooks);
    }

    /// The names of the permission hooks, in chain order.
    pub fn permission_hooks(&self) -> Vec<String> {
        read(&self.inner.settings)
            .hooks
            .iter()
            .map(|h| h.name().to_string())
            .collect()
    }

    /// Sets where "allow always" decisions are kept (default: in memory).
    pub fn with_approval_store(self, store: Arc<dyn ApprovalStore>) -> Self {
        write(&self.inner.settings).approvals = store;
        self
    }

    /// Sets the approver asked about destructive calls.
    pub fn with_approver(self, approver: Arc<dyn Approver>) -> Self {
        self.set_approver(Some(approver));
        self
    }

    /// Sets (or clears) the approver on a live registry.
    pub fn set_approver(&self, approver: Option<Arc<dyn Approver>>) {
        write(&self.inner.settings).approver = approver;
    }

    /// Sets the default per-call timeout (a tool's own `metadata().timeout` wins).
    ///
    /// Like every setting, it is shared by all clones of this handle: configure the
    /// registry when you build it, not per caller.
    pub fn with_timeout(self, timeout: Duration) -> Self {
        write(&self.inner.settings).default_timeout = timeout;
        self
    }

    /// Sets how many calls may execute at once (the pool of [`Slots`]). Calls beyond it
    /// wait their turn, except that each caller ([`crate::tools::Caller`]) holding none
    /// may run one beyond a full pool, up to twice the limit in all. Calls already
    /// running keep the slots of the old limit.
    pub fn with_max_concurrent(self, n: usize) -> Self {
        write(&self.inner.settings).slots = Slots::new(n);
        self
    }

    /// The execution slots: how many each caller holds.
    pub fn slots(&self) -> Arc<Slots> {
        read(&self.inner.settings).slots.clone()
    }

    /// Sets the byte limit of the render text given to the model.
    pub fn with_max_result_bytes(self, n: usize) -> Self {
        write(&self.inner.settings).max_result_bytes = n.max(64);
        self
    }

    /// The byte limit of render text.
    pub fn max_result_bytes(&self) -> usize {
        read(&self.inner.settings).max_result_bytes
    }

    /// Sets the limit of the bytes in a result's content blocks (default
    /// [`DEFAULT_MAX_CONTENT_BYTES`](crate::tools::content::DEFAULT_MAX_CONTENT_BYTES),
    /// 16 MiB). A result over it fails with [`ToolError::LimitExceeded`](crate::tools::ToolError).
    pub fn with_max_content_bytes(self, n: usize) -> Self {
        write(&self.inner.settings).content_limits.max_bytes = n;
        self
    }

    /// Sets the limit of the number of content blocks in one result (default
    /// [`DEFAULT_MAX_CONTENT_BLOCKS`](crate::tools::content::DEFAULT_MAX_CONTENT_BLOCKS)).
    /// A result over it fails with [`ToolError::LimitExceeded`](crate::tools::ToolError).
    pub fn with_max_content_blocks(self, n: usize) -> Self {
        write(&self.inner.settings).content_limits.max_blocks = n;
        self
    }

    /// The limits of a result's content blocks.
    pub fn content_limits(&self) -> ContentLimits {
        read(&self.inner.settings).content_limits
    }

    /// The default per-call timeout.
    pub fn default_timeout(&self) -> Duration {
        read(&self.inner.settings).default_timeout
    }

    /// Adds a synchronous event listener (for example a [`JsonlAuditSink`](crate::tools::JsonlAuditSink)).
    pub fn add_listener(&self, listener: Arc<dyn ToolEventListener>) {
        write(&self.inner.listeners).push(listener);
    }

    /// Subscribes to pipeline events (async; a slow receiver may lag and miss events).
    pub fn subscribe(&self) -> broadcast::Receiver<ToolEvent> {
        self.inner.events.subscribe()
    }

    /// A receiver that changes whenever a tool is added or removed (the value is a
    /// generation counter). Used to send MCP `list_changed` notifications.
    pub fn watch_changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Whether `other` is a handle of this same registry (clones share one registry).
    pub fn same_as(&self, other: &ToolRegistry) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The registry's generation: a counter that moves whenever a tool is added,
    /// replaced or removed (what [`ToolRegistry::watch_changes`] carries).
    pub fn generation(&self) -> u64 {
        *self.inner.changes.borrow()
    }

    fn bump(&self) {
        self.inner.changes.send_modify(|g| *g += 1);
    }

    /// Removes a tool by name. Calls already running finish normally.
    pub fn unregister(&self, name: &str) -> Option<Arc<dyn BaseTool>> {
        let removed = write(&self.inner.tools).shift_remove(name);
        if let Some(e) = &removed {
            self.bump();
            if *e.source() == crate::tools::base::ToolSource::Native {
                self.native_changed(name);
            }
        }
        removed.map(|e| e.tool.clone())
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn BaseTool>> {
        read(&self.inner.tools).get(name).map(|e| e.tool.clone())
    }

    /// The entry (metadata, stats) of the tool with this name.
    pub fn entry(&self, name: &str) -> Option<Arc<ToolEntry>> {
        read(&self.inner.tools).get(name).cloned()
    }

    /// Whether a tool with this name is registered.
    pub fn contains(&self, name: &str) -> bool {
        read(&self.inner.tools).contains_key(name)
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        read(&self.inner.tools).len()
    }

    /// Whether the registry has no tools.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tool names, in registration order.
    pub fn list_tools(&self) -> Vec<String> {
        read(&self.inner.tools).keys().cloned().collect()
    }

    /// All entries, in registration order.
    pub fn entries(&self) -> Vec<Arc<ToolEntry>> {
        read(&self.inner.tools).values().cloned().collect()
    }

    /// The OpenAI tool definitions of every tool, in registration order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        read(&self.inner.tools)
            .values()
            .map(|e| e.definition())
            .collect()
    }

    /// The definitions of the tools `keep` accepts (for example a tag filter).
    pub fn definitions_where(&self, keep: impl Fn(&ToolEntry) -> bool) -> Vec<ToolDefinition> {
        read(&self.inner.tools)
            .values()
            .filter(|e| keep(e))
            .map(|e| e.definition())
            .collect()
    }

    /// The tools carrying this tag.
    pub fn find_by_tag(&self, tag: &str) -> Vec<Arc<ToolEntry>> {
        read(&self.inner.tools)
            .values()
            .filter(|e| e.metadata.tags.iter().any(|t| t == tag))
            .cloned()
            .collect()
    }

    /// The tools of this category.
    pub fn find_by_category(&self, category: &str) -> Vec<Arc<ToolEntry>> {
        read(&self.inner.tools)
            .values()
            .filter(|e| e.metadata.category == category)
            .cloned()
            .collect()
    }

    /// The tools grouped by category, categories in order of first appearance.
    pub fn groups(&self) -> IndexMap<String, Vec<Arc<ToolEntry>>> {
        let mut out: IndexMap<String, Vec<Arc<ToolEntry>>> = IndexMap::new();
        for e in read(&self.inner.tools).values() {
            out.entry(e.metadata.category.clone())
                .or_default()
                .push(e.clone());
        }
        out
    }

    fn emit(&self, make: impl FnOnce() -> ToolEvent) {
        self.emit_wanting(|_| make());
    }

    /// [`Self::emit`], telling `make` whether a listener asked for results' canonical
    /// values ([`ToolEventListener::wants_output`]), read under the same lock: nothing
    /// more is done on a call nobody listens to.
    fn emit_wanting(&self, make: impl FnOnce(bool) -> ToolEvent) {
        let listeners = read(&self.inner.listeners);
        if listeners.is_empty() && self.inner.events.receiver_count() == 0 {
            return;
        }
        let ev = make(listeners.iter().any(|l| l.wants_output()));
        for l in listeners.iter() {
            l.on_event(&ev);
        }
        // No receiver is fine.
        let _ = self.inner.events.send(ev);
    }
}
