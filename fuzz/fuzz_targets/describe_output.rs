//! Fuzzes how the host takes a component's `describe()` output: `accept_described` (the
//! caps on tool count and field sizes, then the parameter schemas parsed as JSON), on
//! tool lists built from arbitrary bytes.
//!
//! Input layout: records separated by `\x01`, fields of a record by `\x02`: name,
//! description, parameters (JSON text), permissions (comma-separated), tags
//! (comma-separated). A record's first byte, when it is `\x03`, repeats its description
//! 300 times (to reach the caps cheaply); a leading `\x04` on the input repeats the whole
//! list 40 times (to reach the tool-count cap). Checks beyond "no panic": the outcome is
//! exactly what the caps say — too large if and only if some cap is exceeded, else
//! invalid if and only if some schema is not JSON, else every tool comes back unchanged
//! with its schema parsed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_core::tools::Permission;
use toolhost_wasm::describe::describe_limits::*;
use toolhost_wasm::describe::{DescribeRefusal, DescribedTool, accept_described};

fn list(s: &str) -> Vec<&str> {
    if s.is_empty() {
        Vec::new()
    } else {
        s.split(',').collect()
    }
}

fn tool(record: &str) -> DescribedTool {
    let (repeat, record) = match record.strip_prefix('\x03') {
        Some(rest) => (300, rest),
        None => (1, record),
    };
    let mut f = record.split('\x02');
    let mut next = || f.next().unwrap_or("");
    let name = next().to_string();
    let description = next().repeat(repeat);
    let parameters = next().to_string();
    let permissions = list(next())
        .into_iter()
        .map(|p| p.parse().unwrap_or(Permission::Custom(p.to_string())))
        .collect();
    let tags = list(next()).into_iter().map(str::to_string).collect();
    DescribedTool {
        name,
        description,
        parameters,
        permissions,
        tags,
    }
}

fn over_a_cap(tools: &[DescribedTool]) -> bool {
    tools.len() > MAX_TOOLS
        || tools.iter().any(|t| {
            t.name.len() > MAX_NAME_BYTES
                || t.description.len() > MAX_DESCRIPTION_BYTES
                || t.parameters.len() > MAX_SCHEMA_BYTES
                || t.permissions.len() > MAX_PERMISSIONS
                || t.tags.len() > MAX_TAGS
                || t.tags.iter().any(|g| g.len() > MAX_TAG_BYTES)
                || t.permissions
                    .iter()
                    .any(|p| matches!(p, Permission::Custom(c) if c.len() > MAX_TAG_BYTES))
        })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (times, text) = match text.strip_prefix('\x04') {
        Some(rest) => (40, rest),
        None => (1, &*text),
    };
    let one: Vec<DescribedTool> = if text.is_empty() {
        Vec::new()
    } else {
        text.split('\x01').map(tool).collect()
    };
    let raw: Vec<DescribedTool> = (0..times).flat_map(|_| one.iter().cloned()).collect();
    let too_large = over_a_cap(&raw);
    let bad_json = raw
        .iter()
        .any(|t| serde_json::from_str::<serde_json::Value>(&t.parameters).is_err());
    match accept_described(raw.clone()) {
        Ok(specs) => {
            assert!(
                !too_large && !bad_json,
                "accepted output over a cap or with bad JSON"
            );
            assert_eq!(specs.len(), raw.len());
            for (spec, t) in specs.iter().zip(&raw) {
                assert_eq!(spec.name, t.name);
                assert_eq!(spec.description, t.description);
                assert_eq!(spec.permissions, t.permissions);
                assert_eq!(spec.tags, t.tags);
                let parsed: serde_json::Value = serde_json::from_str(&t.parameters).unwrap();
                assert_eq!(spec.parameters, parsed);
            }
        }
        Err(e @ DescribeRefusal::TooLarge { .. }) => {
            assert!(too_large, "refused as too large within the caps: {e}");
        }
        Err(e @ DescribeRefusal::InvalidJson { .. }) => {
            assert!(!too_large && bad_json, "refused as invalid JSON: {e}");
        }
    }
});
