//! Host functions that stand in front of wasmtime-wasi's own, for checks wasmtime-wasi
//! cannot make because it does not know toolhost's grants. Each one checks, then calls
//! wasmtime-wasi's implementation of the same function unchanged. They are defined after
//! `wasmtime_wasi::p2::add_to_linker_async`, shadowing its definitions (the linker resolves
//! every `0.2.x` import of a guest to these, as it did to the originals).
//!
//! - `wasi:filesystem/types` `[method]descriptor.unlink-file-at`, `remove-directory-at`,
//!   `rename-at`: need the Delete permission (declared by the tool); without it the guest
//!   gets `not-permitted`. A `write` grant alone lets a tool create and overwrite files,
//!   not remove or rename them (docs/security.md, "Write is not Delete").
//! - `[method]descriptor.open-at`: refuses to open FIFOs and devices. Opening a FIFO for
//!   reading blocks until a writer comes, and wasmtime-wasi does it on a blocking-pool
//!   thread the call deadline cannot take back: a guest could pin host threads forever.
//! - `wasi:sockets/ip-name-lookup` `resolve-addresses`: only names in the `network`
//!   allowlist are resolved; any other name gets `access-denied` before a DNS query leaves
//!   the host (docs/security.md, "DNS lookups from raw sockets").

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemView;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self as fs, DescriptorType, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{self, ResolveAddressStream};
use wasmtime_wasi::p2::bindings::sockets::network::{self, Network};
use wasmtime_wasi::sockets::WasiSocketsView;

use crate::sandbox::HostState;

/// The versioned interface names wasmtime-wasi 48 defines (its WIT is `0.2.12`).
const FS_TYPES: &str = "wasi:filesystem/types@0.2.12";
const NAME_LOOKUP: &str = "wasi:sockets/ip-name-lookup@0.2.12";

type FsRet<T> = wasmtime::Result<(Result<T, ErrorCode>,)>;

/// Converts wasmtime-wasi's result into what the guest sees (a trap stays a trap).
fn fs_result<T>(state: &mut HostState, r: wasmtime_wasi::p2::FsResult<T>) -> FsRet<T> {
    match r {
        Ok(v) => Ok((Ok(v),)),
        Err(e) => {
            let code = fs::Host::convert_error_code(&mut state.filesystem(), e)?;
            Ok((Err(code),))
        }
    }
}

/// Records a refused destructive call and returns the guest's error.
fn refuse_delete(state: &HostState, what: &str, path: &str) -> FsRet<()> {
    crate::denials::record_denial(
        &state.denials,
        format!(
            "{what} of {path:?} denied: deleting or renaming needs the Delete permission; declare it on the tool (Delete is destructive and asks for approval)"
        ),
    );
    Ok((Err(ErrorCode::NotPermitted),))
}

/// Adds the guards to a linker that already holds wasmtime-wasi's definitions.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let r = add(linker);
    linker.allow_shadowing(false);
    r
}

fn add(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let mut types = linker.instance(FS_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.unlink-file-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, path): (Resource<fs::Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                if !state.may_delete {
                    return refuse_delete(state, "unlinking", &path);
                }
                let r = HostDescriptor::unlink_file_at(&mut state.filesystem(), fd, path).await;
                fs_result(state, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.remove-directory-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, path): (Resource<fs::Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                if !state.may_delete {
                    return refuse_delete(state, "removing the directory", &path);
                }
                let r =
                    HostDescriptor::remove_directory_at(&mut state.filesystem(), fd, path).await;
                fs_result(state, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, old, new_fd, new): (
            Resource<fs::Descriptor>,
            String,
            Resource<fs::Descriptor>,
            String,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                if !state.may_delete {
                    return refuse_delete(state, "renaming", &old);
                }
                let r =
                    HostDescriptor::rename_at(&mut state.filesystem(), fd, old, new_fd, new).await;
                fs_result(state, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, path_flags, path, oflags, flags): (
            Resource<fs::Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            fs::DescriptorFlags,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                // Look before opening: stat-at follows links exactly as open-at will.
                // (`fd` is a borrow, so a second borrow of the same handle is sound.)
                let probe = Resource::<fs::Descriptor>::new_borrow(fd.rep());
                let stat =
                    HostDescriptor::stat_at(&mut state.filesystem(), probe, path_flags, path.clone())
                        .await;
                if let Ok(st) = &stat
                    && !matches!(
                        st.type_,
                        DescriptorType::RegularFile
                            | DescriptorType::Directory
                            | DescriptorType::SymbolicLink
                    )
                {
                    crate::denials::record_denial(
                        &state.denials,
                        format!(
                            "opening {path:?} denied: it is a {:?}; tools may open only regular files and directories (a FIFO or device could block a host thread past the call's deadline)",
                            st.type_
                        ),
                    );
                    return Ok((Err(ErrorCode::Access),));
                }
                let r = HostDescriptor::open_at(
                    &mut state.filesystem(),
                    fd,
                    path_flags,
                    path,
                    oflags,
                    flags,
                )
                .await;
                fs_result(state, r)
            })
        },
    )?;

    let mut lookup = linker.instance(NAME_LOOKUP)?;
    lookup.func_wrap(
        "resolve-addresses",
        |mut store: StoreContextMut<'_, HostState>,
         (net, name): (Resource<Network>, String)|
         -> wasmtime::Result<(Result<Resource<ResolveAddressStream>, network::ErrorCode>,)> {
            let state = store.data_mut();
            if !state.allow.allows_lookup(&name) {
                crate::denials::record_denial(
                    &state.denials,
                    format!(
                        "DNS lookup of {:?} denied: only names in `network` may be resolved",
                        crate::reports::clean(&name, 256)
                    ),
                );
                return Ok((Err(network::ErrorCode::AccessDenied),));
            }
            let mut view = state.sockets();
            match ip_name_lookup::Host::resolve_addresses(&mut view, net, name) {
                Ok(stream) => Ok((Ok(stream),)),
                Err(e) => Ok((Err(network::Host::convert_error_code(&mut view, e)?),)),
            }
        },
    )?;
    Ok(())
}
