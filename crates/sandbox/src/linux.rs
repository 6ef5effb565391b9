//! Enforcing an [`McpSandbox`] on Linux: a Landlock ruleset (filesystem, TCP, abstract
//! Unix sockets, signals) and a seccomp filter that refuses to create Unix sockets and,
//! with `network = false`, any other socket (so UDP, raw and other families too, which
//! Landlock before ABI 10 cannot restrict).
//!
//! Everything is prepared in the parent ([`Prepared::new`]): the kernel's Landlock ABI is
//! checked, the ruleset is created, every granted path is opened (`O_PATH`) and added as a
//! rule, and the seccomp program is compiled to BPF. The `pre_exec` hook that runs in the
//! child between `fork` and `exec` then only makes system calls (`prctl`,
//! `landlock_restrict_self`, `seccomp`, `close`) on data that already exists: after `fork`
//! in a multi-threaded parent only async-signal-safe work is sound, and allocating,
//! opening paths or taking locks there could deadlock or fail half-way.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    PathFdError, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::{McpSandbox, McpSandboxError, RUNTIME_BASE, RUNTIME_BASE_WRITE};

/// The oldest Landlock ABI we accept: 6 (Linux 6.12) scopes abstract Unix sockets and
/// signals to the sandbox; 4 restricts TCP; 3 restricts truncation. Below 6 a sandboxed
/// server could still reach other programs' abstract sockets (D-Bus, X11) or signal the
/// host, so a declared sandbox is refused rather than half-enforced.
const MIN_ABI: i64 = 6;

/// The newest Landlock ABI the `landlock` crate knows; rights it adds beyond what the
/// kernel offers are dropped from rules (best effort), which only narrows a grant.
const LATEST: ABI = ABI::V10;

/// A sandbox ready to be entered by a child process.
pub(crate) struct Prepared {
    ruleset: RulesetCreated,
    seccomp: BpfProgram,
}

fn setup(what: &str, e: impl std::fmt::Display) -> McpSandboxError {
    McpSandboxError::Setup(format!("{what}: {e}"))
}

fn unsupported(what: &str, e: impl std::fmt::Display) -> McpSandboxError {
    McpSandboxError::Unsupported {
        reason: format!("sandbox not supported: Landlock {what}: {e}"),
    }
}

/// The kernel's Landlock ABI version, or a negative number when it has none (`ENOSYS`) or
/// it is disabled (`EOPNOTSUPP`). The `landlock` crate deliberately keeps this private (it
/// wants rules written against a fixed ABI, which [`Prepared::new`] does); we only use it
/// to refuse an old kernel with a message that names the version.
#[allow(unsafe_code)]
fn kernel_abi() -> i64 {
    // SAFETY: `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)` reads no
    // memory and returns the ABI version (or -1 with errno); it creates nothing.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    v as i64
}

/// Refuses a kernel whose Landlock ABI (`abi`, negative when there is none) is older than
/// [`MIN_ABI`].
fn check_abi(abi: i64) -> Result<(), McpSandboxError> {
    if abi < MIN_ABI {
        return Err(McpSandboxError::Unsupported {
            reason: match abi {
                ..0 => "sandbox not supported: this kernel has no Landlock \
                        (CONFIG_SECURITY_LANDLOCK), or it is not enabled (add `landlock` \
                        to the `lsm=` boot parameter)"
                    .into(),
                _ => format!(
                    "sandbox not supported: this kernel offers Landlock ABI {abi}; the \
                     sandbox needs ABI {MIN_ABI} (Linux 6.12) to scope abstract Unix \
                     sockets and signals"
                ),
            },
        });
    }
    Ok(())
}

