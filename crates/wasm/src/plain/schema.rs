//! The JSON Schema of a WIT type, for a plain WIT component's tools: the mapping table of
//! `docs/writing-plugins.md` ("Plain WIT components"), one arm per WIT type. The value
//! conversion (`value.rs`) accepts and produces exactly the JSON these schemas describe.
//!
//! Types that cannot cross as JSON (resource handles, futures, streams, error contexts)
//! make the function unusable as a tool: [`Unsupported`] says which, and the loader refuses
//! that function by name.

use serde_json::{Map, Value, json};
use wasmtime::component::Type;

use super::limits::MAX_TYPE_DEPTH;

/// Why a WIT type has no JSON mapping.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Unsupported(pub(crate) String);

/// The JSON Schema of the arguments object of a function with `params`: one property
/// per parameter, every parameter required except those of an `option` type, which may
/// be absent or `null`.
pub(crate) fn parameters<'a>(
    params: impl Iterator<Item = (&'a str, Type)>,
) -> Result<Value, Unsupported> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, ty) in params {
        let schema = schema(&ty, 1)
            .map_err(|Unsupported(why)| Unsupported(format!("parameter `{name}` is {why}")))?;
        if !matches!(ty, Type::Option(_)) {
            required.push(Value::String(name.to_string()));
        }
        properties.insert(name.to_string(), schema);
    }
    Ok(json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    }))
}

/// The JSON Schema of one value of type `ty`, found `depth` levels deep.
pub(crate) fn schema(ty: &Type, depth: usize) -> Result<Value, Unsupported> {
    if depth > MAX_TYPE_DEPTH {
        return Err(Unsupported(format!(
            "a type nested more than {MAX_TYPE_DEPTH} levels deep"
        )));
    }
    let inner = |t: &Type| schema(t, depth + 1);
    Ok(match ty {
        Type::Bool => json!({"type": "boolean"}),
        Type::S8 => int(i8::MIN, i8::MAX),
        Type::U8 => int(u8::MIN, u8::MAX),
        Type::S16 => int(i16::MIN, i16::MAX),
        Type::U16 => int(u16::MIN, u16::MAX),
        Type::S32 => int(i32::MIN, i32::MAX),
        Type::U32 => int(u32::MIN, u32::MAX),
        Type::S64 => int(i64::MIN, i64::MAX),
        Type::U64 => int(u64::MIN, u64::MAX),
        Type::Float32 | Type::Float64 => json!({"type": "number"}),
        Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        Type::String => json!({"type": "string"}),
        Type::List(l) => json!({"type": "array", "items": inner(&l.ty())?}),
        Type::FixedLengthList(l) => json!({
            "type": "array",
            "items": inner(&l.ty())?,
            "minItems": l.len(),
            "maxItems": l.len(),
        }),
        Type::Map(m) => {
            if m.key() == Type::String {
                json!({"type": "object", "additionalProperties": inner(&m.value())?})
            } else {
                let pair = tuple(&[inner(&m.key())?, inner(&m.value())?]);
                json!({"type": "array", "items": pair})
            }
        }
        Type::Tuple(t) => tuple(
            &t.types()
                .map(|t| inner(&t))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Type::Record(r) => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for f in r.fields() {
                properties.insert(f.name.to_string(), inner(&f.ty)?);
                required.push(Value::String(f.name.to_string()));
            }
            json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            })
        }
        Type::Variant(v) => {
            let cases = v
                .cases()
                .map(|c| Ok(tagged(c.name, c.ty.as_ref().map(inner).transpose()?)))
                .collect::<Result<Vec<_>, Unsupported>>()?;
            json!({"oneOf": cases})
        }
        Type::Result(r) => {
            let ok = r.ok().as_ref().map(inner).transpose()?;
            let err = r.err().as_ref().map(inner).transpose()?;
            json!({"oneOf": [tagged("ok", ok), tagged("err", err)]})
        }
        Type::Enum(e) => json!({"type": "string", "enum": e.names().collect::<Vec<_>>()}),
        Type::Flags(f) => json!({
            "type": "array",
            "items": {"type": "string", "enum": f.names().collect::<Vec<_>>()},
            "uniqueItems": true,
        }),
        Type::Option(o) => {
            let t = o.ty();
            let some = if matches!(t, Type::Option(_)) {
                // `null` already means the outer `none`: an inner value is wrapped.
                json!({
                    "type": "object",
                    "properties": {"some": inner(&t)?},
                    "required": ["some"],
                    "additionalProperties": false,
                })
            } else {
                inner(&t)?
            };
            json!({"anyOf": [{"type": "null"}, some]})
        }
        Type::Own(_) | Type::Borrow(_) => {
            return Err(Unsupported("a resource handle".into()));
        }
        Type::Future(_) => return Err(Unsupported("a future".into())),
        Type::Stream(_) => return Err(Unsupported("a stream".into())),
        Type::ErrorContext => return Err(Unsupported("an error-context".into())),
    })
}

