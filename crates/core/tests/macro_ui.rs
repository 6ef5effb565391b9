//! Compile-fail tests of `#[tool]` and `#[toolbox]` (trybuild): every misuse is a
//! compile error at the right place, in words an author can act on. The expected
//! messages are the `.stderr` files under `tests/ui/` (regenerate them with
//! `TRYBUILD=overwrite` and read the diff).

#[test]
fn misuse_is_a_readable_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
