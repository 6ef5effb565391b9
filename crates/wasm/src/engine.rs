//! [`WasmEngine`]: one wasmtime `Engine` per host, with the pooling allocator, an epoch
//! ticker, the linker (WASI p2, wasi:http, the `host` interface) and an on-disk compile
//! cache.
//!
//! **Compile cache.** Compiled artifacts are kept on disk, keyed by the component's
//! sha256 and the engine settings, next to a file-identity index and the `describe()`
//! results; the folder and every file read from it must be private to the current user,
//! because an artifact is native code. All of that lives in `cache.rs` (its module
//! docs give the layout and the ownership rules); this file decides when the cache is
//! consulted ([`WasmEngine::load_file`], [`WasmEngine::compile`]).

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

use crate::bindings;
use crate::cache::{prepare_cache_dir, read_index, write_atomically};
use crate::error::{EngineError, PluginError};
pub use crate::options::{Compiler, EngineOptions};
use crate::sandbox::HostState;

pub(crate) struct EngineInner {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<HostState>,
    pub(crate) options: EngineOptions,
    /// Hash of the engine settings, part of every artifact's name.
    pub(crate) config_key: String,
    /// The compile cache folder in use (its real path), if any.
    pub(crate) cache_dir: Option<PathBuf>,
    /// Why the configured cache folder is not used, when it is not.
    cache_problem: Option<String>,
    /// Paths no policy may grant besides the plugins folder and the cache (see
    /// [`WasmEngine::protect_path`]).
    protected: std::sync::RwLock<Vec<(PathBuf, bool)>>,
    /// The engine with concurrency support, for components that need it (created on
    /// first need; only when this engine has it off).
    concurrent: std::sync::OnceLock<Result<WasmEngine, EngineError>>,
    /// The Winch engine that compiles first when [`EngineOptions::baseline_first`] is on
    /// (created on first need).
    baseline: std::sync::OnceLock<Result<WasmEngine, EngineError>>,
    /// The queue of the optimizer thread (see [`WasmEngine::optimize_later`]); `None`
    /// when the thread could not be started.
    optimizer: std::sync::OnceLock<Option<std::sync::Mutex<std::sync::mpsc::Sender<Job>>>>,
    /// How many spare sandboxes exist, against [`EngineOptions::spare_sandboxes`].
    pub(crate) spares: Arc<crate::spare::Budget>,
    /// Optimizer jobs queued or running ([`WasmEngine::optimizing`]).
    optimizing: Arc<std::sync::atomic::AtomicUsize>,
}

/// A background job of the optimizer thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The shared wasm engine. Cheap to clone.
#[derive(Clone)]
pub struct WasmEngine {
    pub(crate) inner: Arc<EngineInner>,
}

