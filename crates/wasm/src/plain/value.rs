//! JSON ↔ component values for plain WIT components: [`to_val`] turns a model's JSON
//! argument into a `Val` of the parameter's WIT type, checking it against the schema
//! `schema.rs` derives from the same type (a wrong type, an integer out of range, an
//! unknown enum case, a missing field is an argument error naming where it is, before
//! any guest code runs); [`to_json`] turns a returned `Val` into canonical JSON. Both
//! are bounded by a [`Budget`], so neither a huge argument nor a huge result grows
//! without limit. The mapping is the table in `docs/writing-plugins.md` ("Plain WIT
//! components").

use serde_json::{Map, Number, Value};
use wasmtime::component::{Type, Val};

use super::limits::{MAX_ARG_BYTES, MAX_ARG_VALUES, MAX_TYPE_DEPTH};

/// What a conversion may still produce: values (every scalar and container counts one)
/// and bytes (of strings; of the JSON text for a result).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Values left.
    pub(crate) values: usize,
    /// Bytes left.
    pub(crate) bytes: usize,
}

impl Budget {
    /// The budget of one call's arguments.
    pub(crate) fn arguments() -> Self {
        Budget {
            values: MAX_ARG_VALUES,
            bytes: MAX_ARG_BYTES,
        }
    }

    /// Takes one value and `bytes` bytes; false when over.
    fn take(&mut self, bytes: usize) -> bool {
        if self.values == 0 || self.bytes < bytes {
            return false;
        }
        self.values -= 1;
        self.bytes -= bytes;
        true
    }
}

/// Why an argument does not fit its parameter's type: the place (`a.b[2]`) and what was
/// expected. Shown to the model as an argument error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ArgError(pub(crate) String);

/// Why a result cannot become JSON (over its budget, or a value with no JSON form).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ResultError(pub(crate) String);

/// The JSON `v` (at `path`, for messages) as a value of `ty`.
pub(crate) fn to_val(
    v: &Value,
    ty: &Type,
    path: &str,
    budget: &mut Budget,
) -> Result<Val, ArgError> {
    to_val_at(v, ty, path, budget, 0)
}

