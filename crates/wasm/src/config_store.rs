//! `wasi:config/store`: `get(key)` and `get-all()` over the values a call was granted
//! ([`crate::config::ConfigValues`], in the call's [`HostState`]). A key not granted
//! reads as `none` (and is recorded as a denial naming the fix); `get-all` lists only
//! the granted pairs.
//!
//! Hand-written rather than `wasmtime-wasi-config`'s `add_to_linker`: that crate (48.0.8)
//! links only `wasi:config/store@0.2.0-rc.1`, while components built for other hosts
//! import `@0.2.0-draft` (wasmCloud, componentize tooling) or `@0.2.0-draft-2024-09-27`
//! (Spin). Pre-release versions never match each other when the linker resolves imports,
//! so the same two functions are defined under each name in [`VERSIONS`].

use wasmtime::StoreContextMut;
use wasmtime::component::{ComponentType, Lift, Linker, Lower};

use crate::denials::record_denial;
use crate::sandbox::HostState;

/// The `wasi:config/store` interface names linked, one per published version.
pub(crate) const VERSIONS: &[&str] = &[
    "wasi:config/store@0.2.0-draft",
    "wasi:config/store@0.2.0-draft-2024-09-27",
    "wasi:config/store@0.2.0-rc.1",
];

/// `variant error { upstream(string), io(string) }` of the interface. toolhost resolves
/// every value at load, so a call never meets an upstream or I/O error; the type is
/// here because it is part of the functions' signatures.
#[derive(ComponentType, Lift, Lower, Clone, Debug)]
#[component(variant)]
#[allow(
    dead_code,
    reason = "never built: the variant exists for the signature's shape"
)]
enum StoreError {
    #[component(name = "upstream")]
    Upstream(String),
    #[component(name = "io")]
    Io(String),
}

type GetResult = Result<Option<String>, StoreError>;
type GetAllResult = Result<Vec<(String, String)>, StoreError>;

/// Defines `get` and `get-all` under every name of [`VERSIONS`].
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    for name in VERSIONS {
        let mut store = linker.instance(name)?;
        store.func_wrap(
            "get",
            |mut cx: StoreContextMut<'_, HostState>, (key,): (String,)| -> wasmtime::Result<(GetResult,)> {
                let state = cx.data_mut();
                let value = state.config.get(&key).map(|v| v.expose().to_string());
                if value.is_none() {
                    let shown: String = key.chars().take(64).collect();
                    record_denial(
                        &state.denials,
                        format!(
                            "config key {shown:?} read as absent: it is not both asked for in the plugin's `config` and given in the operator's [plugins.{}.config]",
                            state.plugin
                        ),
                    );
                }
                Ok((Ok(value),))
            },
        )?;
        store.func_wrap(
            "get-all",
            |cx: StoreContextMut<'_, HostState>, (): ()| -> wasmtime::Result<(GetAllResult,)> {
                let pairs = cx
                    .data()
                    .config
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.expose().to_string()))
                    .collect();
                Ok((Ok(pairs),))
            },
        )?;
    }
    Ok(())
}
