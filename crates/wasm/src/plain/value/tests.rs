//! Round trips JSON → component value → JSON for every WIT type, boundary integers and
//! nested options included, and the refusals and bounds of both directions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Type};

use super::*;

/// The parameter types of a component importing `f` with one parameter per type.
fn types() -> BTreeMapTypes {
    let wat = r#"(component
        (type $point' (record (field "x" f64) (field "y" f64)))
        (import "point" (type $point (eq $point')))
        (type $shape' (variant (case "circle" f64) (case "rect" $point) (case "empty")))
        (import "shape" (type $shape (eq $shape')))
        (type $color' (enum "red" "green" "blue"))
        (import "color" (type $color (eq $color')))
        (type $perms' (flags "read" "write" "exec"))
        (import "perms" (type $perms (eq $perms')))
        (import "f" (func
            (param "bool" bool)
            (param "u8" u8) (param "s8" s8) (param "u16" u16) (param "s16" s16)
            (param "u32" u32) (param "s32" s32) (param "u64" u64) (param "s64" s64)
            (param "f32" f32) (param "f64" f64) (param "char" char) (param "string" string)
            (param "bytes" (list u8)) (param "strings" (list string))
            (param "tuple" (tuple u8 string))
            (param "point" $point) (param "shape" $shape) (param "color" $color)
            (param "perms" $perms)
            (param "opt" (option u32)) (param "opt2" (option (option string)))
            (param "res" (result u32 (error string))) (param "res0" (result))
            (param "nested" (list (option $point)))
        ))
    )"#;
    let engine = wasmtime::Engine::default();
    let bytes = wat::parse_str(wat).unwrap();
    let component = Component::new(&engine, &bytes).unwrap();
    let ty = component.component_type();
    let (_, f) = ty.imports(&engine).find(|(n, _)| *n == "f").unwrap();
    let ComponentItem::ComponentFunc(f) = f.ty else {
        panic!("not a function")
    };
    BTreeMapTypes(f.params().map(|(n, t)| (n.to_string(), t)).collect())
}

struct BTreeMapTypes(std::collections::BTreeMap<String, Type>);

impl BTreeMapTypes {
    fn get(&self, name: &str) -> &Type {
        self.0.get(name).unwrap()
    }
}

fn round_trip(ty: &Type, v: &Value) -> Result<Value, String> {
    let mut budget = Budget::arguments();
    let val = to_val(v, ty, "p", &mut budget).map_err(|e| e.0)?;
    let mut budget = Budget {
        values: usize::MAX,
        bytes: 1 << 20,
    };
    to_json(&val, &mut budget).map_err(|e| e.0)
}

#[test]
fn every_kind_round_trips_json_to_value_to_json() {
    let t = types();
    let cases = [
        ("bool", vec![json!(true), json!(false)]),
        ("u8", vec![json!(0), json!(255)]),
        ("s8", vec![json!(-128), json!(127)]),
        ("u16", vec![json!(0), json!(65535)]),
        ("s16", vec![json!(-32768), json!(32767)]),
        ("u32", vec![json!(0), json!(u32::MAX)]),
        ("s32", vec![json!(i32::MIN), json!(i32::MAX)]),
        ("u64", vec![json!(0), json!(u64::MAX)]),
        ("s64", vec![json!(i64::MIN), json!(i64::MAX)]),
        ("f32", vec![json!(0.5), json!(-3.25), json!(0.1)]),
        ("f64", vec![json!(0.1), json!(-1e300)]),
        ("char", vec![json!("a"), json!("ß"), json!("\u{1F600}")]),
        ("string", vec![json!(""), json!("hé\n\u{1b}")]),
        ("bytes", vec![json!([]), json!([0, 1, 255])]),
        ("strings", vec![json!([]), json!(["a", ""])]),
        ("tuple", vec![json!([1, "a"])]),
        ("point", vec![json!({"x": 1.5, "y": -2.0})]),
        (
            "shape",
            vec![
                json!({"tag": "circle", "value": 2.0}),
                json!({"tag": "rect", "value": {"x": 1.0, "y": 2.0}}),
                json!({"tag": "empty"}),
            ],
        ),
        ("color", vec![json!("red"), json!("blue")]),
        ("perms", vec![json!([]), json!(["read", "exec"])]),
        ("opt", vec![json!(null), json!(0), json!(u32::MAX)]),
        (
            "opt2",
            vec![json!(null), json!({"some": null}), json!({"some": "x"})],
        ),
        (
            "res",
            vec![
                json!({"tag": "ok", "value": 1}),
                json!({"tag": "err", "value": "e"}),
            ],
        ),
        ("res0", vec![json!({"tag": "ok"}), json!({"tag": "err"})]),
        (
            "nested",
            vec![json!([null, {"x": 0.0, "y": 1.0}, {"some": 1}])],
        ),
    ];
    for (name, values) in cases {
        for v in values {
            let got = round_trip(t.get(name), &v);
            if name == "nested" {
                // `{"some": 1}` is not a point: an argument error naming the place.
                assert_eq!(
                    got.unwrap_err(),
                    "`p[2]`: the field `x` is missing",
                    "{name} {v}"
                );
                continue;
            }
            assert_eq!(got.as_ref(), Ok(&v), "{name} {v}");
        }
    }
    // An integral float is an integer.
    assert_eq!(round_trip(t.get("u8"), &json!(3.0)), Ok(json!(3)));
}

#[test]
fn out_of_range_and_wrong_values_are_argument_errors() {
    let t = types();
    let bad = [
        ("u8", json!(256), "`p`: 256 is out of range (0 to 255)"),
        ("u8", json!(-1), "`p`: -1 is out of range (0 to 255)"),
        ("s8", json!(-129), "`p`: -129 is out of range (-128 to 127)"),
        ("u64", json!(-1), "`p`: -1 is out of range"),
        (
            "s64",
            json!(u64::MAX),
            "`p`: 18446744073709551615 is out of range",
        ),
        ("u32", json!(1e300), "`p`: 1e+300 is out of range"),
        ("u32", json!(0.5), "`p`: expected an integer, got 0.5"),
        ("f32", json!(1e39), "out of range for a 32-bit float"),
        ("char", json!("ab"), "expected a string of one character"),
        ("char", json!(""), "expected a string of one character"),
        ("string", json!(1), "`p`: expected a string, got 1"),
        ("color", json!("purple"), "unknown case \"purple\""),
        (
            "perms",
            json!(["read", "read"]),
            "the flag `read` is given twice",
        ),
        ("perms", json!(["sudo"]), "unknown flag \"sudo\""),
        ("point", json!({"x": 1.0}), "the field `y` is missing"),
        (
            "point",
            json!({"x": 1.0, "y": 1.0, "z": 0}),
            "unknown field \"z\"",
        ),
        ("tuple", json!([1]), "an array of exactly 2 items"),
        (
            "shape",
            json!({"tag": "empty", "value": 1}),
            "carries no `value`",
        ),
        ("shape", json!("circle"), "expected an object {\"tag\""),
        ("res", json!({"tag": "maybe"}), "unknown case \"maybe\""),
        ("opt2", json!("x"), "expected null or {\"some\": value}"),
        ("bytes", json!([0, 256]), "`p[1]`: 256 is out of range"),
    ];
    for (name, v, want) in bad {
        let got = round_trip(t.get(name), &v).unwrap_err();
        assert!(got.contains(want), "{name} {v}: {got}");
    }
}

#[test]
fn arguments_and_results_are_bounded() {
    let t = types();
    let many = Value::Array(vec![json!(""); MAX_ARG_VALUES + 1]);
    let got = round_trip(t.get("strings"), &many).unwrap_err();
    assert!(got.contains("too large"), "{got}");
    let long = Value::String("x".repeat(MAX_ARG_BYTES + 1));
    let got = round_trip(t.get("string"), &long).unwrap_err();
    assert!(got.contains("too large"), "{got}");

    let big = Val::List(vec![Val::U32(u32::MAX); 200_000]);
    let mut budget = Budget {
        values: usize::MAX,
        bytes: 1 << 20,
    };
    let got = to_json(&big, &mut budget).unwrap_err().0;
    assert!(got.contains("too large"), "{got}");
    // Deeper than any accepted type: refused, not a stack overflow.
    let mut deep = Val::Bool(true);
    for _ in 0..=MAX_TYPE_DEPTH {
        deep = Val::List(vec![deep]);
    }
    let got = to_json(
        &deep,
        &mut Budget {
            values: 1000,
            bytes: 1000,
        },
    )
    .unwrap_err()
    .0;
    assert!(got.contains("nested"), "{got}");
    // Non-finite floats have no JSON number.
    let v = to_json(
        &Val::Float64(f64::NAN),
        &mut Budget {
            values: 1,
            bytes: 100,
        },
    );
    assert_eq!(v, Ok(json!("NaN")));
}
