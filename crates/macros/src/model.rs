//! The reading of a tool function: its parameters (which become the argument struct), its
//! context parameter, its return type (which becomes the output and the error) and its
//! description. Every misuse is reported here, at its span, in words an author can act on.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, Pat, ReturnType, Signature, Type};

use crate::args::{ParamArgs, ToolArgs, check_description, check_name};

/// One parameter the model fills in: a field of the argument struct.
pub struct Param {
    /// The Rust name (also the JSON name unless renamed).
    pub ident: Ident,
    /// Its type: must deserialise from JSON and have a JSON Schema.
    pub ty: Type,
    /// Its `///` lines, copied onto the field (schemars reads them).
    pub docs: Vec<Attribute>,
    /// Its `#[arg(...)]`.
    pub args: ParamArgs,
}

/// One argument of the call to the user's function, in order.
pub enum CallArg {
    /// The parameter at this index of [`ToolFn::params`].
    Json(usize),
    /// The `&ToolContext` of the call.
    Context,
}

/// What the function returns.
pub enum Returns {
    /// Nothing: the output is `null`.
    Unit,
    /// A value that cannot fail.
    Plain(Type),
    /// A `Result` (or an alias of one, such as `io::Result<T>`).
    Result(Type),
}

/// A tool function, read.
pub struct ToolFn {
    /// The tool's name.
    pub name: String,
    /// The tool's description.
    pub description: String,
    /// The JSON parameters.
    pub params: Vec<Param>,
    /// The arguments of the call, in the function's order.
    pub call: Vec<CallArg>,
    /// The return type.
    pub returns: Returns,
    /// Whether the function is `async`.
    pub is_async: bool,
    /// The attribute's arguments.
    pub args: ToolArgs,
}

/// Where the function is declared, which decides what its receiver may be.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A free function under `#[tool]`.
    Free,
    /// A method under `#[tool]` inside a `#[toolbox]` impl block.
    Method,
}

/// Removes the doc comments and `#[arg]` attributes of the parameters (Rust accepts
/// neither on a parameter once the macro is done) and returns them, one list a parameter.
pub fn strip_param_attrs(sig: &mut Signature) -> Vec<Vec<Attribute>> {
    sig.inputs
        .iter_mut()
        .map(|input| {
            let attrs = match input {
                FnArg::Typed(t) => &mut t.attrs,
                FnArg::Receiver(r) => &mut r.attrs,
            };
            let (ours, theirs): (Vec<_>, Vec<_>) = attrs
                .drain(..)
                .partition(|a| a.path().is_ident("doc") || a.path().is_ident("arg"));
            *attrs = theirs;
            ours
        })
        .collect()
}

/// The text of `///` lines: each line without the one space rustdoc adds, joined with
/// newlines, trimmed.
pub fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|l| l.strip_prefix(' ').unwrap_or(&l).trim_end().to_string())
        .collect();
    lines.join("\n").trim().to_string()
}

fn is_tool_context(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "ToolContext"),
        _ => false,
    }
}

fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Result"),
        _ => false,
    }
}

fn push(errors: &mut Option<syn::Error>, e: syn::Error) {
    match errors {
        Some(all) => all.combine(e),
        None => *errors = Some(e),
    }
}