impl Prepared {
    /// Checks the kernel and builds the ruleset (and seccomp filter) for `program`.
    pub(crate) fn new(sandbox: &McpSandbox, program: &Path) -> Result<Self, McpSandboxError> {
        check_abi(kernel_abi())?;

        // Everything ABI 6 defines is a hard requirement (an error, never dropped
        // silently; the check above makes it one the kernel meets). What later ABIs add
        // (ABI 9: connecting to named Unix sockets; ABI 10: UDP) is handled when the kernel
        // knows it: that only ever denies more.
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(ABI::V6))
            .map_err(|e| unsupported("filesystem rules", e))?
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(|e| unsupported("scopes", e))?;
        if !sandbox.network {
            // No port rule is added: every TCP bind and connect is denied.
            ruleset = ruleset
                .handle_access(AccessNet::from_all(ABI::V6))
                .map_err(|e| unsupported("network rules", e))?;
        }
        ruleset = ruleset
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(LATEST))
            .map_err(|e| setup("filesystem rules", e))?;
        if !sandbox.network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(LATEST))
                .map_err(|e| setup("network rules", e))?;
        }
        let read = AccessFs::from_read(LATEST);
        let all = AccessFs::from_all(LATEST);
        let mut created = ruleset.create().map_err(|e| setup("create", e))?;

        for base in RUNTIME_BASE {
            created = add_path(created, Path::new(base), read, None)?;
        }
        for base in RUNTIME_BASE_WRITE {
            created = add_path(created, Path::new(base), all, None)?;
        }
        if program.is_absolute() {
            created = add_path(created, program, read, None)?;
        }
        for path in &sandbox.read {
            created = add_path(created, path, read, Some("read"))?;
        }
        for path in &sandbox.write {
            created = add_path(created, path, all, Some("write"))?;
        }

        let seccomp = socket_filter(sandbox.network)?;
        Ok(Self {
            ruleset: created,
            seccomp,
        })
    }

    /// Makes `cmd`'s child enter the sandbox right before `exec`.
    #[allow(unsafe_code)]
    pub(crate) fn install(self, cmd: &mut tokio::process::Command) {
        let mut ruleset = Some(self.ruleset);
        let seccomp = self.seccomp;
        // SAFETY: the hook runs in the forked child before exec. It only issues system
        // calls on values built beforehand in the parent (`restrict_self` calls `prctl`
        // and `landlock_restrict_self`, then closes the ruleset fd; `apply_filter` calls
        // `prctl` and `seccomp` on a ready BPF program); errors are plain errno values.
        // Nothing allocates, locks or opens a path. `Option::take` moves the ruleset out of
        // the child's copy of the closure; the parent's copy keeps it until the command is
        // dropped (its fd is close-on-exec, like every Landlock ruleset fd).
        unsafe {
            cmd.pre_exec(move || {
                let Some(ruleset) = ruleset.take() else {
                    return Err(io::Error::from_raw_os_error(libc::EINVAL));
                };
                match ruleset.restrict_self() {
                    Ok(status) if status.ruleset != RulesetStatus::NotEnforced => {}
                    Ok(_) => return Err(io::Error::from_raw_os_error(libc::ENOSYS)),
                    Err(_) => return Err(io::Error::from_raw_os_error(libc::EPERM)),
                }
                seccompiler::apply_filter(&seccomp)
                    .map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
                Ok(())
            });
        }
    }
}

/// Adds a rule granting `access` beneath `path`. The path is opened once (`O_PATH`) and
/// the rule is bound to what was opened; for a non-directory the crate narrows `access` to
/// the rights a file can have (best effort, so it only ever narrows). A missing
/// runtime-base entry (`list` is `None`) is skipped; a missing granted path is an error.
fn add_path(
    created: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
    list: Option<&'static str>,
) -> Result<RulesetCreated, McpSandboxError> {
    let fd = match (PathFd::new(path), list) {
        (Ok(fd), _) => fd,
        (Err(_), None) => return Ok(created),
        (Err(e), Some(list)) => {
            let source = match e {
                PathFdError::OpenCall { source, .. } => source,
                other => io::Error::other(other.to_string()),
            };
            return Err(McpSandboxError::MissingPath {
                list,
                path: path.to_path_buf(),
                source,
            });
        }
    };
    created
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| setup(&format!("rule for {}", path.display()), e))
}

/// The seccomp program of a sandboxed server: `socket(2)` fails with `EACCES` for
/// `AF_UNIX` always (Landlock before ABI 9 cannot stop a `connect` to a named socket such
/// as an ssh-agent or `docker.sock`; `socketpair(2)` still works), and for every other
/// family too unless `network` (UDP, raw and the rest, which Landlock before ABI 10 cannot
/// restrict). `io_uring_setup(2)` fails too: an io_uring `SOCKET` operation would not pass
/// through the `socket` filter. Everything else is allowed.
fn socket_filter(network: bool) -> Result<BpfProgram, McpSandboxError> {
    let arch =
        TargetArch::try_from(std::env::consts::ARCH).map_err(|e| McpSandboxError::Unsupported {
            reason: format!("sandbox not supported: no seccomp filter for this CPU: {e}"),
        })?;
    // An empty rule list matches the system call whatever its arguments.
    let socket_rules = if network {
        let unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            libc::AF_UNIX as u64,
        )
        .map_err(|e| setup("seccomp condition", e))?;
        vec![SeccompRule::new(vec![unix]).map_err(|e| setup("seccomp rule", e))?]
    } else {
        Vec::new()
    };
    let filter = SeccompFilter::new(
        BTreeMap::from([
            (libc::SYS_socket, socket_rules),
            (libc::SYS_io_uring_setup, Vec::new()),
        ]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|e| setup("seccomp filter", e))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| setup("seccomp program", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_or_missing_landlock_is_refused_with_the_version_named() {
        for (abi, says) in [
            (-1, "has no Landlock"),
            (4, "offers Landlock ABI 4; the sandbox needs ABI 6"),
            (5, "offers Landlock ABI 5"),
        ] {
            match check_abi(abi) {
                Err(e @ McpSandboxError::Unsupported { .. }) => {
                    let msg = e.to_string();
                    assert!(msg.contains(says), "{msg}");
                    assert!(msg.starts_with("sandbox not supported"), "{msg}");
                    assert!(msg.contains("the server was not started"), "{msg}");
                }
                other => panic!("ABI {abi}: expected Unsupported, got {other:?}"),
            }
        }
        assert!(check_abi(6).is_ok());
        assert!(check_abi(7).is_ok());
    }

    #[test]
    fn this_kernel_offers_at_least_the_required_abi() {
        // The machines this project runs on (and CI) report Landlock ABI 7; a sandboxed
        // server test would fail closed on anything older, and this says why first.
        let abi = kernel_abi();
        assert!(abi >= MIN_ABI, "kernel Landlock ABI {abi}");
    }
}
