//! Hostile plugins that attack the load path rather than a call: a `describe()` that
//! blocks or spins or floods, a plugin that squats another's tool name, a policy that
//! grants the plugins folder or the compile cache, a compile cache someone else can
//! write, and a component with several memories. Each attack is followed by a good call
//! (calc's `add`) that must still answer. See docs/security.md.

use std::path::{Path, PathBuf};

use serde_json::json;
use toolhost_core::tools::{ToolError, ToolRegistry};
use toolhost_wasm::{EngineOptions, Plugin, PluginError, WasmEngine, folder};

use crate::support::{self, call, err_text, install, still_works};

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

/// An engine with its own compile cache in `dir` (`None`: no cache).
fn engine_with_cache(dir: Option<PathBuf>) -> WasmEngine {
    WasmEngine::with_options(EngineOptions {
        cache_dir: dir,
        max_instances: 8,
        ..EngineOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Loads `dir` into a fresh registry; returns it with the load errors.
async fn load(engine: &WasmEngine, dir: &Path) -> (ToolRegistry, Vec<PluginError>) {
    let reg = ToolRegistry::new();
    let (_plugins, errors) = folder::load_into(engine, &reg, dir).await;
    (reg, errors)
}

fn error_for<'a>(errors: &'a [PluginError], file: &str) -> &'a PluginError {
    errors
        .iter()
        .find(|e| e.path().ends_with(file))
        .unwrap_or_else(|| panic!("no error for {file}: {errors:?}"))
}

async fn add_is_calc(reg: &ToolRegistry, tool: &str) {
    let inv = call(reg, tool, json!({"x": 1, "y": 2})).await;
    assert_eq!(
        inv.output.as_ref().map(|o| o.canonical.clone()).ok(),
        Some(json!(3.0)),
        "{tool}: {}",
        inv.model_text()
    );
}

// ---- describe(): wall-clock deadline, caps, remembered refusals ----------------------

#[tokio::test]
async fn describe_blocked_in_a_wasi_sleep_is_stopped_by_a_wall_clock_deadline() {
    let cache = tempdir();
    let engine = engine_with_cache(Some(cache.path().join("c")));
    let dir = tempdir();
    install(dir.path(), "desc_sleep", None);
    install(dir.path(), "calc", None);
    let (reg, errors) = load(&engine, dir.path()).await;
    assert_eq!(errors.len(), 1, "{errors:?}");
    let err = error_for(&errors, "desc_sleep.wasm");
    assert!(
        matches!(err, PluginError::DescribeTimeout { timeout, .. } if *timeout == toolhost_wasm::component::DESCRIBE_TIMEOUT),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("desc_sleep.wasm") && text.contains("did not return within 2000 ms"),
        "{text}"
    );
    add_is_calc(&reg, "add").await;
}

#[tokio::test]
async fn describe_that_spins_is_refused_and_the_refusal_is_remembered() {
    let cache = tempdir();
    let cdir = cache.path().join("c");
    let dir = tempdir();
    install(dir.path(), "desc_spin", None);
    install(dir.path(), "calc", None);
    let first = {
        let engine = engine_with_cache(Some(cdir.clone()));
        let (reg, errors) = load(&engine, dir.path()).await;
        assert_eq!(errors.len(), 1, "{errors:?}");
        let err = error_for(&errors, "desc_spin.wasm");
        assert!(matches!(err, PluginError::DescribeTimeout { .. }), "{err}");
        add_is_calc(&reg, "add").await;
        err.to_string()
    };
    // The describe cache remembers the refusal by the component's digest.
    let remembered: Vec<PathBuf> = std::fs::read_dir(&cdir)
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.to_string_lossy().contains("-describe2-")
                && std::fs::read_to_string(p).is_ok_and(|t| t.contains("Rejected"))
        })
        .collect();
    assert_eq!(remembered.len(), 1, "{remembered:?}");
    // Prove the next start does not run describe() again: spoil the spinner's compiled
    // artifact. Running it would need the artifact (and would recompile it); refusing from
    // the cache does not touch it.
    let digest = remembered[0]
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.split('-').next())
        .unwrap_or_else(|| panic!("no digest"))
        .to_string();
    let artifact = std::fs::read_dir(&cdir)
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            let n = p.to_string_lossy();
            n.contains(&digest) && n.ends_with(".cwasm")
        })
        .unwrap_or_else(|| panic!("no artifact for {digest}"));
    std::fs::remove_file(&artifact).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&artifact, b"not an artifact").unwrap_or_else(|e| panic!("{e}"));
    let engine = engine_with_cache(Some(cdir.clone()));
    let (reg, errors) = load(&engine, dir.path()).await;
    assert_eq!(errors.len(), 1, "{errors:?}");
    let again = error_for(&errors, "desc_spin.wasm");
    assert!(
        matches!(again, PluginError::DescribeTimeout { .. }),
        "{again}"
    );
    assert_eq!(again.to_string(), first);
    assert_eq!(
        std::fs::read(&artifact).unwrap_or_default(),
        b"not an artifact",
        "describe() ran again instead of being refused from the cache"
    );
    add_is_calc(&reg, "add").await;
}

