//! Fuzzes render truncation: the result is valid UTF-8 (it is a `String`, so slicing
//! must never split a character or panic), short text is unchanged, and cut text keeps
//! the head and the tail of the original.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_core::tools::truncate_render;

fuzz_target!(|input: (u16, String)| {
    let (max, text) = input;
    let max = usize::from(max);
    let (out, cut) = truncate_render(&text, max);
    if text.len() <= max {
        assert!(!cut);
        assert_eq!(out, text);
    } else {
        assert!(cut);
        assert!(text.starts_with(out.split("\n...[truncated").next().unwrap_or("")));
        assert!(text.ends_with(out.rsplit("]...\n").next().unwrap_or("")));
    }
});