impl std::fmt::Debug for WasmEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmEngine")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl WasmEngine {
    /// An engine with default options.
    pub fn new() -> Result<Self, EngineError> {
        Self::with_options(EngineOptions::default())
    }

    /// An engine with these options. Starts the epoch ticker thread, which holds only a
    /// weak handle and ends when the engine is dropped.
    pub fn with_options(options: EngineOptions) -> Result<Self, EngineError> {
        let spares = Arc::new(crate::spare::Budget::new(options.spare_sandboxes));
        Self::sibling(options, spares)
    }

    /// An engine with these options whose spare sandboxes count against `spares` (a
    /// sibling engine shares its host engine's: one cap for the whole host).
    fn sibling(
        options: EngineOptions,
        spares: Arc<crate::spare::Budget>,
    ) -> Result<Self, EngineError> {
        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .consume_fuel(options.fuel)
            .epoch_interruption(options.epoch)
            .max_wasm_stack(options.max_wasm_stack)
            .async_stack_size(options.max_wasm_stack + (1 << 20))
            .concurrency_support(options.concurrency_support)
            .table_lazy_init(options.table_lazy_init);
        match options.compiler {
            Compiler::Cranelift => config.strategy(Strategy::Cranelift),
            Compiler::Winch => config.strategy(Strategy::Winch),
        };
        if options.pooling {
            let mut pool = PoolingAllocationConfig::default();
            let n = options.max_instances.max(1);
            pool.total_component_instances(n)
                .total_core_instances(n * 8)
                .total_memories(n * 2)
                .total_tables(n * 8)
                .total_stacks(n)
                .max_memories_per_component(8)
                .max_tables_per_component(32)
                .max_core_instances_per_component(64)
                .max_memory_size((crate::policy::MAX_MEMORY_MB as usize) << 20)
                .linear_memory_keep_resident(options.keep_resident)
                .table_keep_resident(options.table_keep_resident)
                // Falls back to plain memset + madvise where the ioctl is missing.
                .pagemap_scan(wasmtime::Enabled::Auto);
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&config).map_err(|e| EngineError::Config(format!("{e:#}")))?;
        let mut linker: Linker<HostState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| EngineError::Linker(format!("wasi: {e:#}")))?;
        // Grant checks in front of some wasi functions (Delete, FIFOs, DNS): see guard.rs.
        crate::guard::add_to_linker(&mut linker)
            .map_err(|e| EngineError::Linker(format!("wasi guards: {e:#}")))?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(|e| EngineError::Linker(format!("wasi:http: {e:#}")))?;
        crate::config_store::add_to_linker(&mut linker)
            .map_err(|e| EngineError::Linker(format!("wasi:config/store: {e:#}")))?;
        bindings::Tool::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)
            .map_err(|e| EngineError::Linker(format!("toolhost:tool/host: {e:#}")))?;
        crate::bindings_v2::Tool::add_to_linker::<HostState, HasSelf<HostState>>(
            &mut linker,
            |s| s,
        )
        .map_err(|e| EngineError::Linker(format!("toolhost:tool/host@0.2.0: {e:#}")))?;

        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        let config_key = format!("{:016x}", h.finish());

        let (cache_dir, cache_problem) = match options.cache_dir.as_deref() {
            None => (None, None),
            Some(dir) => match prepare_cache_dir(dir) {
                Ok(real) => (Some(real), None),
                Err(why) => {
                    tracing::warn!(
                        "compile cache disabled, compiling in memory: {why} (the cache holds native code, so it must be private to the current user)"
                    );
                    (None, Some(why.to_string()))
                }
            },
        };

        if options.epoch {
            let weak = engine.weak();
            let tick = options.epoch_tick;
            // The ticker ends on its own when the engine is gone.
            let spawned = std::thread::Builder::new()
                .name("toolhost-epoch".into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(tick);
                        match weak.upgrade() {
                            Some(e) => e.increment_epoch(),
                            None => break,
                        }
                    }
                });
            if let Err(e) = spawned {
                return Err(EngineError::Config(format!(
                    "cannot start the epoch ticker: {e}"
                )));
            }
        }
        Ok(WasmEngine {
            inner: Arc::new(EngineInner {
                engine,
                linker,
                config_key,
                cache_dir,
                cache_problem,
                protected: std::sync::RwLock::new(Vec::new()),
                concurrent: std::sync::OnceLock::new(),
                baseline: std::sync::OnceLock::new(),
                optimizer: std::sync::OnceLock::new(),
                spares,
                optimizing: Arc::default(),
                options,
            }),
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The options in force.
    pub fn options(&self) -> &EngineOptions {
        &self.inner.options
    }

    /// How many spare sandboxes this engine holds now, built or being built (at most
    /// [`EngineOptions::spare_sandboxes`]).
    pub fn spare_sandboxes(&self) -> usize {
        self.inner.spares.live()
    }

    /// How many calls ran in a spare sandbox so far.
    pub fn spare_sandboxes_used(&self) -> u64 {
        self.inner.spares.used()
    }

    /// The compile cache folder in use (its real path), if any.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.inner.cache_dir.as_deref()
    }

    /// Why the configured compile cache folder is not used (owned by someone else,
    /// writable by others, ...), when it is not.
    pub fn cache_problem(&self) -> Option<&str> {
        self.inner.cache_problem.as_deref()
    }

    /// Adds a path no plugin policy may grant (nor a folder above it), such as the host
    /// config file. The plugins folder and the compile cache are always protected.
    pub fn protect_path(&self, path: &Path) {
        if let Ok(mut p) = self.inner.protected.write() {
            p.push((path.to_path_buf(), false));
        }
    }

    /// Adds a folder no plugin policy may grant, nor a folder above it, nor one inside
    /// it (such as the host's OAuth logins).
    pub fn protect_folder_sealed(&self, path: &Path) {
        if let Ok(mut p) = self.inner.protected.write() {
            p.push((path.to_path_buf(), true));
        }
    }

    /// Every path no policy may grant: the compile cache (sealed: nothing inside it
    /// either) and the paths given to [`Self::protect_path`] and
    /// [`Self::protect_folder_sealed`].
    pub fn protected_paths(&self) -> crate::policy::Protected {
        let mut out = crate::policy::Protected::new();
        for dir in [&self.inner.options.cache_dir, &self.inner.cache_dir]
            .into_iter()
            .flatten()
        {
            out.add_sealed(dir);
        }
        if let Ok(p) = self.inner.protected.read() {
            for (path, sealed) in p.iter() {
                if *sealed {
                    out.add_sealed(path);
                } else {
                    out.add(path);
                }
            }
        }
        out
    }

    /// Loads the component in `path` for [`Plugin::load`](crate::Plugin::load): compiled
    /// on this engine or its concurrency-enabled sibling (see [`Self::compile_any`]),
    /// through the compile cache. Returns the engine it belongs to, the component and the
    /// sha256 of the file (hex).
    ///
    /// **Fast path.** Hashing a 15 MB JS or Python component costs tens of milliseconds
    /// at every start, so the cache also keeps an index from a file's identity (device,
    /// inode, size, modification and change times, in ns) to its digest. When the file's
    /// identity matches its index entry and the artifact for that digest is cached, the
    /// file is not even read. Any change to the file changes its change time (which user
    /// code cannot set), so a replaced or edited plugin is always hashed afresh.
    pub fn load_file(
        &self,
        path: &Path,
        max_bytes: u64,
    ) -> Result<(WasmEngine, Component, String), PluginError> {
        match self.open_plugin(path, max_bytes, false, |_| None::<std::convert::Infallible>)? {
            Opened::Compiled {
                engine,
                component,
                digest,
                ..
            } => Ok((engine, component, digest)),
            Opened::Listed { cached, .. } => match cached {},
        }
    }

    /// [`Self::load_file`], with one more way out: when the file-identity index knows
    /// the file's digest, this engine's artifact for it is cached and `from_cache(digest)`
    /// returns `Some` (e.g. a cached `describe()` result), the file is neither read nor
    /// the artifact mapped: `Opened::Listed`. One stat, one index read, whichever way.
    ///
    /// With `baseline` (and [`EngineOptions::baseline_first`]), a component that must be
    /// compiled is compiled by the Winch engine when it can be, and the open file comes
    /// back in `Opened::Compiled::optimize` for the caller's background Cranelift compile
    /// (read again then, so a queue of cold components holds no bytes in memory).
    pub(crate) fn open_plugin<T>(
        &self,
        path: &Path,
        max_bytes: u64,
        baseline: bool,
        from_cache: impl FnOnce(&str) -> Option<T>,
    ) -> Result<Opened<T>, PluginError> {
        let name = path.display().to_string();
        let io = |source| PluginError::Io {
            path: name.clone(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.len() > max_bytes {
            return Err(PluginError::TooLarge {
                path: name,
                size: meta.len(),
                max: max_bytes,
            });
        }
        let index = self.index_entry(path, &meta);
        if let Some(digest) = index.as_ref().and_then(|(e, st)| read_index(e, st)) {
            if self.artifact_path(&digest).is_some_and(|a| a.is_file())
                && let Some(cached) = from_cache(&digest)
            {
                return Ok(Opened::Listed { digest, cached });
            }
            if let Some(component) = self.cached_artifact(&digest) {
                return Ok(Opened::Compiled {
                    engine: self.clone(),
                    component,
                    digest,
                    optimize: None,
                });
            }
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        // Read through the handle that was measured, so the size cap holds even if the
        // file grows meanwhile.
        std::io::Read::read_to_end(
            &mut std::io::Read::take(&mut file, max_bytes + 1),
            &mut bytes,
        )
        .map_err(io)?;
        if bytes.len() as u64 > max_bytes {
            return Err(PluginError::TooLarge {
                path: name,
                size: bytes.len() as u64,
                max: max_bytes,
            });
        }
        let digest = hex::encode(Sha256::digest(&bytes));
        let index_it = || {
            if let Some((entry, stamp)) = &index {
                write_atomically(entry, format!("{stamp} {digest}\n").as_bytes());
            }
        };
        if baseline
            && self.inner.options.baseline_first
            && !self.artifact_path(&digest).is_some_and(|a| a.is_file())
            && let Some((engine, component)) = self.compile_baseline(&bytes, path)
        {
            index_it();
            return Ok(Opened::Compiled {
                engine,
                component,
                digest,
                optimize: Some(file),
            });
        }
        let (engine, component) = self.compile_any_digest(&bytes, path, &digest)?;
        index_it();
        Ok(Opened::Compiled {
            engine,
            component,
            digest,
            optimize: None,
        })
    }

    /// The Winch sibling of this engine: the same limits and linker, baseline code, no
    /// compile cache (its artifacts are short-lived: the Cranelift build replaces them),
    /// and no pooling allocator (no second reservation of instance slots for code that
    /// runs only until the swap). Created on first need.
    fn baseline_engine(&self) -> Option<&WasmEngine> {
        let made = self.inner.baseline.get_or_init(|| {
            WasmEngine::sibling(
                EngineOptions {
                    compiler: Compiler::Winch,
                    baseline_first: false,
                    cache_dir: None,
                    pooling: false,
                    // Winch supports only lazily initialized tables.
                    table_lazy_init: true,
                    ..self.inner.options.clone()
                },
                self.inner.spares.clone(),
            )
        });
        match made {
            Ok(e) => Some(e),
            Err(e) => {
                tracing::warn!("no baseline compiler, compiling with Cranelift only: {e}");
                None
            }
        }
    }

    /// Compiles `bytes` with the baseline engine, or `None` (logged) when it cannot:
    /// the caller then compiles with Cranelift as usual, so a component Winch does not
    /// support still loads.
    fn compile_baseline(&self, bytes: &[u8], path: &Path) -> Option<(WasmEngine, Component)> {
        let baseline = self.baseline_engine()?;
        check_component_header(bytes, &path.display().to_string()).ok()?;
        let t0 = std::time::Instant::now();
        match Component::new(&baseline.inner.engine, bytes) {
            Ok(c) => {
                tracing::info!(
                    plugin = %path.display(),
                    ms = t0.elapsed().as_millis() as u64,
                    "compiled with the baseline compiler (Winch); the optimized build follows in the background"
                );
                Some((baseline.clone(), c))
            }
            Err(e) => {
                tracing::debug!(
                    plugin = %path.display(),
                    "the baseline compiler cannot compile this component, using Cranelift: {e:#}"
                );
                None
            }
        }
    }

    /// Compiles a component on this engine or, when that fails and this engine has
    /// concurrency support off, on the engine with it on (a component using the
    /// component-model `async` features). Returns the engine the component belongs to.
    /// When both fail, the error is the one from this engine.
    pub fn compile_any(
        &self,
        bytes: &[u8],
        path: &Path,
    ) -> Result<(WasmEngine, Component), PluginError> {
        self.compile_any_digest(bytes, path, &hex::encode(Sha256::digest(bytes)))
    }

    /// Queues `job` for this engine's optimizer thread (started on first use, ended when
    /// the engine is dropped). The background Cranelift compiles of a tier-up run there
    /// one at a time, each spread over the cores by wasmtime's parallel compilation, so
    /// a folder of many cold plugins does not start as many large compiles at once.
    /// Returns `false` (the job is dropped) when the thread cannot be started.
    pub(crate) fn optimize_later(&self, job: Job) -> bool {
        let queue = self.inner.optimizer.get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<Job>();
            let spawned = std::thread::Builder::new()
                .name("toolhost-optimize".into())
                .spawn(move || {
                    // Ends when every sender is gone: the engine was dropped.
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                });
            match spawned {
                Ok(_) => Some(std::sync::Mutex::new(tx)),
                Err(e) => {
                    tracing::warn!("cannot start the optimizer thread: {e}");
                    None
                }
            }
        });
        use std::sync::atomic::Ordering;
        let pending = self.inner.optimizing.clone();
        pending.fetch_add(1, Ordering::AcqRel);
        let counted: Job = Box::new(move || {
            job();
            pending.fetch_sub(1, Ordering::AcqRel);
        });
        let queued = match queue.as_ref().map(|q| q.lock()) {
            Some(Ok(tx)) => tx.send(counted).is_ok(),
            _ => false,
        };
        if !queued {
            // The job (and its decrement) was dropped with the failed send.
            self.inner.optimizing.fetch_sub(1, Ordering::AcqRel);
        }
        queued
    }

    /// How many optimized (Cranelift) builds of plugins that started on baseline code
    /// are queued or compiling ([`EngineOptions::baseline_first`]): while not 0, some
    /// calls run on slower code. A failed build counts as done (its plugin stays on
    /// baseline code, with a warning).
    pub fn optimizing(&self) -> usize {
        self.inner
            .optimizing
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// [`Self::compile_any`] of bytes whose digest is known (also the background half
    /// of a tier-up: the Cranelift build, written to the cache).
    pub(crate) fn compile_any_digest(
        &self,
        bytes: &[u8],
        path: &Path,
        digest: &str,
    ) -> Result<(WasmEngine, Component), PluginError> {
        let first = match self.compile_digest(bytes, path, digest) {
            Ok(c) => return Ok((self.clone(), c)),
            Err(e @ PluginError::Compile { .. }) if !self.inner.options.concurrency_support => e,
            Err(e) => return Err(e),
        };
        let concurrent = self.inner.concurrent.get_or_init(|| {
            WasmEngine::sibling(
                EngineOptions {
                    concurrency_support: true,
                    ..self.inner.options.clone()
                },
                self.inner.spares.clone(),
            )
        });
        let Ok(concurrent) = concurrent else {
            return Err(first);
        };
        match concurrent.compile_digest(bytes, path, digest) {
            Ok(c) => {
                tracing::info!(
                    plugin = %path.display(),
                    "component uses component-model concurrency; running it on the engine with concurrency support"
                );
                Ok((concurrent.clone(), c))
            }
            Err(_) => Err(first),
        }
    }

    /// Compiles a component, through the on-disk cache. `path` is only for messages.
    pub fn compile(&self, bytes: &[u8], path: &Path) -> Result<Component, PluginError> {
        self.compile_digest(bytes, path, &hex::encode(Sha256::digest(bytes)))
    }

    fn compile_digest(
        &self,
        bytes: &[u8],
        path: &Path,
        digest: &str,
    ) -> Result<Component, PluginError> {
        let name = path.display().to_string();
        check_component_header(bytes, &name)?;
        if let Some(c) = self.cached_artifact(digest) {
            return Ok(c);
        }
        let component =
            Component::new(&self.inner.engine, bytes).map_err(|e| PluginError::Compile {
                path: name.clone(),
                message: format!("{e:#}"),
            })?;
        if let Some(file) = self.artifact_path(digest) {
            match component.serialize() {
                Ok(art) => write_atomically(&file, &art),
                Err(e) => tracing::warn!("cannot serialize {name}: {e:#}"),
            }
        }
        Ok(component)
    }
}

/// What [`WasmEngine::open_plugin`] found.
pub(crate) enum Opened<T> {
    /// Known to the cache and accepted by `from_cache`: nothing read or mapped.
    Listed {
        /// sha256 of the file (hex).
        digest: String,
        /// What `from_cache` returned.
        cached: T,
    },
    /// Compiled, or deserialized from the cache.
    Compiled {
        /// The engine the component belongs to (this one or its concurrent sibling).
        engine: WasmEngine,
        /// The component.
        component: Component,
        /// sha256 of the file (hex).
        digest: String,
        /// When `engine` is the baseline (Winch) engine: the open component file, for
        /// the Cranelift compile that replaces it ([`read_same`]).
        optimize: Option<std::fs::File>,
    },
}

/// Rejects garbage and core modules early, with a clear message.
fn check_component_header(bytes: &[u8], name: &str) -> Result<(), PluginError> {
    let err = |detail: &str| PluginError::NotAComponent {
        path: name.to_string(),
        detail: detail.to_string(),
    };
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(err("the file does not start with the wasm magic bytes"));
    }
    match bytes[4..8] {
        [1, 0, 0, 0] => Err(err(
            "it is a core wasm module; build a component (target wasm32-wasip2, or `wasm-tools component new`)",
        )),
        [_, _, 1, 0] => Ok(()),
        _ => Err(err("unknown wasm binary version/layer")),
    }
}

/// The contents of `file` (read again from its start, through the handle that was
/// hashed, so a file renamed over it does not matter) if they still have this sha256
/// (hex) and fit in `max_bytes`; `None` when they changed in place: the live reload
/// handles a changed plugin, a tier-up never compiles other bytes than it described.
pub(crate) fn read_same(
    file: &mut std::fs::File,
    digest: &str,
    max_bytes: u64,
) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::{Read, Seek};
    file.seek(std::io::SeekFrom::Start(0))?;
    let mut bytes = Vec::new();
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes || hex::encode(Sha256::digest(&bytes)) != digest {
        return Ok(None);
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Write;

    use super::*;

    #[test]
    fn a_tier_up_reads_only_the_bytes_it_described() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.wasm");
        std::fs::write(&path, b"first version").unwrap();
        let digest = hex::encode(Sha256::digest(b"first version"));
        let mut held = std::fs::File::open(&path).unwrap();
        // Unchanged: read again from the start, whatever was read before.
        assert_eq!(
            read_same(&mut held, &digest, 1 << 20).unwrap().as_deref(),
            Some(&b"first version"[..])
        );
        // Over the size cap: refused.
        assert_eq!(read_same(&mut held, &digest, 4).unwrap(), None);
        // A new file renamed over the path: the held handle still reads what was hashed.
        let other = dir.path().join("q.wasm");
        std::fs::write(&other, b"second version").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(
            read_same(&mut held, &digest, 1 << 20).unwrap().as_deref(),
            Some(&b"first version"[..])
        );
        // Changed in place (same inode): refused.
        let mut held = std::fs::File::open(&path).unwrap();
        let digest = hex::encode(Sha256::digest(b"second version"));
        let mut w = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        w.write_all(b"SECOND").unwrap();
        assert_eq!(read_same(&mut held, &digest, 1 << 20).unwrap(), None);
    }
}
