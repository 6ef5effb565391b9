//! [`Candidate`]: a plugin file as `approve` and `install` show it before anything is
//! written: its request, digest and tool definitions (described with no capability), the
//! diff against its lock entry, and the entry that approving it writes.

use std::path::Path;

use toolhost_trust::{Capabilities, DefStore, Diff, PluginEntry, ToolDef, TrustError};

use super::{effective_policy, request_of, tool_def};
use crate::host::Host;
use crate::wasm::{Plugin, PluginError, Policy, PolicyError};

/// Why a plugin file cannot be shown for approval, or its approval not written.
#[derive(Debug, thiserror::Error)]
pub enum CandidateError {
    /// Its request file (`NAME.toml`) is not a valid request.
    #[error(transparent)]
    Request(#[from] PolicyError),
    /// The component did not load or describe itself.
    #[error(transparent)]
    Plugin(#[from] PluginError),
    /// A tool definition could not be kept beside the lock.
    #[error(transparent)]
    Defs(#[from] TrustError),
}

/// A plugin file as `approve` and `install` present it: its request, digest and tools.
#[derive(Debug)]
pub struct Candidate {
    /// The plugin name.
    pub name: String,
    /// The request as a grant (what approving grants).
    pub request: Capabilities,
    /// "sha256:HEX" of the file.
    pub digest: String,
    /// The tool definitions, as described by the component (run with no capability).
    pub tools: Vec<ToolDef>,
}

impl Candidate {
    /// Loads `wasm` (with its `NAME.toml`, if any) on `host` with no capability and
    /// describes it. Nothing is written.
    pub async fn load(host: &Host, name: &str, wasm: &Path) -> Result<Candidate, CandidateError> {
        let request = Policy::for_component_protected(wasm, &host.engine().protected_paths())?;
        Self::load_with_request(host, name, wasm, &request).await
    }

    /// [`Candidate::load`] with the request given (parsed against where `NAME.toml` will
    /// live), for a component staged elsewhere before it is installed.
    pub async fn load_with_request(
        host: &Host,
        name: &str,
        wasm: &Path,
        request: &Policy,
    ) -> Result<Candidate, CandidateError> {
        let plugin = Plugin::load_with_request(
            host.engine(),
            wasm,
            effective_policy(request, None),
            request,
        )
        .await?;
        Ok(Candidate {
            name: name.to_string(),
            request: request_of(request),
            digest: plugin.digest(),
            tools: plugin
                .tools()
                .iter()
                .map(|t| tool_def(t.spec(), t.view()))
                .collect(),
        })
    }

    /// The diff against the lock entry, if there is one.
    pub fn diff(&self, entry: Option<&PluginEntry>, store: &DefStore) -> Option<Diff> {
        let e = entry?;
        Some(
            Diff::between(
                &e.grant,
                &e.tools,
                |h| store.load(h),
                &self.request,
                &self.tools,
            )
            .with_digest(&e.digest, &self.digest),
        )
    }

    /// What the operator is asked to approve, as text (untrusted parts escaped).
    pub fn summary(&self) -> String {
        use std::fmt::Write;
        let clean = toolhost_trust::clean;
        let mut s = format!(
            "plugin {}  ({})\n  requests:\n",
            clean(&self.name),
            self.digest
        );
        let lines = self.request.lines();
        if !self.request.has_capabilities() {
            s.push_str("    (no capability)\n");
        }
        for l in lines {
            let _ = writeln!(s, "    {}", clean(&l));
        }
        s.push_str("  tools:\n");
        for t in &self.tools {
            let perms = if t.permissions.is_empty() {
                "-".to_string()
            } else {
                t.permissions.join(",")
            };
            let _ = writeln!(
                s,
                "    {} [{}]: {}",
                clean(&t.name),
                clean(&perms),
                clean(&t.description)
            );
            if let Some(digest) = &t.view {
                // The page a host renders beside the tool's results (NAME.ui/TOOL.html):
                // approving pins it.
                let uri = t
                    .meta
                    .as_ref()
                    .and_then(|m| m["ui"]["resourceUri"].as_str())
                    .unwrap_or_default();
                let _ = writeln!(s, "      view {}  ({digest})", clean(uri));
            }
        }
        s
    }

    /// The lock entry approving this candidate, signed by `signer` as release `version`
    /// (both from a verified signature, or `None`), keeping its kept definitions in
    /// `store`.
    pub fn entry(
        &self,
        source: String,
        signer: Option<String>,
        version: Option<toolhost_trust::Version>,
        store: &DefStore,
    ) -> Result<PluginEntry, CandidateError> {
        for t in &self.tools {
            store.save(t)?;
        }
        Ok(PluginEntry {
            source,
            digest: self.digest.clone(),
            signature_covers: signer
                .as_ref()
                .map(|_| toolhost_trust::SignatureCovers::Package),
            version: version.filter(|_| signer.is_some()),
            signer,
            approved_at: toolhost_trust::now_rfc3339(),
            grant: self.request.clone(),
            tools: self
                .tools
                .iter()
                .map(|t| (t.name.clone(), t.hash()))
                .collect(),
        })
    }
}

/// `file://` URL of a local path (absolute), the `source` of a plugin approved in place
/// (written as `toolhost-dist` writes it, so `update` can fetch it again).
pub fn file_source(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    toolhost_dist::Source::File(abs).to_string()
}
