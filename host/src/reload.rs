//! Live reload of the plugins folder (`toolhost serve`): a plugin `NAME.wasm` (or its
//! request file `NAME.toml`) that appears, changes or goes away while the host serves is
//! loaded, replaced or dropped without a restart. The rules are in `docs/design.md`,
//! "Live reload"; in short:
//!
//! - **Same trust rules as start-up.** Every change goes through the one decision that
//!   start-up uses (`trust/offer.rs`: compile, describe, evaluate against the lock entry,
//!   then register). A change of `toolhost.lock` re-evaluates every plugin, so an
//!   approval given while the host runs takes effect; a compatible update is recorded in
//!   the lock as at start-up.
//! - **Quiet period.** A file is looked at only once nothing has written to it for
//!   [`QUIET_PERIOD`] (the `notify` crate, inotify on Linux; see [`FolderWatch`]), so a
//!   copy in progress is not loaded half-way.
//! - **A bad file disturbs nothing.** A file that does not load (garbage, a truncated
//!   component, a `describe()` that fails or breaks the registry's checks) is reported
//!   (a warning naming the file and why) and changes nothing: the previous version of
//!   that plugin, if one was loaded, keeps serving; every other plugin is untouched.
//! - **No needless churn.** A plugin whose new evaluation offers exactly what is
//!   registered ([`PluginTrust::same_offer`]) is left alone: no re-registration, no
//!   `list_changed`.
//! - **Calls in flight finish on their version.** A call holds the registry entry it
//!   started with (and through it the component); replacing or removing a plugin only
//!   changes what later calls find. While a reload runs the registry counts as loading,
//!   so a call of a tool that is being swapped waits for it instead of failing as
//!   unknown.
//! - **Announced.** Every registration and removal changes the registry, which the MCP
//!   server announces with `notifications/tools/list_changed`.
//! - **Names as at start.** Plugins are registered through the [`FolderSet`] the start-up
//!   load filled: a plugin dropped in that describes a tool name another plugin serves
//!   makes both `plugin__tool` (it never takes the name being served), and when it goes
//!   away the survivor gets the plain name back: the registry is always what a restart
//!   with the same files would give.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::time::Instant;
use toolhost_trust::LOCK_FILE;

use crate::host::Host;
use crate::loader::LoadProblem;
use crate::tools::{ToolEntry, ToolRegistry, ToolSource};
use crate::trust::{
    LoadRules, PluginTrust, plugin_name, prepare_plugin, read_lock, record_update,
    register_prepared,
};
use crate::wasm::folder::FolderSet;

/// How long a file must stay untouched before it is looked at: long enough for a copy or
/// a build to finish writing, short enough to feel immediate.
pub const QUIET_PERIOD: Duration = Duration::from_millis(300);

/// Errors of live reload.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The folder cannot be watched (missing, unreadable, out of inotify watches).
    #[error(
        "cannot watch the plugins folder {dir} for changes: {source}; plugins are read once at start (restart to pick up changes, or create the folder before starting)"
    )]
    Watch {
        /// The plugins folder.
        dir: String,
        /// Why.
        #[source]
        source: notify::Error,
    },
}

/// What a changed file asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// Plugin `NAME` (its `NAME.wasm`, `NAME.toml` or `NAME.ui` changed).
    Plugin(String),
    /// Every plugin: the lock changed, or the watcher lost events.
    All,
}

impl Key {
    /// `NAME.wasm`, `NAME.toml` and `NAME.ui` (its views folder, made, replaced or
    /// removed as a whole) are plugin `NAME`; the lock file is every plugin; anything else
    /// is not ours.
    fn of(path: &Path) -> Option<Key> {
        let file = path.file_name()?;
        if file == LOCK_FILE {
            return Some(Key::All);
        }
        let ext = path.extension()?;
        (ext == "wasm" || ext == "toml" || ext == "ui").then(|| Key::Plugin(plugin_name(path)))
    }
}