#[tokio::test]
async fn describe_with_100000_tools_is_refused_by_the_tool_cap() {
    let dir = tempdir();
    install(dir.path(), "desc_flood", None);
    install(dir.path(), "calc", None);
    let (reg, errors) = load(support::engine(), dir.path()).await;
    assert_eq!(errors.len(), 1, "{errors:?}");
    let err = error_for(&errors, "desc_flood.wasm");
    assert!(matches!(err, PluginError::DescribeTooLarge { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("100000 tools described, at most 256 allowed"),
        "{err}"
    );
    assert!(!reg.contains("flood_0"));
    add_is_calc(&reg, "add").await;
}

#[tokio::test]
async fn describe_with_a_1_mib_description_is_refused_by_the_size_cap() {
    let dir = tempdir();
    install(dir.path(), "desc_huge", None);
    install(dir.path(), "calc", None);
    let (reg, errors) = load(support::engine(), dir.path()).await;
    assert_eq!(errors.len(), 1, "{errors:?}");
    let err = error_for(&errors, "desc_huge.wasm");
    assert!(matches!(err, PluginError::DescribeTooLarge { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("\"huge\": the description is 1048576 bytes, at most 4096 allowed"),
        "{text}"
    );
    // The message quotes what the plugin sent only in bounded, escaped form.
    assert!(text.len() < 512, "{} bytes", text.len());
    add_is_calc(&reg, "add").await;
}

// ---- name squatting -------------------------------------------------------------------

#[tokio::test]
async fn a_plugin_cannot_squat_another_plugins_tool_name_whatever_the_order() {
    // `aaa_shadow` sorts before `calc`, `zzz_shadow` after it: both outcomes must be the
    // same shape: every `add` qualified, no plugin refused.
    for shadow in ["aaa_shadow", "zzz_shadow"] {
        let dir = tempdir();
        std::fs::copy(
            support::wasm("aaa_shadow"),
            dir.path().join(format!("{shadow}.wasm")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        install(dir.path(), "calc", None);
        let (reg, errors) = load(support::engine(), dir.path()).await;
        assert!(errors.is_empty(), "{shadow}: {errors:?}");
        assert!(!reg.contains("add"), "{shadow}: nobody may own `add`");
        let mut names = reg.list_tools();
        names.sort();
        let q = format!("{shadow}__add");
        let mut want = vec!["calc__add", "divide", "mean", "multiply", q.as_str()];
        want.sort();
        assert_eq!(names, want, "{shadow}");
        add_is_calc(&reg, "calc__add").await;
        let inv = call(&reg, &q, json!({"x": 2, "y": 3})).await;
        assert_eq!(
            inv.output.map(|o| o.canonical).ok(),
            Some(json!("shadowed: 6")),
            "{shadow}"
        );
        // calc's other tools keep their plain names.
        let inv = call(&reg, "multiply", json!({"x": 2, "y": 3})).await;
        assert!(inv.is_ok(), "{}", inv.model_text());
    }
}

#[tokio::test]
async fn a_name_already_registered_is_qualified_not_refused() {
    let dir = tempdir();
    install(dir.path(), "calc", None);
    let reg = ToolRegistry::new();
    let engine = support::engine();
    let shadow = tempdir();
    let path = shadow.path().join("aaa_shadow.wasm");
    std::fs::copy(support::wasm("aaa_shadow"), &path).unwrap_or_else(|e| panic!("{e}"));
    let p = Plugin::load(engine, &path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(folder::register_plugin(&reg, &p).ok(), Some(1));
    // The folder's calc comes second: its `add` becomes `calc__add`, it is not refused.
    let (_plugins, errors) = folder::load_into(engine, &reg, dir.path()).await;
    assert!(errors.is_empty(), "{errors:?}");
    add_is_calc(&reg, "calc__add").await;
    assert!(reg.contains("multiply"));
}

// ---- policies that grant the plugins folder or the cache ----------------------------

#[tokio::test]
async fn a_policy_granting_the_plugins_folder_or_the_cache_is_refused() {
    let cache = tempdir();
    let cdir = cache.path().join("c");
    let engine = engine_with_cache(Some(cdir.clone()));
    let config = tempdir();
    let config_file = config.path().join("toolhost.toml");
    std::fs::write(&config_file, "").unwrap_or_else(|e| panic!("{e}"));
    engine.protect_path(&config_file);
    let cdir_real = engine
        .cache_dir()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| panic!("cache disabled: {:?}", engine.cache_problem()));
    let show = |p: &Path| p.display().to_string();
    let cases: Vec<(&str, String)> = vec![
        ("write", ".".into()),
        ("read", ".".into()),
        ("write", "..".into()),
        ("read", show(&cdir_real)),
        ("write", show(&cdir_real.join("index"))),
        ("read", show(config.path())),
    ];
    for (key, entry) in cases {
        let dir = tempdir();
        install(dir.path(), "calc", None);
        install(
            dir.path(),
            "hostile",
            Some(&format!("{key} = [{entry:?}]\n")),
        );
        let (reg, errors) = load(&engine, dir.path()).await;
        assert_eq!(errors.len(), 1, "{key} = {entry}: {errors:?}");
        let err = error_for(&errors, "hostile.wasm");
        let text = err.to_string();
        assert!(
            matches!(
                err,
                PluginError::Policy {
                    source: toolhost_wasm::PolicyError::Forbidden { .. },
                    ..
                }
            ) && text.contains("hostile.toml")
                && text.contains(&format!("`{key}`"))
                && text.contains("not grantable"),
            "{key} = {entry}: {text}"
        );
        add_is_calc(&reg, "add").await;
    }
    // A symlink into the plugins folder is resolved before the check.
    let dir = tempdir();
    let elsewhere = tempdir();
    let link = elsewhere.path().join("innocent");
    std::os::unix::fs::symlink(dir.path(), &link).unwrap_or_else(|e| panic!("{e}"));
    install(dir.path(), "calc", None);
    install(
        dir.path(),
        "hostile",
        Some(&format!("write = [{:?}]\n", show(&link))),
    );
    let (reg, errors) = load(&engine, dir.path()).await;
    assert!(
        error_for(&errors, "hostile.wasm")
            .to_string()
            .contains("not grantable"),
        "{errors:?}"
    );
    add_is_calc(&reg, "add").await;

    // The good path: a dedicated data folder inside the plugins folder is granted, and
    // the plugin still cannot reach calc's files beside it.
    let dir = tempdir();
    std::fs::create_dir_all(dir.path().join("data/hostile")).unwrap_or_else(|e| panic!("{e}"));
    install(dir.path(), "calc", Some("timeout_ms = 1000\n"));
    install(
        dir.path(),
        "hostile",
        Some("read = [\"./data/hostile\"]\nwrite = [\"./data/hostile\"]\n"),
    );
    let (reg, errors) = load(&engine, dir.path()).await;
    assert!(errors.is_empty(), "{errors:?}");
    let inside = dir.path().join("data/hostile/note.txt");
    let inv = call(
        &reg,
        "write_path",
        json!({"path": inside, "content": "fine"}),
    )
    .await;
    assert!(inv.is_ok(), "{}", inv.model_text());
    let policy = dir.path().join("calc.toml");
    let inv = call(
        &reg,
        "write_path",
        json!({"path": policy, "content": "timeout_ms = 600000\n"}),
    )
    .await;
    err_text(&inv);
    assert_eq!(
        std::fs::read_to_string(&policy).ok().as_deref(),
        Some("timeout_ms = 1000\n")
    );
    add_is_calc(&reg, "add").await;
}

// ---- the compile cache is code --------------------------------------------------------

/// The artifact files (`*.cwasm`) in a cache folder.
fn artifacts(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
                .collect()
        })
        .unwrap_or_default()
}

/// A cache folder in `root/c` whose artifact for calc's digest is really the compiled
/// `files` component (planted), with no describe cache or index to short-cut the load.
fn planted_cache(root: &Path, plugins: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let cdir = root.join("c");
    let scratch = root.join("scratch");
    // Compile calc (to learn its artifact name) and files (the code to plant).
    let e1 = engine_with_cache(Some(cdir.clone()));
    let calc = std::fs::read(plugins.join("calc.wasm")).unwrap_or_else(|e| panic!("{e}"));
    e1.compile(&calc, Path::new("calc.wasm"))
        .unwrap_or_else(|e| panic!("{e}"));
    let e2 = engine_with_cache(Some(scratch.clone()));
    let files = std::fs::read(support::wasm("files")).unwrap_or_else(|e| panic!("{e}"));
    e2.compile(&files, Path::new("files.wasm"))
        .unwrap_or_else(|e| panic!("{e}"));
    let calc_art = artifacts(&cdir)
        .pop()
        .unwrap_or_else(|| panic!("no calc artifact"));
    let files_art = artifacts(&scratch)
        .pop()
        .unwrap_or_else(|| panic!("no files artifact"));
    std::fs::remove_file(&calc_art).unwrap_or_else(|e| panic!("{e}"));
    std::fs::copy(&files_art, &calc_art).unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&calc_art, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_else(|e| panic!("{e}"));
    cdir
}

/// Loads calc from `plugins` with the cache `cdir`; returns the engine and the registry.
async fn load_calc(cdir: &Path, plugins: &Path) -> (WasmEngine, ToolRegistry, Vec<PluginError>) {
    let engine = engine_with_cache(Some(cdir.to_path_buf()));
    let (reg, errors) = load(&engine, plugins).await;
    (engine, reg, errors)
}

#[tokio::test]
async fn a_compile_cache_others_can_write_is_not_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let plugins = tempdir();
    install(plugins.path(), "calc", None);
    let set_mode = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("{e}"))
    };

    // Control: in a private cache, the planted artifact IS what runs (the host trusts its
    // own cache), so the checks below are what stops it.
    let root = tempdir();
    let cdir = planted_cache(root.path(), plugins.path());
    let (_e, reg, errors) = load_calc(&cdir, plugins.path()).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert!(
        reg.contains("read_file") && !reg.contains("add"),
        "the planted artifact was not used: {:?}",
        reg.list_tools()
    );

    // The cache folder writable by group, by others, a folder above it writable by others
    // (not sticky): the cache is not used, calc is compiled in memory and is calc.
    // (case, chmod the cache's parent instead of the cache, mode)
    let cases = [
        ("g+w", false, 0o770),
        ("0777", false, 0o777),
        ("parent 0777", true, 0o777),
    ];
    for (what, parent, mode) in cases {
        let root = tempdir();
        let cdir = planted_cache(root.path(), plugins.path());
        let t = if parent {
            root.path().to_path_buf()
        } else {
            cdir.clone()
        };
        set_mode(&t, mode);
        let (engine, reg, errors) = load_calc(&cdir, plugins.path()).await;
        assert!(errors.is_empty(), "{what}: {errors:?}");
        assert!(engine.cache_dir().is_none(), "{what}: cache still in use");
        let why = engine.cache_problem().unwrap_or_default().to_string();
        assert!(
            why.contains(&t.display().to_string()) && why.contains("writable by group or others"),
            "{what}: {why}"
        );
        add_is_calc(&reg, "add").await;
        assert!(!reg.contains("read_file"), "{what}");
        // The good path: made private again, the cache is used (and this time it holds
        // the planted artifact, which proves the check, not luck, kept it out).
        set_mode(&t, if t == cdir { 0o700 } else { 0o755 });
        let (engine, _reg, _errors) = load_calc(&cdir, plugins.path()).await;
        assert!(
            engine.cache_dir().is_some(),
            "{what}: {:?}",
            engine.cache_problem()
        );
    }

    // A single artifact file writable by others is ignored (calc recompiled), not run.
    let root = tempdir();
    let cdir = planted_cache(root.path(), plugins.path());
    for a in artifacts(&cdir) {
        set_mode(&a, 0o666);
    }
    let (engine, reg, errors) = load_calc(&cdir, plugins.path()).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert!(engine.cache_dir().is_some());
    add_is_calc(&reg, "add").await;
    assert!(!reg.contains("read_file"));
}

#[tokio::test]
async fn a_compile_cache_owned_by_another_user_is_not_trusted() {
    let plugins = tempdir();
    install(plugins.path(), "calc", None);
    let root = tempdir();
    let cdir = planted_cache(root.path(), plugins.path());
    // Changing a folder's owner needs root; as another user this attack cannot be staged.
    if let Err(e) = std::os::unix::fs::chown(&cdir, Some(65534), Some(65534)) {
        assert!(
            std::env::var_os("CI").is_none() || e.kind() == std::io::ErrorKind::PermissionDenied,
            "chown: {e}"
        );
        eprintln!("not root ({e}): the foreign-owner case needs root to stage; skipped");
        return;
    }
    let (engine, reg, errors) = load_calc(&cdir, plugins.path()).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert!(engine.cache_dir().is_none());
    let why = engine.cache_problem().unwrap_or_default().to_string();
    assert!(why.contains("owned by uid 65534"), "{why}");
    add_is_calc(&reg, "add").await;
    assert!(!reg.contains("read_file"));

    // An artifact file owned by another user, in a private folder: ignored.
    std::os::unix::fs::chown(&cdir, Some(0), Some(0)).unwrap_or_else(|e| panic!("{e}"));
    for a in artifacts(&cdir) {
        std::os::unix::fs::chown(&a, Some(65534), Some(65534)).unwrap_or_else(|e| panic!("{e}"));
    }
    let (engine, reg, errors) = load_calc(&cdir, plugins.path()).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert!(engine.cache_dir().is_some(), "{:?}", engine.cache_problem());
    add_is_calc(&reg, "add").await;
    assert!(!reg.contains("read_file"));
}

// ---- the memory cap is per call, not per memory ---------------------------------------

/// A component whose core module has seven memories: `grab` grows memories 1..=6 by
/// 62 MiB each (each under a 64 MiB cap on its own, 372 MiB together). Built from WAT
/// text with wit-component, like `wasm-tools component new`.
fn multi_memory_component() -> Vec<u8> {
    const RECORD: u32 = 256; // one tool-info record
    const LIST: u32 = 512; // describe's return area: (ptr, len)
    const RESULT: u32 = 700; // call's return area
    let grows: String = (1..=6)
        .map(|m| format!("(drop (memory.grow $m{m} (i32.const 992)))\n"))
        .collect();
    let memories: String = (1..=6).map(|m| format!("(memory $m{m} 1)\n")).collect();
    let name = "grab";
    let desc = "Grows six memories by 62 MiB each";
    let params = r#"{"type":"object","properties":{}}"#;
    let store = |at: u32, v: u32| format!("(i32.store (i32.const {at}) (i32.const {v}))\n");
    let mut describe = String::new();
    for (i, v) in [
        16,
        name.len() as u32,
        32,
        desc.len() as u32,
        80,
        params.len() as u32,
        0,
        0,
        0,
        0,
    ]
    .into_iter()
    .enumerate()
    {
        describe += &store(RECORD + 4 * i as u32, v);
    }
    describe += &store(LIST, RECORD);
    describe += &store(LIST + 4, 1);
    let wat = format!(
        r#"(module
        (memory (export "memory") 1)
        {memories}
        (global $bump (mut i32) (i32.const 4096))
        (data (i32.const 16) "{name}")
        (data (i32.const 32) "{desc}")
        (data (i32.const 80) "{params_escaped}")
        (data (i32.const 600) "1")
        (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
          (local $p i32)
          (local.set $p (i32.and (i32.add (global.get $bump) (i32.const 7)) (i32.const -8)))
          (global.set $bump (i32.add (local.get $p) (local.get 3)))
          (local.get $p))
        (func (export "describe") (result i32)
          {describe}
          (i32.const {LIST}))
        (func (export "call") (param i32 i32 i32 i32 i32 i32 i32 i32 i32 i32) (result i32)
          {grows}
          (i32.store8 (i32.const {RESULT}) (i32.const 0))
          (i32.store (i32.const {r4}) (i32.const 600))
          (i32.store (i32.const {r8}) (i32.const 1))
          (i32.store8 (i32.const {r12}) (i32.const 0))
          (i32.const {RESULT}))
      )"#,
        params_escaped = params.replace('"', "\\\""),
        r4 = RESULT + 4,
        r8 = RESULT + 8,
        r12 = RESULT + 12,
    );
    let mut module = wat::parse_str(&wat).unwrap_or_else(|e| panic!("{e}"));
    let mut resolve = wit_parser::Resolve::default();
    let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
    let (pkg, _) = resolve.push_dir(&wit).unwrap_or_else(|e| panic!("{e:#}"));
    let world = resolve
        .select_world(&[pkg], Some("tool"))
        .unwrap_or_else(|e| panic!("{e:#}"));
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    wit_component::ComponentEncoder::default()
        .module(&module)
        .and_then(|e| e.validate(true).encode())
        .unwrap_or_else(|e| panic!("{e:#}"))
}

