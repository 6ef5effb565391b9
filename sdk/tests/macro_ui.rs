//! Compile-fail tests of `#[toolhost_sdk::tool]` and `export!` (trybuild, built for the
//! host's target: the bindings compile there, nothing is linked). The expected messages
//! are the `.stderr` files under `tests/ui/` (regenerate them with `TRYBUILD=overwrite`
//! and read the diff). Run: `cargo test --manifest-path sdk/Cargo.toml`.

#[test]
fn misuse_is_a_readable_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
