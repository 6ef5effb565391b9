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
//! Granted folders are opened once, at load, and held ([`crate::dirs`]); each call's
//! preopens come from those handles, never from re-resolving the path. Deleting and
//! renaming are checked in [`crate::guard`]; opening with truncate counts as writing (the
//! same bytes could be overwritten by a plain write), not as deleting.

use std::path::PathBuf;

use toolhost_core::tools::{Capability, Permission};

use toolhost_core::secrets::Redactor;

use crate::config::ConfigValues;
use crate::dirs::HeldDirs;
use crate::net::NetRule;
use crate::policy::Policy;

/// The concrete capabilities one tool gets on each call.
#[derive(Debug, Clone, Default)]
pub struct Grant {
    /// Read-only preopens.
    pub read: Vec<PathBuf>,
    /// Read-write preopens.
    pub write: Vec<PathBuf>,
    /// The wasi:http allowlist.
    pub network: Vec<NetRule>,
    /// Raw TCP sockets to allowlisted addresses.
    pub sockets: bool,
    /// Unlink, rmdir and rename inside the write folders (the tool declared Delete).
    pub delete: bool,
    /// The read and write folders, opened at load and held (see [`crate::dirs`]).
    pub held: HeldDirs,
    /// Environment variable names passed in (when set on the host).
    pub env: Vec<String>,
    /// The `wasi:config/store` values of the granted keys the operator gave.
    pub config: ConfigValues,
    /// Replaces those values in everything the call returns or logs.
    pub redactor: Redactor,
    /// Why some offered capability was not granted (for `inspect` and denial messages).
    pub withheld: Vec<String>,
}

impl Grant {
    /// Declared ∩ policy: a capability of the policy is granted when a declared
    /// permission unlocks it ([`Permission::unlocks`], the one permission table).
    pub fn effective(policy: &Policy, declared: &[Permission]) -> Grant {
        let has = |c: Capability| c.granted_by(declared);
        let config = policy.config_values.only(&policy.config);
        let mut g = Grant {
            env: policy.env.clone(),
            redactor: config.redactor(),
            config,
            ..Grant::default()
        };
        if has(Capability::ReadDirs) {
            g.read = policy.read.clone();
        } else if !policy.read.is_empty() {
            g.withheld
                .push("`read` dirs withheld: the tool did not declare Read".into());
        }
        if has(Capability::WriteDirs) {
            g.write = policy.write.clone();
            g.delete = has(Capability::DeleteEntries);
            if !g.delete && !g.write.is_empty() {
                g.withheld.push(
                    "deleting and renaming in `write` dirs withheld: the tool did not declare Delete"
                        .into(),
                );
            }
        } else if !policy.write.is_empty() {
            g.withheld
                .push("`write` dirs withheld: the tool did not declare Write".into());
        }
        if has(Capability::Network) {
            g.network = policy.network.clone();
            g.sockets = policy.sockets;
        } else if !policy.network.is_empty() || policy.sockets {
            g.withheld
                .push("`network` withheld: the tool did not declare Network".into());
        }
        g.held = HeldDirs::open(&g.read, &g.write, &policy.write);
        g
    }
}
