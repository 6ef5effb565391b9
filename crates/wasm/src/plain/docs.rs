//! The doc comments of a plain WIT component: WIT `///` comments travel in a
//! `package-docs` custom section (the format wit-parser writes: a version byte, then
//! JSON with the docs of the package's worlds, interfaces and their functions). This
//! module finds that section in the component bytes (at any depth: toolchains leave it in
//! the core module) and reads the function docs from it.
//!
//! The JSON is read with a small serde model of its own rather than wit-parser's
//! `PackageMetadata`: that type keeps its fields private and can only inject the docs into
//! a `Resolve` of the original WIT package, which a compiled component no longer carries.
//! Unknown fields are ignored, so a newer format still yields the docs it shares.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// Largest `package-docs` section read, bytes; a bigger one is ignored (no docs).
pub(crate) const MAX_DOCS_SECTION_BYTES: usize = 1 << 20;

/// The name of the custom section.
const SECTION: &str = "package-docs";

/// The function docs found in a component.
#[derive(Debug, Default, Clone)]
pub(crate) struct Docs {
    /// Docs of world-level functions, by function name.
    world_funcs: BTreeMap<String, String>,
    /// Docs of interface functions, by interface name (its name inside its package, or
    /// the name of an inline interface) and function name.
    iface_funcs: BTreeMap<String, BTreeMap<String, String>>,
}

impl Docs {
    /// The docs of the world-level function `func`.
    pub(crate) fn world_func(&self, func: &str) -> Option<&str> {
        self.world_funcs.get(func).map(String::as_str)
    }

    /// The docs of `func` in the interface called `iface` (its short name).
    pub(crate) fn iface_func(&self, iface: &str, func: &str) -> Option<&str> {
        self.iface_funcs.get(iface)?.get(func).map(String::as_str)
    }
}

#[derive(Deserialize, Default)]
struct PackageJson {
    #[serde(default)]
    worlds: BTreeMap<String, WorldJson>,
    #[serde(default)]
    interfaces: BTreeMap<String, IfaceJson>,
}

#[derive(Deserialize, Default)]
struct WorldJson {
    /// Imported or exported functions (the export half goes to `func_exports` when a
    /// function of the same name is also imported).
    #[serde(default)]
    funcs: BTreeMap<String, Value>,
    #[serde(default)]
    func_exports: BTreeMap<String, Value>,
    /// Inline interfaces, imported or exported.
    #[serde(default)]
    interfaces: BTreeMap<String, IfaceJson>,
    #[serde(default)]
    interface_exports: BTreeMap<String, IfaceJson>,
}

#[derive(Deserialize, Default)]
struct IfaceJson {
    #[serde(default)]
    funcs: BTreeMap<String, Value>,
}

/// A function's docs: a string (format 0) or `{"docs": ...}` (format 1).
fn func_docs(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(m) => m.get("docs")?.as_str().map(str::to_string),
        _ => None,
    }
}

fn funcs(m: &BTreeMap<String, Value>) -> impl Iterator<Item = (String, String)> + '_ {
    m.iter()
        .filter_map(|(name, v)| Some((name.clone(), func_docs(v)?)))
}

/// The docs in the first `package-docs` section of `bytes`; empty when there is none, it
/// is over [`MAX_DOCS_SECTION_BYTES`], or it cannot be read (docs are optional: the
/// fallback descriptions apply).
pub(crate) fn read(bytes: &[u8]) -> Docs {
    let Some(data) = section(bytes) else {
        return Docs::default();
    };
    let Some((&version, json)) = data.split_first() else {
        return Docs::default();
    };
    if version > 1 {
        tracing::debug!(
            version,
            "package-docs section of an unknown version ignored"
        );
        return Docs::default();
    }
    let parsed: PackageJson = match serde_json::from_slice(json) {
        Ok(p) => p,
        Err(e) => {
            tracing::debug!("package-docs section ignored: {e}");
            return Docs::default();
        }
    };
    let mut docs = Docs::default();
    for (name, iface) in &parsed.interfaces {
        docs.iface_funcs
            .entry(name.clone())
            .or_default()
            .extend(funcs(&iface.funcs));
    }
    for world in parsed.worlds.values() {
        docs.world_funcs.extend(funcs(&world.funcs));
        docs.world_funcs.extend(funcs(&world.func_exports));
        for (name, iface) in world.interfaces.iter().chain(&world.interface_exports) {
            docs.iface_funcs
                .entry(name.clone())
                .or_default()
                .extend(funcs(&iface.funcs));
        }
    }
    docs
}

/// The contents of the first `package-docs` custom section, at any nesting depth.
fn section(bytes: &[u8]) -> Option<&[u8]> {
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload {
            Ok(wasmparser::Payload::CustomSection(c)) if c.name() == SECTION => {
                return (c.data().len() <= MAX_DOCS_SECTION_BYTES).then(|| c.data());
            }
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    /// A core module holding one `package-docs` custom section with `data`.
    fn module_with(data: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        leb(SECTION.len(), &mut body);
        body.extend(SECTION.as_bytes());
        body.extend(data);
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        m.push(0);
        leb(body.len(), &mut m);
        m.extend(body);
        m
    }

    #[test]
    fn reads_world_and_interface_function_docs_in_both_formats() {
        let json = serde_json::json!({
            "docs": "The package.",
            "worlds": {"w": {
                "funcs": {"f": "F docs."},
                "func_exports": {"g": {"docs": "G docs.", "stability": {"stable": {"since": "1.0.0"}}}},
                "interface_exports": {"inline": {"funcs": {"h": {"docs": "H docs."}}}},
            }},
            "interfaces": {"kinds": {"funcs": {"echo": {"docs": "Echo docs."}}, "types": {}}},
        });
        let mut section = vec![1u8];
        section.extend(serde_json::to_vec(&json).unwrap_or_default());
        let docs = read(&module_with(&section));
        assert_eq!(docs.world_func("f"), Some("F docs."));
        assert_eq!(docs.world_func("g"), Some("G docs."));
        assert_eq!(docs.iface_func("inline", "h"), Some("H docs."));
        assert_eq!(docs.iface_func("kinds", "echo"), Some("Echo docs."));
        assert_eq!(docs.iface_func("kinds", "nope"), None);
    }

    #[test]
    fn garbage_sections_give_no_docs() {
        for data in [&b""[..], b"\x07{}", b"\x01not json", b"\x01[1]"] {
            let docs = read(&module_with(data));
            assert!(docs.world_funcs.is_empty() && docs.iface_funcs.is_empty());
        }
        assert!(read(b"not wasm at all").world_funcs.is_empty());
    }
}
