//! [`Grant`]: the capabilities one tool gets on each call, decided once at load from what
//! the tool **declared** and what the **policy** (the operator's approval ∩ the plugin's
//! request) offers:
//!
//! | policy key | needs declared | becomes |
//! |---|---|---|
//! | `read` | Read, Write or FileSystem | read-only preopen at the same path |
//! | `write` | Write | read-write preopen at the same path: create, write, truncate |
//! | `write` + Delete declared | Write and Delete | also unlink, rmdir and rename in it |
//! | `network` | Network | wasi:http allowlist (scheme, host, port) |
//! | `sockets` | Network | TCP to allowlisted IP:port (resolved); lookups of allowlisted names only |
//! | `env` | (nothing) | the named host variables |
//! | `config` | (nothing) | `wasi:config/store` reads of the keys granted and given |
//!
//! A grant is the one capability type ([`Capabilities`]) with the limits of the policy,
//! and [`crate::sandbox`] turns it into the call's WASI context in one place: adding a
//! permission kind means a field there, a row here and a line in that builder.
//!
//! Granted folders are opened once, at load, and held ([`crate::dirs`]); each call's
//! preopens come from those handles, never from re-resolving the path. Deleting and
//! renaming are checked in [`crate::guard`]; opening with truncate counts as writing (the
//! same bytes could be overwritten by a plain write), not as deleting.

use toolhost_caps::Capabilities;
use toolhost_core::secrets::Redactor;
use toolhost_core::tools::{Capability, Permission};

use crate::config::ConfigValues;
use crate::dirs::HeldDirs;
use crate::policy::Policy;

/// The concrete capabilities one tool gets on each call.
#[derive(Debug, Clone, Default)]
pub struct Grant {
    /// What the call may use (folders, network rules, sockets, env names, config keys)
    /// and its limits (the policy's).
    pub caps: Capabilities,
    /// Unlink, rmdir and rename inside the write folders (the tool declared Delete).
    pub delete: bool,
    /// The read and write folders, opened at load and held (see [`crate::dirs`]).
    pub held: HeldDirs,
    /// The `wasi:config/store` values of the granted keys the operator gave.
    pub config: ConfigValues,
    /// Replaces those values in everything the call returns or logs.
    pub redactor: Redactor,
    /// Why some offered capability was not granted (for `inspect` and denial messages).
    pub withheld: Vec<String>,
    /// The policy file to name in denial messages ("add ... to `network` in calc.toml").
    pub file_name: String,
}

impl Grant {
    /// No capability under `policy`'s limits: what `describe()` runs with.
    pub fn nothing(policy: &Policy) -> Grant {
        Grant {
            caps: Capabilities {
                timeout_ms: policy.caps.timeout_ms,
                fuel: policy.caps.fuel,
                memory_mb: policy.caps.memory_mb,
                output_kb: policy.caps.output_kb,
                ..Capabilities::default()
            },
            file_name: policy.file_name(),
            ..Grant::default()
        }
    }

    /// Declared ∩ policy: a capability of the policy is granted when a declared
    /// permission unlocks it ([`Permission::unlocks`], the one permission table).
    pub fn effective(policy: &Policy, declared: &[Permission]) -> Grant {
        let has = |c: Capability| c.granted_by(declared);
        let offered = &policy.caps;
        let config = policy.config_values.only(&offered.config);
        let mut g = Grant::nothing(policy);
        g.caps.env = offered.env.clone();
        g.caps.config = offered.config.clone();
        g.redactor = config.redactor();
        g.config = config;
        if has(Capability::ReadDirs) {
            g.caps.read = offered.read.clone();
        } else if !offered.read.is_empty() {
            g.withheld
                .push("`read` dirs withheld: the tool did not declare Read".into());
        }
        if has(Capability::WriteDirs) {
            g.caps.write = offered.write.clone();
            g.delete = has(Capability::DeleteEntries);
            if !g.delete && !g.caps.write.is_empty() {
                g.withheld.push(
                    "deleting and renaming in `write` dirs withheld: the tool did not declare Delete"
                        .into(),
                );
            }
        } else if !offered.write.is_empty() {
            g.withheld
                .push("`write` dirs withheld: the tool did not declare Write".into());
        }
        if has(Capability::Network) {
            g.caps.network = offered.network.clone();
            g.caps.sockets = offered.sockets;
        } else if !offered.network.is_empty() || offered.sockets {
            g.withheld
                .push("`network` withheld: the tool did not declare Network".into());
        }
        g.held = HeldDirs::open(&g.caps.read, &g.caps.write, &offered.write);
        g
    }

    /// Linear-memory cap per call, bytes (the policy default when unset).
    pub fn memory_bytes(&self) -> usize {
        crate::policy::mib(
            self.caps
                .memory_mb
                .unwrap_or(crate::policy::DEFAULT_MEMORY_MB),
        )
    }

    /// Cap of captured stdout/stderr, bytes each (the policy default when unset).
    pub fn output_bytes(&self) -> usize {
        crate::policy::kib(
            self.caps
                .output_kb
                .unwrap_or(crate::policy::DEFAULT_OUTPUT_KB),
        )
    }
}
