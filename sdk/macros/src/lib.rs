//! `toolhost-sdk-macros`: the `#[tool]` attribute of `toolhost-sdk` (reach it as
//! `toolhost_sdk::tool`). It turns a plain function into one tool of a plugin: the name
//! from the function, the description from its doc comment, each parameter's description
//! from its doc comment (or `#[arg(description = "...")]`), the JSON Schema from the
//! parameter types (serde + schemars), the output through `Serialize` (or an
//! `Output` with render text) and the errors through the function's `Result` error type.
//! `toolhost_sdk::export!([f, g, ...])` then exports the annotated functions.
//!
//! Generated for `#[tool] fn add(x: f64, y: f64) -> Result<f64, ToolError>`: the function,
//! unchanged; an empty braced struct also named `add` (a braced struct lives only in the
//! type namespace, so it does not clash with the function) implementing
//! `toolhost_sdk::ToolFn`, whose `tool()` builds the `toolhost_sdk::Tool`.
//!
//! This crate is written beside every project `toolhost new --lang rust` creates, so it
//! depends on nothing but syn, quote and proc-macro2.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{quote, quote_spanned};
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, Item, LitStr, Pat, ReturnType, Token, Type};

/// Turns a plain function into a plugin tool. Arguments: `name = "..."` (default: the
/// function's name), `description = "..."` (default: the doc comment), `permissions =
/// [read, write, delete, network, shell, filesystem, "custom.name"]`, `tags = ["..."]`,
/// `crate = path` (where `toolhost_sdk` is, for a renamed dependency). One parameter may
/// be `&CallContext`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(attr.into(), item.into()).into()
}

#[derive(Default)]
struct Args {
    name: Option<LitStr>,
    description: Option<LitStr>,
    permissions: Vec<Tokens>,
    tags: Vec<LitStr>,
    krate: Option<syn::Path>,
}

fn bracketed<T>(
    input: ParseStream<'_>,
    item: fn(ParseStream<'_>) -> syn::Result<T>,
) -> syn::Result<Vec<T>> {
    let content;
    syn::bracketed!(content in input);
    Ok(
        Punctuated::<T, Token![,]>::parse_terminated_with(&content, item)?
            .into_iter()
            .collect(),
    )
}

/// A permission: a built-in level's name, or a custom one as a string. The tokens name
/// the variant relative to the SDK root, filled in later.
fn permission(input: ParseStream<'_>) -> syn::Result<Tokens> {
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        if lit.value().trim().is_empty() {
            return Err(syn::Error::new(
                lit.span(),
                "a custom permission needs a name",
            ));
        }
        return Ok(quote!(Custom(::std::string::String::from(#lit))));
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
    let v = Ident::new(variant, ident.span());
    Ok(quote!(#v))
}

fn parse_args(tokens: Tokens) -> syn::Result<Args> {
    let mut out = Args::default();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "name" => out.name = Some(meta.value()?.parse()?),
            "description" => out.description = Some(meta.value()?.parse()?),
            "crate" => out.krate = Some(meta.value()?.parse()?),
            "tags" => out
                .tags
                .extend(bracketed(meta.value()?, |c| c.parse::<LitStr>())?),
            "permissions" => out
                .permissions
                .extend(bracketed(meta.value()?, permission)?),
            _ => {
                return Err(meta.error(
                    "unknown #[tool] argument; expected one of: name, description, \
                     permissions, tags, crate",
                ));
            }
        }
        Ok(())
    });
    syn::parse::Parser::parse2(parser, tokens)?;
    Ok(out)
}

fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }),
                ..
            }) => Some(s.value()),
            _ => None,
        })
        .map(|l| l.strip_prefix(' ').unwrap_or(&l).trim_end().to_string())
        .collect();
    lines.join("\n").trim().to_string()
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn last_ident_is(ty: &Type, name: &str) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == name))
}

fn combine(errors: &mut Option<syn::Error>, e: syn::Error) {
    match errors {
        Some(all) => all.combine(e),
        None => *errors = Some(e),
    }
}

