//! The arguments of `#[tool(...)]` and of `#[arg(...)]` on a parameter, parsed into
//! [`ToolArgs`] and [`ParamArgs`]. Every check a compiler can make early (the name's
//! pattern, the description's length, a known permission, a timeout with a unit) is made
//! here, so that a mistake is a compile error at the right span instead of a registration
//! error at run time.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::{Ident, LitStr, Path, Token};

/// The names `#[tool(...)]` accepts, listed in the error for an unknown one.
const TOOL_KEYS: &str = "name, description, permissions, tags, category, timeout, crate";

/// The shortest description the registry accepts (`BaseTool::description`).
const MIN_DESCRIPTION: usize = 10;

/// A permission named in `permissions = [...]`.
pub enum PermissionArg {
    /// A built-in permission: the `Permission` variant's name.
    Builtin(Ident),
    /// A custom, namespaced permission.
    Custom(LitStr),
}

/// What `#[tool(...)]` says.
#[derive(Default)]
pub struct ToolArgs {
    /// `name = "..."`: the tool's name (default: the function's).
    pub name: Option<LitStr>,
    /// `description = "..."`: overrides the doc comment.
    pub description: Option<LitStr>,
    /// `permissions = [read, network, "db.admin"]`.
    pub permissions: Vec<PermissionArg>,
    /// `tags = ["a", "b"]`.
    pub tags: Vec<LitStr>,
    /// `category = "files"`.
    pub category: Option<LitStr>,
    /// `timeout = "30s"`, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// `crate = path`: where the tool API is (default: the crate the attribute came from).
    pub krate: Option<Path>,
}

impl ToolArgs {
    /// Parses the contents of `#[tool(...)]` (empty for a bare `#[tool]`).
    pub fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut out = ToolArgs::default();
        let parser = syn::meta::parser(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(Ident::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "name" => out.name = Some(meta.value()?.parse()?),
                "description" => out.description = Some(meta.value()?.parse()?),
                "category" => out.category = Some(meta.value()?.parse()?),
                "crate" => out.krate = Some(meta.value()?.parse()?),
                "timeout" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    out.timeout_ms = Some(parse_duration_ms(&lit)?);
                }
                "tags" => {
                    let list = bracketed_list(meta.value()?, |c| c.parse::<LitStr>())?;
                    out.tags.extend(list);
                }
                "permissions" => {
                    let list = bracketed_list(meta.value()?, parse_permission)?;
                    out.permissions.extend(list);
                }
                _ => {
                    return Err(meta.error(format!(
                        "unknown #[tool] argument; expected one of: {TOOL_KEYS}"
                    )));
                }
            }
            Ok(())
        });
        syn::parse::Parser::parse2(parser, tokens)?;
        if let Some(name) = &out.name {
            check_name(&name.value(), name.span())?;
        }
        Ok(out)
    }
}

fn bracketed_list<T>(
    input: ParseStream<'_>,
    item: fn(ParseStream<'_>) -> syn::Result<T>,
) -> syn::Result<Vec<T>> {
    let content;
    syn::bracketed!(content in input);
    let list = Punctuated::<T, Token![,]>::parse_terminated_with(&content, item)?;
    Ok(list.into_iter().collect())
}

fn parse_permission(input: ParseStream<'_>) -> syn::Result<PermissionArg> {
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        if lit.value().trim().is_empty() {
            return Err(syn::Error::new(
                lit.span(),
                "a custom permission needs a name",
            ));
        }
        return Ok(PermissionArg::Custom(lit));
    }
    let ident: Ident = input.parse()?;
    let variant = match ident.to_string().to_ascii_lowercase().as_str() {
        "read" => "Read",
        "write" => "Write",
        "delete" => "Delete",
        "network" => "Network",
        "shell" => "Shell",
        "filesystem" => "FileSystem",
        _ => {
            return Err(syn::Error::new(
                ident.span(),
                "unknown permission; expected read, write, delete, network, shell, filesystem, \
                 or a custom permission as a string (\"db.admin\")",
            ));
        }
    };
    Ok(PermissionArg::Builtin(Ident::new(variant, ident.span())))
}

/// `"250ms"`, `"30s"`, `"2m"` → milliseconds. A bare number is refused: its unit would be
/// a guess.
fn parse_duration_ms(lit: &LitStr) -> syn::Result<u64> {
    let text = lit.value();
    let text = text.trim();
    let (digits, factor) = if let Some(d) = text.strip_suffix("ms") {
        (d, 1)
    } else if let Some(d) = text.strip_suffix('s') {
        (d, 1_000)
    } else if let Some(d) = text.strip_suffix('m') {
        (d, 60_000)
    } else {
        (text, 0)
    };
    let value: Option<u64> = digits.trim().parse().ok();
    match value.and_then(|v| v.checked_mul(factor)) {
        Some(ms) if ms > 0 => Ok(ms),
        _ => Err(syn::Error::new(
            lit.span(),
            "timeout must be a positive whole number with a unit: \"250ms\", \"30s\" or \"2m\"",
        )),
    }
}

/// The registry's name rule, checked at compile time: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn check_name(name: &str, span: Span) -> syn::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(syn::Error::new(
            span,
            format!("tool name `{name}` is invalid: use 1 to 64 ASCII letters, digits, `_` or `-`"),
        ))
    }
}

/// The registry's description rule, checked at compile time.
pub fn check_description(description: &str, span: Span) -> syn::Result<()> {
    if description.chars().count() < MIN_DESCRIPTION {
        return Err(syn::Error::new(
            span,
            format!(
                "a tool needs a description of at least {MIN_DESCRIPTION} characters saying what \
                 it does and when to use it: write a `///` doc comment on the function or \
                 `#[tool(description = \"...\")]`"
            ),
        ));
    }
    Ok(())
}

/// What `#[arg(...)]` on a parameter says.
#[derive(Default)]
pub struct ParamArgs {
    /// `description = "..."`: overrides the parameter's doc comment.
    pub description: Option<LitStr>,
    /// `rename = "..."`: the JSON name of the parameter (default: the Rust name).
    pub rename: Option<LitStr>,
}

impl ParamArgs {
    /// Parses one `#[arg(...)]` into `self`.
    pub fn parse_into(&mut self, attr: &syn::Attribute) -> syn::Result<()> {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("description") {
                self.description = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("rename") {
                self.rename = Some(meta.value()?.parse()?);
            } else {
                return Err(meta.error("unknown #[arg] argument; expected description or rename"));
            }
            Ok(())
        })
    }
}

/// The `Permission` expressions of a tool, for `fn permissions`.
pub fn permission_exprs(root: &TokenStream, perms: &[PermissionArg]) -> Vec<TokenStream> {
    perms
        .iter()
        .map(|p| match p {
            PermissionArg::Builtin(v) => quote!(#root::__private::Permission::#v),
            PermissionArg::Custom(s) => {
                quote!(#root::__private::Permission::Custom(::std::string::String::from(#s)))
            }
        })
        .collect()
}