/// Whether an event can mean new content. Opening and reading do not (the host's own
/// reads of the files it loads would otherwise start the next reload, forever); neither
/// do metadata changes (`touch`, `chmod`).
fn changes_content(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_)) => false,
        _ => true,
    }
}

/// Changes seen and not yet applied: when each key was last touched. Bounded by the
/// number of plugin names in the folder (plus one).
#[derive(Default)]
struct Pending {
    last: Mutex<HashMap<Key, Instant>>,
    wake: tokio::sync::Notify,
}

impl Pending {
    fn touched(&self, key: Key) {
        lock(&self.last).insert(key, Instant::now());
        self.wake.notify_one();
    }

    /// The keys untouched for [`QUIET_PERIOD`], taken out; or when to look again
    /// (`None`: nothing is pending).
    fn take_quiet(&self) -> Result<Vec<Key>, Option<Instant>> {
        let mut last = lock(&self.last);
        let now = Instant::now();
        let quiet: Vec<Key> = last
            .iter()
            .filter(|(_, t)| now.duration_since(**t) >= QUIET_PERIOD)
            .map(|(k, _)| k.clone())
            .collect();
        if quiet.is_empty() {
            return Err(last.values().min().map(|t| *t + QUIET_PERIOD));
        }
        for k in &quiet {
            last.remove(k);
        }
        Ok(quiet)
    }
}

// A poisoned lock means a panic while holding it; the map is consistent at every step.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A watch on a plugins folder. Changes are recorded from the moment it is created (so
/// nothing is missed while the start-up load runs) and applied by [`FolderWatch::run`].
///
/// The quiet period is kept here rather than by a debouncer crate: `notify-debouncer-mini`
/// reports a path without the kind of event, so the host's own reads of a plugin (inotify
/// `OPEN`) could not be told from a write and would trigger the next reload forever;
/// `notify-debouncer-full` releases events of a file still being written once they are
/// older than its timeout, which is not a quiet period.
pub struct FolderWatch {
    dir: PathBuf,
    /// Dropping it stops the watch; `None`: the folder is not watched ([`unwatched`]),
    /// only what is asked through [`Reloads`] is applied.
    watcher: Option<RecommendedWatcher>,
    pending: Arc<Pending>,
    board: Option<crate::trust::TrustBoard>,
}

/// Asks a [`FolderWatch`] to look at a plugin again, with no file event: an operator's
/// approval in the console applies through it whether or not the folder can be watched
/// (inotify exhausted, `--no-watch`, a file system without events). An ask goes through the
/// same quiet period and trust decision as a file change, and asks for the same plugin
/// within the quiet period are one reload.
#[derive(Clone)]
pub struct Reloads(Arc<Pending>);

impl std::fmt::Debug for Reloads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloads").finish_non_exhaustive()
    }
}

impl Reloads {
    /// Plugin `name` (a file stem of the folder) is evaluated again, as its files and the
    /// lock are then.
    pub fn plugin(&self, name: &str) {
        self.0.touched(Key::Plugin(name.to_string()));
    }
}

impl std::fmt::Debug for FolderWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FolderWatch")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// Starts watching plugins folder `dir` (its files, not its subfolders).
pub fn watch(dir: &Path) -> Result<FolderWatch, ReloadError> {
    let watch_error = |source| ReloadError::Watch {
        dir: dir.display().to_string(),
        source,
    };
    let pending = Arc::new(Pending::default());
    let sink = pending.clone();
    let shown = dir.display().to_string();
    // Runs on the watcher's own thread: it only books the change.
    let handler = move |event: notify::Result<notify::Event>| match event {
        Ok(e) if e.need_rescan() => sink.touched(Key::All),
        Ok(e) if changes_content(&e.kind) => {
            for key in e.paths.iter().filter_map(|p| Key::of(p)) {
                sink.touched(key);
            }
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(dir = %shown, "watching the plugins folder: {}", line(&e.to_string()))
        }
    };
    let mut watcher = notify::recommended_watcher(handler).map_err(watch_error)?;
    watcher
        .watch(dir, RecursiveMode::NonRecursive)
        .map_err(watch_error)?;
    Ok(FolderWatch {
        dir: dir.to_path_buf(),
        watcher: Some(watcher),
        pending,
        board: None,
    })
}