/// An integer between `min` and `max`.
fn int(min: impl Into<Value>, max: impl Into<Value>) -> Value {
    json!({"type": "integer", "minimum": min.into(), "maximum": max.into()})
}

/// An array of exactly `items.len()` values, the i-th of schema `items[i]`.
fn tuple(items: &[Value]) -> Value {
    json!({
        "type": "array",
        "prefixItems": items,
        "items": false,
        "minItems": items.len(),
        "maxItems": items.len(),
    })
}

/// One case of a variant (or `ok`/`err` of a result): `{"tag": name, "value": payload}`,
/// without `value` for a case that carries none.
fn tagged(name: &str, payload: Option<Value>) -> Value {
    let mut properties = Map::new();
    properties.insert("tag".into(), json!({"const": name}));
    let mut required = vec![json!("tag")];
    if let Some(p) = payload {
        properties.insert("value".into(), p);
        required.push(json!("value"));
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// A short WIT-like rendering of `ty`, for the fallback description of a function
/// without docs (`list<string>`, `option<u32>`, `record`, ...).
pub(crate) fn wit_name(ty: &Type) -> String {
    wit_name_at(ty, 0)
}

fn wit_name_at(ty: &Type, depth: usize) -> String {
    if depth > 3 {
        return "…".into();
    }
    let n = |t: &Type| wit_name_at(t, depth + 1);
    match ty {
        Type::Bool => "bool".into(),
        Type::S8 => "s8".into(),
        Type::U8 => "u8".into(),
        Type::S16 => "s16".into(),
        Type::U16 => "u16".into(),
        Type::S32 => "s32".into(),
        Type::U32 => "u32".into(),
        Type::S64 => "s64".into(),
        Type::U64 => "u64".into(),
        Type::Float32 => "f32".into(),
        Type::Float64 => "f64".into(),
        Type::Char => "char".into(),
        Type::String => "string".into(),
        Type::List(l) => format!("list<{}>", n(&l.ty())),
        Type::FixedLengthList(l) => format!("list<{}, {}>", n(&l.ty()), l.len()),
        Type::Map(m) => format!("map<{}, {}>", n(&m.key()), n(&m.value())),
        Type::Tuple(t) => format!(
            "tuple<{}>",
            t.types().map(|t| n(&t)).collect::<Vec<_>>().join(", ")
        ),
        Type::Record(_) => "record".into(),
        Type::Variant(_) => "variant".into(),
        Type::Enum(_) => "enum".into(),
        Type::Flags(_) => "flags".into(),
        Type::Option(o) => format!("option<{}>", n(&o.ty())),
        Type::Result(r) => {
            let part = |t: Option<Type>| t.map_or_else(|| "_".to_string(), |t| n(&t));
            format!("result<{}, {}>", part(r.ok()), part(r.err()))
        }
        Type::Own(_) => "own<resource>".into(),
        Type::Borrow(_) => "borrow<resource>".into(),
        Type::Future(_) => "future".into(),
        Type::Stream(_) => "stream".into(),
        Type::ErrorContext => "error-context".into(),
    }
}
