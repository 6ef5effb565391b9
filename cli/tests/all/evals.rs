//! The tool-selection cases of every example plugin (`plugins/evals/*.toml`), replayed by
//! the real `toolhost eval` against each built plugin alone, with a scripted model that
//! makes the call each case expects. What this holds in CI: every case file parses, every
//! expected tool is still offered under its name, and the arguments the cases describe
//! still fit the tool's schema (a renamed tool or a changed schema fails here). A real
//! model judges the descriptions: `toolhost eval FILE --base-url ...` (docs/llm.md).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::llm_cli::{against_script, exits_saying, openai_call, openai_text};

/// Each example plugin, its cases file and the folders its request file wants.
const PLUGINS: &[(&str, &[&str])] = &[
    ("calc", &[]),
    ("fetch", &[]),
    ("files", &["files"]),
    ("js_http", &[]),
    ("py_files", &["py_files"]),
    ("c_checksum", &["c_checksum"]),
];

fn evals_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/evals")
}

/// The value a constraint asks for: what a model meeting it would send.
fn satisfying(constraint: &Value) -> Option<Value> {
    let Some(rule) = constraint.as_object() else {
        return Some(constraint.clone());
    };
    if rule.get("present") == Some(&Value::Bool(false)) {
        return None;
    }
    rule.get("equals")
        .cloned()
        .or_else(|| rule.get("one_of").and_then(|o| o.get(0)).cloned())
        .or_else(|| rule.get("contains").cloned())
        .or(Some(json!("present")))
}

/// The scripted model's answers for `cases`: the expected call built from each case's
/// constraints (then a closing text), or text alone for a case that expects no tool.
fn answers_for(cases: &[Value]) -> Vec<(&'static str, String)> {
    let json_type = "application/json";
    let mut answers = Vec::new();
    for case in cases {
        match case.get("expect_tool").and_then(Value::as_str) {
            Some(tool) => {
                let mut args = serde_json::Map::new();
                for (key, c) in case["args"].as_object().into_iter().flatten() {
                    if let Some(v) = satisfying(c) {
                        args.insert(key.clone(), v);
                    }
                }
                answers.push((
                    json_type,
                    openai_call(tool, &Value::Object(args).to_string()),
                ));
                answers.push((json_type, openai_text("done")));
            }
            None => answers.push((json_type, openai_text("No tool needed."))),
        }
    }
    answers
}

/// A work folder holding `plugin` alone (with the folders it requests).
fn folder_with(built: &Path, plugin: &str, folders: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for ext in ["wasm", "toml"] {
        let from = built.join(format!("{plugin}.{ext}"));
        std::fs::copy(&from, plugins.join(format!("{plugin}.{ext}")))
            .unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    }
    for f in folders {
        std::fs::create_dir_all(plugins.join("data").join(f)).unwrap();
    }
    std::fs::write(dir.path().join("toolhost.toml"), "").unwrap();
    dir
}

fn cases_of(file: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap();
    let parsed: toml::Value = toml::from_str(&text).unwrap();
    let parsed = serde_json::to_value(parsed).unwrap();
    parsed["case"].as_array().cloned().unwrap_or_default()
}

#[test]
fn the_cases_of_every_example_plugin_hold_against_the_built_plugin() {
    let wasm: Vec<String> = PLUGINS.iter().map(|(p, _)| format!("{p}.wasm")).collect();
    let wasm: Vec<&str> = wasm.iter().map(String::as_str).collect();
    let Some(built) = toolhost_testkit::built_plugins(&wasm) else {
        return;
    };
    // Every example plugin has a cases file, and every cases file a plugin.
    let files: Vec<String> = std::fs::read_dir(evals_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    assert_eq!(files.len(), PLUGINS.len(), "{files:?}");
    for (plugin, folders) in PLUGINS {
        let file = evals_dir().join(format!("{plugin}.toml"));
        let cases = cases_of(&file);
        assert!(cases.len() >= 2, "{plugin}: at least two cases");
        let dir = folder_with(&built, plugin, folders);
        let file_arg = file.to_str().unwrap();
        let (out, _) = against_script(dir.path(), &["eval", file_arg], answers_for(&cases));
        let n = cases.len();
        exits_saying(&out, 0, &[&format!("{n} of {n} case(s) passed")]);
    }
}

#[test]
fn a_case_whose_tool_changed_under_it_fails_the_eval() {
    let Some(built) = toolhost_testkit::built_plugins(&["calc.wasm"]) else {
        return;
    };
    let dir = folder_with(&built, "calc", &[]);
    // A case written for a schema calc does not have (`a`, `b` instead of `x`, `y`), and
    // one for a tool it does not offer: the model does as the cases say, and both fail.
    let cases = dir.path().join("stale.toml");
    std::fs::write(
        &cases,
        "[[case]]\nname = \"old schema\"\nprompt = \"40 + 2?\"\nexpect_tool = \"add\"\n\
         args = { a = 40, b = 2 }\n\n[[case]]\nname = \"renamed tool\"\n\
         prompt = \"40 + 2?\"\nexpect_tool = \"sum\"\nargs = { x = 40, y = 2 }\n",
    )
    .unwrap();
    let parsed = cases_of(&cases);
    let mut answers = answers_for(&parsed);
    // The loop answers a call of an unknown tool and asks the model again.
    answers.insert(3, ("application/json", openai_text("done")));
    let (out, _) = against_script(dir.path(), &["eval", cases.to_str().unwrap()], answers);
    exits_saying(
        &out,
        1,
        &[
            "FAIL old schema",
            "invalid arguments for tool 'add'",
            "FAIL renamed tool",
            "there is no tool named 'sum'",
            "0 of 2 case(s) passed",
        ],
    );
}