/// A [`FolderWatch`] of `dir` that sees no file change: it applies only what is asked
/// through its [`Reloads`] (`serve --no-watch`, or a folder that cannot be watched).
pub fn unwatched(dir: &Path) -> FolderWatch {
    FolderWatch {
        dir: dir.to_path_buf(),
        watcher: None,
        pending: Arc::new(Pending::default()),
        board: None,
    }
}

impl FolderWatch {
    /// The handle that asks this watch to look at a plugin again ([`Reloads`]).
    pub fn reloads(&self) -> Reloads {
        Reloads(self.pending.clone())
    }

    /// Also publishes each reload's decisions on `board` (the console's view).
    pub fn with_board(mut self, board: crate::trust::TrustBoard) -> FolderWatch {
        self.board = Some(board);
        self
    }

    /// Applies every change of the folder to `registry` once it has been quiet for
    /// [`QUIET_PERIOD`], one batch at a time, for as long as the task runs. `loaded` is
    /// what the start-up load on `host` decided (so unchanged plugins are left alone);
    /// call this once that load has finished. Reloads run on the same host.
    pub async fn run(
        self,
        host: Host,
        registry: ToolRegistry,
        rules: LoadRules,
        loaded: Vec<PluginTrust>,
        set: FolderSet,
    ) {
        let mut names = registry.names_changed();
        names.borrow_and_update();
        let mut live = LiveFolder::new(host, registry, &self.dir, rules, loaded, set);
        live.board = self.board.clone();
        let shown = self.dir.display().to_string();
        let dir = line(&shown);
        if self.watcher.is_some() {
            tracing::info!(dir = %dir, "watching the plugins folder for changes");
        } else {
            tracing::info!(dir = %dir, "the plugins folder is not watched; approvals given in the console apply");
        }
        loop {
            let keys = match self.pending.take_quiet() {
                Ok(keys) => keys,
                Err(when) => {
                    let quiet = async {
                        match when {
                            Some(when) => tokio::time::sleep_until(when).await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        () = self.pending.wake.notified() => {}
                        () = quiet => {}
                        // Another source claimed or released a name: the plugins are
                        // renamed as the one rule now says.
                        Ok(()) = names.changed() => live.follow_names(),
                    }
                    continue;
                }
            };
            let names = if keys.contains(&Key::All) {
                live.all_names()
            } else {
                keys.into_iter()
                    .filter_map(|k| match k {
                        Key::Plugin(name) => Some(name),
                        Key::All => None,
                    })
                    .collect()
            };
            live.reload(&names).await;
        }
    }
}

/// The plugins of one folder as the registry offers them, kept up to date plugin by
/// plugin ([`LiveFolder::reload`]).
#[derive(Debug)]
pub struct LiveFolder {
    host: Host,
    registry: ToolRegistry,
    dir: PathBuf,
    rules: LoadRules,
    /// What each plugin offers now (the plugins registered, or decided to offer nothing).
    offered: BTreeMap<String, PluginTrust>,
    /// The plugins registered, named by the one rule of tool names.
    set: FolderSet,
    /// Where each reload's decisions are published (the console's view).
    board: Option<crate::trust::TrustBoard>,
}

impl LiveFolder {
    /// The folder `dir` as loaded into `registry` on `host` at start (`loaded` and `set`:
    /// the start-up decisions and plugins of [`Host::load_folder`]); reloads run on the
    /// same host.
    pub fn new(
        host: Host,
        registry: ToolRegistry,
        dir: &Path,
        rules: LoadRules,
        loaded: Vec<PluginTrust>,
        set: FolderSet,
    ) -> LiveFolder {
        let offered = loaded.into_iter().map(|t| (t.name.clone(), t)).collect();
        LiveFolder {
            host,
            registry,
            dir: dir.to_path_buf(),
            rules,
            offered,
            set,
            board: None,
        }
    }