#[tokio::test]
async fn several_memories_share_one_memory_cap() {
    let dir = tempdir();
    std::fs::write(dir.path().join("multimem.wasm"), multi_memory_component())
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.path().join("multimem.toml"), "memory_mb = 64\n")
        .unwrap_or_else(|e| panic!("{e}"));
    install(dir.path(), "calc", None);
    // The pooling allocator (the default) takes one memory per core module: such a
    // module is refused at load, naming the limit, and the others load.
    let (reg, errors) = load(support::engine(), dir.path()).await;
    let err = error_for(&errors, "multimem.wasm").to_string();
    assert!(err.contains("memories count of 7"), "{err}");
    still_works(&reg).await;
    // Without pooling (an engine option) the module is accepted, so the limiter is all
    // that stands between one call and 7 x 62 MiB. (Under pooling the same sum holds for
    // a component with several core instances, each with its memory.)
    let engine = WasmEngine::with_options(EngineOptions {
        pooling: false,
        cache_dir: None,
        ..EngineOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let (reg, errors) = load(&engine, dir.path()).await;
    assert!(errors.is_empty(), "{errors:?}");
    let inv = call(&reg, "grab", json!({})).await;
    assert!(
        matches!(&inv.output, Err(ToolError::LimitExceeded(..))),
        "{}",
        inv.model_text()
    );
    assert!(
        err_text(&inv).contains("memory limit 64 MiB exceeded"),
        "{}",
        err_text(&inv)
    );
    still_works(&reg).await;
    // Under a cap that fits all six grows, the same call succeeds: the cap, not a bug
    // in the fixture, stopped it above.
    std::fs::write(dir.path().join("multimem.toml"), "memory_mb = 512\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let (reg, errors) = load(&engine, dir.path()).await;
    assert!(errors.is_empty(), "{errors:?}");
    let inv = call(&reg, "grab", json!({})).await;
    assert!(inv.is_ok(), "{}", inv.model_text());
}
