//! [`Review`]: one plugin file of a plugins folder as the operator decides on it, the
//! single route of `toolhost approve` and of the console's approval (docs/trust.md): the
//! candidate (request, digest, tools), its lock entry, the verified signature, the
//! release review, the diff and the lint findings; then [`Review::approve`] writes the
//! lock entry, with the request or a narrower grant.
//!
//! Nothing is written until [`Review::approve`]; a running `serve` that watches the folder
//! picks the new lock up (live reload re-evaluates every plugin when the lock changes).

use std::path::{Path, PathBuf};

use toolhost_lint::{Finding, Subject};
use toolhost_trust::{Capabilities, DefStore, Diff, Lock, PackageSignature, PluginEntry};

use super::release::{Release, review};
use super::{Candidate, CandidateError, file_source, package_signature};
use crate::host::Host;

/// Why a plugin cannot be reviewed or approved.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The name is not a plugin of the folder.
    #[error("no plugin {name} in {dir} (no {name}.wasm there)")]
    NoPlugin {
        /// The name asked for.
        name: String,
        /// The plugins folder.
        dir: String,
    },
    /// The name is not a plugin name (a path, an empty or hidden name).
    #[error("`{0}` is not a plugin name")]
    BadName(String),
    /// The file does not load or describe itself.
    #[error(transparent)]
    Candidate(#[from] CandidateError),
    /// The lock cannot be read or written.
    #[error(transparent)]
    Lock(#[from] toolhost_trust::TrustError),
    /// The request file or the component exists but cannot be read.
    #[error("reading {path}: {source}")]
    Request {
        /// The request file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The release is not newer than the approved one, and a downgrade was not allowed.
    #[error("not approved: {0}; accept this release deliberately with --allow-downgrade")]
    Downgrade(String),
    /// The grant asked for is not within what the plugin requests.
    #[error("the grant asked for is not within the plugin's request")]
    NotNarrower,
    /// The file changed between the review and the approval: what was reviewed is not
    /// what would be approved.
    #[error(
        "{name}.wasm changed since it was reviewed (was {reviewed}, now {now}); review it again"
    )]
    Stale {
        /// The plugin.
        name: String,
        /// The digest reviewed.
        reviewed: String,
        /// The digest now.
        now: String,
    },
}

/// A plugin file reviewed against its approval (see the module docs).
#[derive(Debug)]
pub struct Review {
    /// The plugin name.
    pub name: String,
    /// The component file.
    pub wasm: PathBuf,
    /// Its request, digest and tools.
    pub candidate: Candidate,
    /// Its lock entry, if it was ever approved.
    pub entry: Option<PluginEntry>,
    /// A valid signature by a trusted key over the package as it is now.
    pub signed: Option<PackageSignature>,
    /// Version and signer against the approval, and what the release rule refuses.
    pub release: Release,
    /// What changed since the approval (`None`: never approved).
    pub diff: Option<Diff>,
    /// What lint finds in its tool definitions.
    pub findings: Vec<Finding>,
}

/// Reviews plugin `name` of folder `dir` on `host` (nothing is written), with the
/// signatures of `keys` trusted.
pub async fn review_plugin(
    host: &Host,
    dir: &Path,
    keys: &[String],
    name: &str,
) -> Result<Review, ReviewError> {
    if name.is_empty()
        || name.starts_with('.')
        || name.contains(['/', '\\', '\0'])
        || name.chars().any(char::is_control)
    {
        return Err(ReviewError::BadName(toolhost_trust::clean(name)));
    }
    let wasm = dir.join(format!("{name}.wasm"));
    if !wasm.is_file() {
        return Err(ReviewError::NoPlugin {
            name: name.to_string(),
            dir: dir.display().to_string(),
        });
    }
    let lock = Lock::load(&Lock::path_in(dir))?;
    let candidate = Candidate::load(host, name, &wasm).await?;
    let request_path = crate::wasm::Policy::path_for(&wasm);
    let request_bytes = match std::fs::read(&request_path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(ReviewError::Request {
                path: request_path.display().to_string(),
                source,
            });
        }
    };
    let signed = package_signature(
        name,
        &wasm,
        &candidate.digest,
        request_bytes.as_deref(),
        keys,
    );
    let entry = lock.plugins.get(name).cloned();
    let release = review(
        entry.as_ref(),
        &candidate.digest,
        signed.as_ref().map(|s| s.signer.as_str()),
        signed.as_ref().and_then(|s| s.version.as_ref()),
    );
    let diff = candidate.diff(entry.as_ref(), &DefStore::in_dir(dir));
    let subjects: Vec<Subject> = candidate
        .tools
        .iter()
        .map(|d| Subject::shown(format!("plugin:{name}"), d.clone()))
        .collect();
    let mut findings = toolhost_lint::lint(&subjects);
    toolhost_lint::sort(&mut findings);
    Ok(Review {
        name: name.to_string(),
        wasm,
        candidate,
        entry,
        signed,
        release,
        diff,
        findings,
    })
}

impl Review {
    /// Whether the plugin is approved exactly as it is (nothing to approve).
    pub fn already_approved(&self) -> bool {
        self.diff.as_ref().is_some_and(Diff::is_empty)
    }

    /// Writes the lock entry approving this plugin into the lock of `dir`: the request
    /// (or `grant`, which must be within it), the signer and version of a verified
    /// signature. A release that is not newer than the approved one needs
    /// `allow_downgrade`. The file must still be the one reviewed. Returns the lock's
    /// path.
    pub fn approve(
        &self,
        dir: &Path,
        grant: Option<Capabilities>,
        allow_downgrade: bool,
    ) -> Result<PathBuf, ReviewError> {
        if let Some(why) = self.release.refusal.as_ref().filter(|_| !allow_downgrade) {
            return Err(ReviewError::Downgrade(why.clone()));
        }
        if let Some(g) = &grant
            && !g.within(&self.candidate.request)
        {
            return Err(ReviewError::NotNarrower);
        }
        let bytes = std::fs::read(&self.wasm).map_err(|source| ReviewError::Request {
            path: self.wasm.display().to_string(),
            source,
        })?;
        let now = toolhost_trust::canon::sha256(&bytes);
        if now != self.candidate.digest {
            return Err(ReviewError::Stale {
                name: self.name.clone(),
                reviewed: self.candidate.digest.clone(),
                now,
            });
        }
        let lock_path = Lock::path_in(dir);
        let mut lock = Lock::load(&lock_path)?;
        let store = DefStore::in_dir(dir);
        let source = match &self.entry {
            Some(e) => e.source.clone(),
            None => file_source(&self.wasm),
        };
        let signed = self.signed.as_ref();
        let mut new_entry = self.candidate.entry(
            source,
            signed.map(|s| s.signer.clone()),
            signed.and_then(|s| s.version.clone()),
            &store,
        )?;
        // Without a signature over the package as it is now, a signature still covers
        // what it covered when the component is the signed one; a request that changed
        // since is not the signed request.
        if signed.is_none()
            && let Some(e) = &self.entry
            && e.digest == self.candidate.digest
            && e.signer.is_some()
        {
            new_entry.signer = e.signer.clone();
            new_entry.version = e.version.clone();
            new_entry.signature_covers = if e.grant == self.candidate.request {
                e.signature_covers
            } else {
                Some(toolhost_trust::SignatureCovers::Component)
            };
        }
        if let Some(g) = grant {
            new_entry.grant = g;
        }
        lock.plugins.insert(self.name.clone(), new_entry);
        lock.save(&lock_path)?;
        Ok(lock_path)
    }
}