/// Reads a tool function. `param_attrs` are what [`strip_param_attrs`] took off its
/// parameters; `fn_attrs` are the function's own attributes (its doc comment).
pub fn read(
    sig: &Signature,
    fn_attrs: &[Attribute],
    param_attrs: Vec<Vec<Attribute>>,
    args: ToolArgs,
    place: Place,
) -> syn::Result<ToolFn> {
    let mut errors = None;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        push(
            &mut errors,
            syn::Error::new(
                sig.generics.span(),
                "a tool function cannot be generic: its parameter schema is fixed when the \
                 tool is registered",
            ),
        );
    }
    if let Some(v) = &sig.variadic {
        push(
            &mut errors,
            syn::Error::new(v.span(), "a tool function cannot be variadic"),
        );
    }

    let mut params = Vec::new();
    let mut call = Vec::new();
    let mut context_seen = false;
    for (input, attrs) in sig.inputs.iter().zip(param_attrs) {
        let pt = match input {
            FnArg::Receiver(r) => {
                let shared_ref = r.reference.is_some() && r.mutability.is_none();
                let msg = match place {
                    Place::Free => Some(
                        "#[tool] on a method needs #[toolbox] on its impl block \
                         (see the `toolbox` attribute)",
                    ),
                    Place::Method if r.mutability.is_some() => Some(
                        "a tool method takes `&self`, not `&mut self`: tools may run \
                         concurrently, so keep mutable state behind a lock",
                    ),
                    Place::Method if !shared_ref || r.colon_token.is_some() => {
                        Some("a tool method takes `&self`")
                    }
                    Place::Method => None,
                };
                if let Some(msg) = msg {
                    push(&mut errors, syn::Error::new(r.span(), msg));
                }
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        if let Type::Reference(r) = &*pt.ty {
            if is_tool_context(&r.elem) && r.mutability.is_none() {
                if context_seen {
                    push(
                        &mut errors,
                        syn::Error::new(pt.ty.span(), "only one `&ToolContext` parameter"),
                    );
                }
                context_seen = true;
                call.push(CallArg::Context);
                continue;
            }
            push(
                &mut errors,
                syn::Error::new(
                    pt.ty.span(),
                    "a tool parameter is deserialised from the model's JSON, so it must own \
                     its data: take `String` instead of `&str`, `Vec<T>` instead of `&[T]` \
                     (only `&ToolContext` may be borrowed)",
                ),
            );
            continue;
        }
        if let Type::ImplTrait(_) = &*pt.ty {
            push(
                &mut errors,
                syn::Error::new(
                    pt.ty.span(),
                    "a tool parameter needs a concrete type: its JSON Schema is derived from it",
                ),
            );
            continue;
        }
        let ident = match &*pt.pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => pi.ident.clone(),
            other => {
                push(
                    &mut errors,
                    syn::Error::new(
                        other.span(),
                        "a tool parameter needs a plain name: the name is the JSON property \
                         the model fills in",
                    ),
                );
                continue;
            }
        };
        let mut pargs = ParamArgs::default();
        let mut docs = Vec::new();
        for a in attrs {
            if a.path().is_ident("arg") {
                if let Err(e) = pargs.parse_into(&a) {
                    push(&mut errors, e);
                }
            } else {
                docs.push(a);
            }
        }
        let described = pargs
            .description
            .as_ref()
            .is_some_and(|d| !d.value().trim().is_empty())
            || !doc_text(&docs).is_empty();
        if !described {
            push(
                &mut errors,
                syn::Error::new(
                    ident.span(),
                    format!(
                        "parameter `{}` has no description: the model reads it to fill the \
                         parameter in; write a `///` doc comment above it or \
                         `#[arg(description = \"...\")]`",
                        ident.to_string().trim_start_matches("r#")
                    ),
                ),
            );
        }
        call.push(CallArg::Json(params.len()));
        params.push(Param {
            ident,
            ty: (*pt.ty).clone(),
            docs,
            args: pargs,
        });
    }

    let returns = match &sig.output {
        ReturnType::Default => Returns::Unit,
        ReturnType::Type(_, ty) => match &**ty {
            Type::ImplTrait(_) => {
                push(
                    &mut errors,
                    syn::Error::new(
                        ty.span(),
                        "a tool returns a concrete type (its value is serialised to JSON), \
                         not `impl Trait`",
                    ),
                );
                Returns::Unit
            }
            t if is_result(t) => Returns::Result(t.clone()),
            t => Returns::Plain(t.clone()),
        },
    };

    let fn_name = sig.ident.to_string().trim_start_matches("r#").to_string();
    let name = args.name.as_ref().map(|n| n.value()).unwrap_or(fn_name);
    if args.name.is_none()
        && let Err(e) = check_name(&name, sig.ident.span())
    {
        push(&mut errors, e);
    }
    let (description, span) = match &args.description {
        Some(d) => (d.value().trim().to_string(), d.span()),
        None => (doc_text(fn_attrs), doc_span(fn_attrs, sig.ident.span())),
    };
    if let Err(e) = check_description(&description, span) {
        push(&mut errors, e);
    }

    match errors {
        Some(e) => Err(e),
        None => Ok(ToolFn {
            name,
            description,
            params,
            call,
            returns,
            is_async: sig.asyncness.is_some(),
            args,
        }),
    }
}

/// The span of the doc comment, or `fallback` when there is none.
fn doc_span(attrs: &[Attribute], fallback: Span) -> Span {
    attrs
        .iter()
        .find(|a| a.path().is_ident("doc"))
        .map_or(fallback, |a| a.span())
}
