//! A permission that does not exist.

/// Reboots the machine right now.
#[toolhost_core::tool(permissions = [root])]
fn reboot() {}

fn main() {}