fn expand(attr: Tokens, item: Tokens) -> Tokens {
    let item: Item = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let Item::Fn(mut func) = item else {
        return syn::Error::new(item.span(), "#[tool] goes on a function").to_compile_error();
    };
    // Rust accepts neither doc comments nor `#[arg]` on parameters once we are done.
    let mut param_attrs = Vec::new();
    for input in func.sig.inputs.iter_mut() {
        if let FnArg::Typed(t) = input {
            let (ours, theirs): (Vec<_>, Vec<_>) = t
                .attrs
                .drain(..)
                .partition(|a| a.path().is_ident("doc") || a.path().is_ident("arg"));
            t.attrs = theirs;
            param_attrs.push(ours);
        } else {
            param_attrs.push(Vec::new());
        }
    }
    match generate(attr, &func, param_attrs) {
        Ok(t) => quote!(#func #t),
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#func #e)
        }
    }
}

fn generate(
    attr: Tokens,
    func: &syn::ItemFn,
    param_attrs: Vec<Vec<Attribute>>,
) -> syn::Result<Tokens> {
    let args = parse_args(attr)?;
    let root = match &args.krate {
        Some(p) => quote!(#p),
        None => quote!(::toolhost_sdk),
    };
    let sig = &func.sig;
    let mut errors = None;
    if let Some(a) = &sig.asyncness {
        combine(
            &mut errors,
            syn::Error::new(
                a.span(),
                "a plugin tool is a plain (not async) function: the component runs one call at a time",
            ),
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        combine(
            &mut errors,
            syn::Error::new(
                sig.generics.span(),
                "a tool function cannot be generic: its parameter schema is fixed",
            ),
        );
    }
    let mut fields = Vec::new();
    let mut idents = Vec::new();
    let mut call = Vec::new();
    for (input, attrs) in sig.inputs.iter().zip(param_attrs) {
        let pt = match input {
            FnArg::Receiver(r) => {
                combine(
                    &mut errors,
                    syn::Error::new(r.span(), "a plugin tool is a free function, not a method"),
                );
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        if let Type::Reference(r) = &*pt.ty {
            if last_ident_is(&r.elem, "CallContext") {
                call.push(quote!(__ctx));
                continue;
            }
            combine(
                &mut errors,
                syn::Error::new(
                    pt.ty.span(),
                    "a tool parameter is deserialised from the model's JSON, so it must own its data: take `String` instead of `&str`, `Vec<T>` instead of `&[T]` (only `&CallContext` may be borrowed)",
                ),
            );
            continue;
        }
        let ident = match &*pt.pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => pi.ident.clone(),
            other => {
                combine(
                    &mut errors,
                    syn::Error::new(
                        other.span(),
                        "a tool parameter needs a plain name: the name is the JSON property the model fills in",
                    ),
                );
                continue;
            }
        };
        let mut description: Option<LitStr> = None;
        let mut rename: Option<LitStr> = None;
        let mut docs = Vec::new();
        for a in attrs {
            if a.path().is_ident("arg") {
                let r = a.parse_nested_meta(|meta| {
                    if meta.path.is_ident("description") {
                        description = Some(meta.value()?.parse()?);
                    } else if meta.path.is_ident("rename") {
                        rename = Some(meta.value()?.parse()?);
                    } else {
                        return Err(
                            meta.error("unknown #[arg] argument; expected description or rename")
                        );
                    }
                    Ok(())
                });
                if let Err(e) = r {
                    combine(&mut errors, e);
                }
            } else {
                docs.push(a);
            }
        }
        let described = description
            .as_ref()
            .is_some_and(|d| !d.value().trim().is_empty())
            || !doc_text(&docs).is_empty();
        if !described {
            combine(
                &mut errors,
                syn::Error::new(
                    ident.span(),
                    format!(
                        "parameter `{}` has no description: the model reads it to fill the parameter in; write a `///` doc comment above it or `#[arg(description = \"...\")]`",
                        ident.to_string().trim_start_matches("r#")
                    ),
                ),
            );
        }
        let ty = &pt.ty;
        let docs = if description.is_some() {
            Vec::new()
        } else {
            docs
        };
        let rename = rename.map(|r| quote!(#[serde(rename = #r)]));
        let desc = description.map(|d| quote!(#[schemars(description = #d)]));
        fields.push(quote! { #(#docs)* #rename #desc #ident: #ty });
        call.push(quote!(#ident));
        idents.push(ident);
    }
    let fn_ident = &sig.ident;
    let fn_name = fn_ident.to_string().trim_start_matches("r#").to_string();
    let name = args.name.as_ref().map_or(fn_name, LitStr::value);
    if !valid_name(&name) {
        let span = args.name.as_ref().map_or(fn_ident.span(), LitStr::span);
        combine(
            &mut errors,
            syn::Error::new(
                span,
                format!(
                    "tool name `{name}` is invalid: use 1 to 64 ASCII letters, digits, `_` or `-`"
                ),
            ),
        );
    }
    let (description, span) = match &args.description {
        Some(d) => (d.value().trim().to_string(), d.span()),
        None => (
            doc_text(&func.attrs),
            func.attrs
                .iter()
                .find(|a| a.path().is_ident("doc"))
                .map_or(fn_ident.span(), |a| a.span()),
        ),
    };
    if description.chars().count() < 10 {
        combine(
            &mut errors,
            syn::Error::new(
                span,
                "a tool needs a description of at least 10 characters saying what it does and when to use it: write a `///` doc comment on the function or `#[tool(description = \"...\")]`",
            ),
        );
    }
    let convert = match &sig.output {
        ReturnType::Type(_, ty) if matches!(**ty, Type::ImplTrait(_)) => {
            combine(
                &mut errors,
                syn::Error::new(
                    ty.span(),
                    "a tool returns a concrete type (its value is serialised to JSON), not `impl Trait`",
                ),
            );
            quote!()
        }
        ReturnType::Type(_, ty) if last_ident_is(ty, "Result") => {
            let out = quote_spanned!(ty.span()=> #root::__private::IntoOutput::into_output(v));
            quote! {
                match #root::__private::ToolResult::into_result(__ret) {
                    ::std::result::Result::Ok(v) => ::std::result::Result::Ok(#out),
                    ::std::result::Result::Err(e) => {
                        #[allow(unused_imports)]
                        use #root::__private::{ViaDisplay as _, ViaInto as _};
                        ::std::result::Result::Err((&mut #root::__private::ErrorSlot::new(e)).take_tool_error())
                    }
                }
            }
        }
        ReturnType::Type(_, ty) => {
            let out = quote_spanned!(ty.span()=> #root::__private::IntoOutput::into_output(__ret));
            quote!(::std::result::Result::Ok(#out))
        }
        ReturnType::Default => {
            quote!(::std::result::Result::Ok(#root::__private::IntoOutput::into_output(__ret)))
        }
    };
    if let Some(e) = errors {
        return Err(e);
    }
    let vis = &func.vis;
    let serde_path = format!("{root}::serde");
    let schemars_path = format!("{root}::schemars");
    let perms = args
        .permissions
        .iter()
        .map(|p| quote!(#root::Permission::#p));
    let tags = &args.tags;
    let doc =
        format!("The `{name}` tool of [`{fn_ident}`](fn@{fn_ident}), for `toolhost_sdk::export!`.");
    let args_ident = Ident::new("__ToolhostArgs", Span::call_site());
    Ok(quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #fn_ident {}

        const _: () = {
            #[derive(#root::Deserialize, #root::JsonSchema)]
            #[serde(crate = #serde_path)]
            #[schemars(crate = #schemars_path)]
            #[doc(hidden)]
            struct #args_ident { #(#fields),* }

            impl #root::ToolFn for #fn_ident {
                fn tool() -> #root::Tool {
                    #root::Tool::with_context(
                        #name,
                        #description,
                        |__args: #args_ident, __ctx: &#root::CallContext| {
                            let _ = __ctx;
                            let #args_ident { #(#idents),* } = __args;
                            let __ret = #fn_ident(#(#call),*);
                            #convert
                        },
                    )
                    .permissions([#(#perms),*])
                    .tags([#(#tags),*])
                }
            }
        };
    })
}