    /// Renames the plugins' tools as the registry's naming rule now says (another source's
    /// claims changed).
    fn follow_names(&mut self) {
        if let Err(e) = self.set.follow_names(&self.registry) {
            tracing::warn!("{}", line(&e.to_string()));
        }
    }

    /// Every plugin there is or was: the component files now, and those offered.
    fn all_names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self.offered.keys().cloned().collect();
        match crate::wasm::folder::plugin_files(&self.dir) {
            Ok(files) => names.extend(files.iter().map(|f| plugin_name(f))),
            Err(e) => tracing::warn!("{}", line(&e.to_string())),
        }
        names
    }

    /// Loads, replaces or drops the plugins `names` (file stems) as their files are now,
    /// under the lock as it is now, in name order. Returns the problems met (each is also
    /// logged as a warning). The registry counts as loading meanwhile.
    pub async fn reload(&mut self, names: &BTreeSet<String>) -> Vec<LoadProblem> {
        let _loading = self.registry.begin_loading();
        // Counted for the admin endpoint's metrics (a no-op without a recorder).
        metrics::counter!("toolhost_reloads_total").increment(1);
        let mut problems = Vec::new();
        let engine = self.host.engine().clone();
        let (mut lock, lock_problem) = read_lock(&self.dir);
        let lock_ok = lock_problem.is_none();
        if let Some(p) = lock_problem {
            warn_problem(&p);
            problems.push(p);
        }
        let rules = self.rules.clone();
        let mut dirty = false;
        for name in names {
            let path = self.dir.join(format!("{name}.wasm"));
            if !path.is_file() {
                self.drop_plugin(name, &path);
                continue;
            }
            let prepared =
                match prepare_plugin(&engine, &self.dir, &path, &lock, rules.clone()).await {
                    Ok(p) => p,
                    Err(p) => {
                        self.report_bad(name, &p);
                        problems.push(p);
                        continue;
                    }
                };
            if self
                .offered
                .get(name)
                .is_some_and(|old| old.same_offer(&prepared.0))
            {
                tracing::debug!(plugin = %line(name), "plugin unchanged");
                continue;
            }
            let old = self.set.get(name).is_some();
            match register_prepared(&self.registry, &mut self.set, prepared) {
                Ok((report, plugin)) => {
                    dirty |= record_update(&mut lock, &report);
                    if let Some(w) = report.warning(&self.dir) {
                        tracing::warn!("{}", line(&w));
                    }
                    let tools = plugin.as_ref().map_or(0, |p| p.tools().len());
                    let what = if old { "replaced" } else { "loaded" };
                    tracing::info!(plugin = %line(name), tools, "plugin {what}; tools offered: {tools}");
                    crate::trust::warm_later(plugin.into_iter().collect());
                    self.offered.insert(name.clone(), report);
                }
                Err(p) => {
                    // The registry refused the new version: the previous one (if any)
                    // keeps serving, as the set left it.
                    self.report_bad(name, &p);
                    problems.push(p);
                }
            }
        }
        if dirty
            && lock_ok
            && let Err(e) = lock.save(&toolhost_trust::Lock::path_in(&self.dir))
        {
            let p = LoadProblem {
                source: toolhost_trust::Lock::path_in(&self.dir)
                    .display()
                    .to_string(),
                message: e.to_string(),
            };
            warn_problem(&p);
            problems.push(p);
        }
        if let Some(board) = &self.board {
            board.publish(self.offered.values(), &self.set);
        }
        problems
    }

