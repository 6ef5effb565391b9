//! Fuzzes the network-rule parser and matcher: a parsed rule must match its own host, and
//! nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_wasm::net::NetRule;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (rule_text, probe) = text.split_once('\n').unwrap_or((text, "example.com"));
    if let Ok(rule) = NetRule::parse(rule_text) {
        let _ = rule.matches(&rule.scheme, probe, rule.port);
        let _ = rule.matches("https", probe, 443);
        // Every rule allows what it allows, and meets itself in itself.
        assert!(
            rule.within(&rule),
            "rule {rule_text:?} is not within itself"
        );
        assert_eq!(rule.intersect(&rule).as_ref(), Some(&rule));
        if !rule.host.starts_with("*.") {
            assert!(
                rule.matches(&rule.scheme, &rule.host, rule.port),
                "rule {rule_text:?} does not match its own host {:?}",
                rule.host
            );
        }
    }
});