fn to_val_at(
    v: &Value,
    ty: &Type,
    path: &str,
    budget: &mut Budget,
    depth: usize,
) -> Result<Val, ArgError> {
    let fail = |what: &str| ArgError(format!("`{path}`: expected {what}, got {}", kind(v)));
    if depth > MAX_TYPE_DEPTH {
        return Err(ArgError(format!(
            "`{path}`: nested more than {MAX_TYPE_DEPTH} levels deep"
        )));
    }
    let size = match v {
        Value::String(s) => s.len(),
        _ => 0,
    };
    if !budget.take(size) {
        return Err(ArgError(format!(
            "`{path}`: the arguments are too large (at most {MAX_ARG_VALUES} values and {MAX_ARG_BYTES} bytes of text)"
        )));
    }
    let next = |v: &Value, ty: &Type, p: String, b: &mut Budget| to_val_at(v, ty, &p, b, depth + 1);
    Ok(match ty {
        Type::Bool => Val::Bool(v.as_bool().ok_or_else(|| fail("true or false"))?),
        Type::S8 => Val::S8(int(v, path)?),
        Type::U8 => Val::U8(int(v, path)?),
        Type::S16 => Val::S16(int(v, path)?),
        Type::U16 => Val::U16(int(v, path)?),
        Type::S32 => Val::S32(int(v, path)?),
        Type::U32 => Val::U32(int(v, path)?),
        Type::S64 => Val::S64(int(v, path)?),
        Type::U64 => Val::U64(int(v, path)?),
        Type::Float32 => {
            let f = v.as_f64().ok_or_else(|| fail("a number"))?;
            if f.abs() > f64::from(f32::MAX) {
                return Err(ArgError(format!(
                    "`{path}`: {f} is out of range for a 32-bit float"
                )));
            }
            // Narrowing to the nearest f32 is the point of the parameter's type.
            #[allow(clippy::cast_possible_truncation)]
            Val::Float32(f as f32)
        }
        Type::Float64 => Val::Float64(v.as_f64().ok_or_else(|| fail("a number"))?),
        Type::Char => {
            let s = v
                .as_str()
                .ok_or_else(|| fail("a string of one character"))?;
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(fail("a string of one character")),
            }
        }
        Type::String => Val::String(v.as_str().ok_or_else(|| fail("a string"))?.to_string()),
        Type::List(l) => {
            let items = v.as_array().ok_or_else(|| fail("an array"))?;
            let t = l.ty();
            Val::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| next(x, &t, format!("{path}[{i}]"), budget))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::FixedLengthList(l) => {
            let items = v.as_array().ok_or_else(|| fail("an array"))?;
            if items.len() != l.len() as usize {
                return Err(fail(&format!("an array of exactly {} items", l.len())));
            }
            let t = l.ty();
            Val::FixedLengthList(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| next(x, &t, format!("{path}[{i}]"), budget))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Map(m) => {
            let (k, val) = (m.key(), m.value());
            if k == Type::String {
                let obj = v.as_object().ok_or_else(|| fail("an object"))?;
                let mut pairs = Vec::with_capacity(obj.len());
                for (key, x) in obj {
                    if !budget.take(key.len()) {
                        return Err(ArgError(format!("`{path}`: the arguments are too large")));
                    }
                    pairs.push((
                        Val::String(key.clone()),
                        next(x, &val, format!("{path}.{key}"), budget)?,
                    ));
                }
                Val::Map(pairs)
            } else {
                let items = v
                    .as_array()
                    .ok_or_else(|| fail("an array of [key, value] pairs"))?;
                let mut pairs = Vec::with_capacity(items.len());
                for (i, pair) in items.iter().enumerate() {
                    match pair.as_array().map(Vec::as_slice) {
                        Some([key, x]) => pairs.push((
                            next(key, &k, format!("{path}[{i}][0]"), budget)?,
                            next(x, &val, format!("{path}[{i}][1]"), budget)?,
                        )),
                        _ => {
                            return Err(ArgError(format!(
                                "`{path}[{i}]`: expected a [key, value] pair"
                            )));
                        }
                    }
                }
                Val::Map(pairs)
            }
        }
        Type::Tuple(t) => {
            let items = v.as_array().ok_or_else(|| fail("an array"))?;
            if items.len() != t.types().len() {
                return Err(fail(&format!(
                    "an array of exactly {} items",
                    t.types().len()
                )));
            }
            Val::Tuple(
                items
                    .iter()
                    .zip(t.types())
                    .enumerate()
                    .map(|(i, (x, ty))| next(x, &ty, format!("{path}[{i}]"), budget))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Record(r) => {
            let obj = v.as_object().ok_or_else(|| fail("an object"))?;
            let mut fields = Vec::with_capacity(r.fields().len());
            for f in r.fields() {
                let x = obj.get(f.name).ok_or_else(|| {
                    ArgError(format!("`{path}`: the field `{}` is missing", f.name))
                })?;
                fields.push((
                    f.name.to_string(),
                    next(x, &f.ty, format!("{path}.{}", f.name), budget)?,
                ));
            }
            if let Some(extra) = obj
                .keys()
                .find(|k| r.fields().all(|f| f.name != k.as_str()))
            {
                return Err(ArgError(format!(
                    "`{path}`: unknown field {}; the fields are {}",
                    quote(extra),
                    r.fields()
                        .map(|f| format!("`{}`", f.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            Val::Record(fields)
        }
        Type::Variant(var) => {
            let (tag, payload) = tagged(v, path)?;
            let Some(case) = var.cases().find(|c| c.name == tag) else {
                return Err(ArgError(format!(
                    "`{path}`: unknown case {}; the cases are {}",
                    quote(tag),
                    var.cases()
                        .map(|c| format!("`{}`", c.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            let payload = case_payload(case.ty.as_ref(), payload, path, &mut |x, t| {
                next(x, t, format!("{path}.value"), budget)
            })?;
            Val::Variant(case.name.to_string(), payload)
        }
        Type::Result(r) => {
            let (tag, payload) = tagged(v, path)?;
            let mut conv = |x: &Value, t: &Type| next(x, t, format!("{path}.value"), budget);
            match tag {
                "ok" => Val::Result(Ok(case_payload(r.ok().as_ref(), payload, path, &mut conv)?)),
                "err" => Val::Result(Err(case_payload(
                    r.err().as_ref(),
                    payload,
                    path,
                    &mut conv,
                )?)),
                other => {
                    return Err(ArgError(format!(
                        "`{path}`: unknown case {}; the cases are `ok`, `err`",
                        quote(other)
                    )));
                }
            }
        }
        Type::Enum(e) => {
            let s = v.as_str().ok_or_else(|| fail("a string"))?;
            if !e.names().any(|n| n == s) {
                return Err(ArgError(format!(
                    "`{path}`: unknown case {}; the cases are {}",
                    quote(s),
                    e.names()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            Val::Enum(s.to_string())
        }
        Type::Flags(f) => {
            let items = v.as_array().ok_or_else(|| fail("an array of flag names"))?;
            let mut set: Vec<String> = Vec::with_capacity(items.len());
            for x in items {
                let s = x.as_str().ok_or_else(|| fail("an array of flag names"))?;
                if !f.names().any(|n| n == s) {
                    return Err(ArgError(format!(
                        "`{path}`: unknown flag {}; the flags are {}",
                        quote(s),
                        f.names()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                if set.iter().any(|n| n == s) {
                    return Err(ArgError(format!("`{path}`: the flag `{s}` is given twice")));
                }
                set.push(s.to_string());
            }
            Val::Flags(set)
        }
        Type::Option(o) => {
            let t = o.ty();
            match v {
                Value::Null => Val::Option(None),
                _ if matches!(t, Type::Option(_)) => {
                    let inner = v
                        .as_object()
                        .filter(|m| m.len() == 1)
                        .and_then(|m| m.get("some"))
                        .ok_or_else(|| fail("null or {\"some\": value}"))?;
                    Val::Option(Some(Box::new(next(
                        inner,
                        &t,
                        format!("{path}.some"),
                        budget,
                    )?)))
                }
                _ => Val::Option(Some(Box::new(next(v, &t, path.to_string(), budget)?))),
            }
        }
        Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            return Err(ArgError(format!(
                "`{path}`: this type cannot be given as JSON"
            )));
        }
    })
}

/// An integer of type `T` from a JSON number (an integral float such as `3.0` counts).
fn int<T>(v: &Value, path: &str) -> Result<T, ArgError>
where
    T: TryFrom<i64> + TryFrom<u64> + Bounded,
{
    let out_of_range = || {
        ArgError(format!(
            "`{path}`: {v} is out of range ({} to {})",
            T::MIN,
            T::MAX
        ))
    };
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                T::try_from(u).map_err(|_| out_of_range())
            } else if let Some(i) = n.as_i64() {
                T::try_from(i).map_err(|_| out_of_range())
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                // Exactly representable integers only (|f| < 2^53), then the same checks.
                if f.fract() != 0.0 || !f.is_finite() {
                    return Err(ArgError(format!("`{path}`: expected an integer, got {v}")));
                }
                if f.abs() >= 9_007_199_254_740_992.0 {
                    return Err(out_of_range());
                }
                // In range of i64 by the check above, and integral.
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                T::try_from(i).map_err(|_| out_of_range())
            }
        }
        other => Err(ArgError(format!(
            "`{path}`: expected an integer, got {}",
            kind(other)
        ))),
    }
}

/// The bounds of an integer type, for messages.
trait Bounded {
    /// The smallest value.
    const MIN: i128;
    /// The largest value.
    const MAX: i128;
}

macro_rules! bounded {
    ($($t:ty)*) => {$(
        impl Bounded for $t {
            const MIN: i128 = <$t>::MIN as i128;
            const MAX: i128 = <$t>::MAX as i128;
        }
    )*};
}
bounded!(i8 u8 i16 u16 i32 u32 i64 u64);

/// The `tag` and `value` of a tagged object `{"tag": ..., "value": ...}`.
fn tagged<'v>(v: &'v Value, path: &str) -> Result<(&'v str, Option<&'v Value>), ArgError> {
    let obj = v.as_object().ok_or_else(|| {
        ArgError(format!(
            "`{path}`: expected an object {{\"tag\": case, \"value\": payload}}, got {}",
            kind(v)
        ))
    })?;
    let tag = obj
        .get("tag")
        .and_then(Value::as_str)
        .ok_or_else(|| ArgError(format!("`{path}`: expected a string `tag` naming the case")))?;
    if let Some(extra) = obj.keys().find(|k| *k != "tag" && *k != "value") {
        return Err(ArgError(format!(
            "`{path}`: unknown field {}; a case has `tag` and `value`",
            quote(extra)
        )));
    }
    Ok((tag, obj.get("value")))
}

/// The payload of a case of type `ty` (none when the case has no payload).
fn case_payload(
    ty: Option<&Type>,
    payload: Option<&Value>,
    path: &str,
    conv: &mut dyn FnMut(&Value, &Type) -> Result<Val, ArgError>,
) -> Result<Option<Box<Val>>, ArgError> {
    match (ty, payload) {
        (Some(t), Some(x)) => Ok(Some(Box::new(conv(x, t)?))),
        (Some(_), None) => Err(ArgError(format!("`{path}`: this case needs a `value`"))),
        (None, None) => Ok(None),
        (None, Some(_)) => Err(ArgError(format!("`{path}`: this case carries no `value`"))),
    }
}

/// What a JSON value is, for messages.
fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("the string {}", quote(s)),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

/// At most 40 characters of untrusted text, quoted and escaped.
fn quote(s: &str) -> String {
    let cut: String = s.chars().take(40).collect();
    if cut.len() < s.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

/// `v` as canonical JSON, within `budget` (bytes of JSON text, values).
pub(crate) fn to_json(v: &Val, budget: &mut Budget) -> Result<Value, ResultError> {
    to_json_at(v, budget, 0)
}

fn to_json_at(v: &Val, budget: &mut Budget, depth: usize) -> Result<Value, ResultError> {
    if depth > MAX_TYPE_DEPTH {
        return Err(ResultError(format!(
            "the result is nested more than {MAX_TYPE_DEPTH} levels deep"
        )));
    }
    // A rough size of the value's JSON text: enough to stop a huge result early.
    let size = match v {
        Val::String(s) => s.len() + 2,
        Val::Record(f) => f.iter().map(|(n, _)| n.len() + 4).sum::<usize>() + 2,
        Val::Variant(n, _) | Val::Enum(n) => n.len() + 20,
        Val::Flags(f) => f.iter().map(|n| n.len() + 3).sum::<usize>() + 2,
        _ => 8,
    };
    if !budget.take(size) {
        return Err(ResultError(format!(
            "the result is too large for a tool result (over {} bytes of JSON)",
            super::limits::MAX_RESULT_BYTES
        )));
    }
    let next = |v: &Val, b: &mut Budget| to_json_at(v, b, depth + 1);
    let list = |items: &[Val], b: &mut Budget| -> Result<Value, ResultError> {
        Ok(Value::Array(
            items.iter().map(|x| next(x, b)).collect::<Result<_, _>>()?,
        ))
    };
    let tagged =
        |tag: &str, payload: &Option<Box<Val>>, b: &mut Budget| -> Result<Value, ResultError> {
            let mut m = Map::new();
            m.insert("tag".into(), Value::String(tag.to_string()));
            if let Some(p) = payload {
                m.insert("value".into(), next(p, b)?);
            }
            Ok(Value::Object(m))
        };
    Ok(match v {
        Val::Bool(b) => Value::Bool(*b),
        Val::S8(n) => Value::from(*n),
        Val::U8(n) => Value::from(*n),
        Val::S16(n) => Value::from(*n),
        Val::U16(n) => Value::from(*n),
        Val::S32(n) => Value::from(*n),
        Val::U32(n) => Value::from(*n),
        Val::S64(n) => Value::from(*n),
        Val::U64(n) => Value::from(*n),
        // Through its shortest decimal form, so 0.1f32 reads 0.1 rather than
        // 0.10000000149011612.
        Val::Float32(f) => float(f.to_string().parse::<f64>().unwrap_or(f64::NAN)),
        Val::Float64(f) => float(*f),
        Val::Char(c) => Value::String(c.to_string()),
        Val::String(s) => Value::String(s.clone()),
        Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => list(items, budget)?,
        Val::Map(pairs) => {
            if pairs.iter().all(|(k, _)| matches!(k, Val::String(_))) {
                let mut m = Map::new();
                for (k, x) in pairs {
                    if let Val::String(k) = k {
                        m.insert(k.clone(), next(x, budget)?);
                    }
                }
                Value::Object(m)
            } else {
                Value::Array(
                    pairs
                        .iter()
                        .map(|(k, x)| Ok(Value::Array(vec![next(k, budget)?, next(x, budget)?])))
                        .collect::<Result<_, ResultError>>()?,
                )
            }
        }
        Val::Record(fields) => {
            let mut m = Map::new();
            for (name, x) in fields {
                m.insert(name.clone(), next(x, budget)?);
            }
            Value::Object(m)
        }
        Val::Variant(case, payload) => tagged(case, payload, budget)?,
        Val::Result(Ok(payload)) => tagged("ok", payload, budget)?,
        Val::Result(Err(payload)) => tagged("err", payload, budget)?,
        Val::Enum(case) => Value::String(case.clone()),
        Val::Flags(names) => Value::Array(names.iter().map(|n| Value::String(n.clone())).collect()),
        Val::Option(None) => Value::Null,
        Val::Option(Some(inner)) => {
            let x = next(inner, budget)?;
            if matches!(**inner, Val::Option(_)) {
                let mut m = Map::new();
                m.insert("some".into(), x);
                Value::Object(m)
            } else {
                x
            }
        }
        Val::Resource(_) | Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => {
            return Err(ResultError(
                "the result holds a handle (resource, future, stream), which has no JSON form"
                    .into(),
            ));
        }
    })
}

/// A float as JSON: a number when finite, else the string `NaN`, `Infinity` or
/// `-Infinity` (JSON has no such numbers).
fn float(f: f64) -> Value {
    match Number::from_f64(f) {
        Some(n) => Value::Number(n),
        None if f.is_nan() => Value::String("NaN".into()),
        None if f > 0.0 => Value::String("Infinity".into()),
        None => Value::String("-Infinity".into()),
    }
}

#[cfg(test)]
mod tests;