    /// Plugin `name`'s component file is gone: its tools go too (and a tool name it
    /// shared goes back to its other describer plainly).
    fn drop_plugin(&mut self, name: &str, path: &Path) {
        let gone = self
            .set
            .remove(&self.registry, name)
            .map_or(0, |p| p.tools().len());
        let stray = self.take_down(path);
        if self.offered.remove(name).is_some() || gone + stray > 0 {
            tracing::info!(plugin = %line(name), tools = gone + stray, "plugin removed: its tools are no longer offered");
        }
    }

    /// Unregisters every tool of the component file `path` the set does not hold (none,
    /// normally); returns how many. Calls in flight keep their entry.
    fn take_down(&self, path: &Path) -> usize {
        let source = ToolSource::Wasm {
            path: path.display().to_string(),
        };
        let mine: Vec<Arc<ToolEntry>> = self
            .registry
            .entries()
            .into_iter()
            .filter(|e| *e.source() == source)
            .collect();
        for e in &mine {
            // Only this very entry: a tool of another source that took the name since
            // stays.
            if self
                .registry
                .entry(e.name())
                .is_some_and(|now| Arc::ptr_eq(&now, e))
            {
                self.registry.unregister(e.name());
            }
        }
        mine.len()
    }

    /// Reports a file that did not load; what was offered before stays.
    fn report_bad(&self, name: &str, p: &LoadProblem) {
        let kept = if self.offered.get(name).is_some_and(|t| t.loaded) {
            "the previous version keeps serving"
        } else {
            "it offers no tools"
        };
        tracing::warn!(
            plugin = %line(name),
            "{}: not loaded: {}; {kept}",
            line(&p.source),
            line(&p.message)
        );
    }
}

/// Untrusted text (a plugin's words inside an error, a file name) for a log line: control
/// and bidi characters escaped, one line.
fn line(s: &str) -> std::borrow::Cow<'_, str> {
    crate::tools::escape::escape_line(s)
}

/// Logs a problem as a warning (escaped, see [`line`]).
fn warn_problem(p: &LoadProblem) {
    tracing::warn!("{}: {}", line(&p.source), line(&p.message));
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, MetadataKind, RemoveKind, RenameMode};

    #[test]
    fn component_request_and_lock_files_are_ours_nothing_else() {
        let key = |p: &str| Key::of(Path::new(p));
        assert_eq!(key("/p/calc.wasm"), Some(Key::Plugin("calc".into())));
        assert_eq!(key("/p/calc.toml"), Some(Key::Plugin("calc".into())));
        assert_eq!(key("/p/calc.ui"), Some(Key::Plugin("calc".into())));
        assert_eq!(key("/p/toolhost.lock"), Some(Key::All));
        assert_eq!(key("/p/calc.wasm.part"), None);
        assert_eq!(key("/p/.calc.wasm.swp"), None);
        assert_eq!(key("/p/toolhost.lock.d"), None);
        assert_eq!(key("/p/data"), None);
    }

    #[test]
    fn writes_renames_and_removals_are_changes_opens_and_reads_are_not() {
        let yes = [
            EventKind::Create(CreateKind::File),
            EventKind::Modify(ModifyKind::Data(DataChange::Any)),
            EventKind::Modify(ModifyKind::Name(RenameMode::To)),
            EventKind::Access(AccessKind::Close(AccessMode::Write)),
            EventKind::Remove(RemoveKind::File),
            EventKind::Any,
        ];
        let no = [
            EventKind::Access(AccessKind::Open(AccessMode::Any)),
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
            EventKind::Access(AccessKind::Read),
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)),
        ];
        for k in yes {
            assert!(changes_content(&k), "{k:?}");
        }
        for k in no {
            assert!(!changes_content(&k), "{k:?}");
        }
    }

    #[test]
    fn a_fresh_change_waits_for_its_quiet_period() {
        let pending = Pending::default();
        assert_eq!(pending.take_quiet(), Err(None));
        pending.touched(Key::Plugin("calc".into()));
        assert!(matches!(pending.take_quiet(), Err(Some(_))));
    }
}
