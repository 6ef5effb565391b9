//! Secrets through the real registry pipeline: the JSON-lines audit and the argument
//! validation errors must never carry a secret in clear (see `toolhost_core::tools::redact`).
//! A hostile caller sends every shape of credential the audit used to keep; afterwards a
//! good call must still work and be audited normally.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::{Value, json};
use toolhost_core::tools::*;

const SECRETS: &[&str] = &[
    "hunter2-pass",
    "pwd-value-1",
    "auth-value-2",
    "bearer-value-3",
    "cred-value-4",
    "priv-value-5",
    "sess-value-6",
    "urlpw-7",
    "Bearer hdr.Value-8",
    "tok-cookie-9",
    "sk-proj-4f9aXb2Kq8ZrT1mN0pQs",
    "ghp_0123456789abcdefABCDEF0123456789abcd",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "MIIEsecretPEMbody",
    "short1",
];

fn registry(audit: &std::path::Path) -> ToolRegistry {
    let reg = ToolRegistry::new();
    reg.add_listener(Arc::new(JsonlAuditSink::open(audit).unwrap()));
    reg.register(
        DynamicTool::builder("connect")
            .description("Connect somewhere with whatever credentials are given")
            .parameters(json!({"type": "object"}))
            .handler(|_, _| async { Ok(ToolOutput::text("connected")) })
            .build_dyn(),
    )
    .unwrap();
    reg.register(
        DynamicTool::builder("signup")
            .description("Create an account with a user name and a password")
            .parameters(json!({
                "type": "object",
                "properties": {
                    "user": {"type": "string"},
                    "password": {"type": "string", "minLength": 12},
                    "token": {"type": "string", "enum": ["a", "b"]},
                    "note": {"type": "string", "maxLength": 5}
                },
                "required": ["user", "password"]
            }))
            .handler(|_, _| async { Ok(ToolOutput::text("signed up")) })
            .build_dyn(),
    )
    .unwrap();
    reg
}

#[tokio::test]
async fn audit_and_validation_errors_never_carry_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let reg = registry(&audit);

    // Every shape the audit used to keep in clear.
    let hostile = json!({
        "pass": "hunter2-pass",
        "pwd": "pwd-value-1",
        "auth": "auth-value-2",
        "bearer": "bearer-value-3",
        "credentials": {"user": "bob", "secret": "cred-value-4"},
        "private": "priv-value-5",
        "session": "sess-value-6",
        "dsn": "postgres://admin:urlpw-7@db.example:5432/app",
        "headers": [["Authorization", "Bearer hdr.Value-8"], ["Accept", "text/plain"]],
        "Set-Cookie": "tok-cookie-9",
        "note": "use sk-proj-4f9aXb2Kq8ZrT1mN0pQs and ghp_0123456789abcdefABCDEF0123456789abcd",
        "blob": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nMIIEsecretPEMbody\n-----END OPENSSH PRIVATE KEY-----",
    });
    let inv = reg.invoke_recorded("connect", hostile).await;
    assert!(inv.is_ok());

    // A password that fails `minLength`, a token outside its `enum`, and a credential in
    // a field that is not secret by name: the validation error must not quote them.
    let inv = reg
        .invoke_recorded(
            "signup",
            json!({"user": "bob", "password": "short1", "token": "Bearer hdr.Value-8",
                   "note": "https://u:urlpw-7@x.example/"}),
        )
        .await;
    let err = inv.output.unwrap_err();
    assert_eq!(err.kind(), "invalid_arguments");
    let msg = err.to_string();
    for s in SECRETS {
        assert!(!msg.contains(s), "validation error leaks {s:?}: {msg}");
    }
    // Still useful: it names the field and the rule.
    assert!(msg.contains("/password"), "{msg}");
    assert!(msg.contains("shorter than 12"), "{msg}");

    // The whole payload is also wrong in type at the top level: the message must not
    // quote the object that holds the password.
    let inv = reg
        .invoke_recorded("signup", json!([{"password": "hunter2-pass"}]))
        .await;
    let msg = inv.output.unwrap_err().to_string();
    assert!(!msg.contains("hunter2-pass"), "{msg}");

    // `additionalProperties: false` reports the extra value at the parent's path: the
    // password must be masked all the same.
    reg.register(
        DynamicTool::builder("strict")
            .description("Takes nothing at all and says so when given something")
            .parameters(json!({"type": "object", "additionalProperties": false}))
            .handler(|_, _| async { Ok(ToolOutput::text("ok")) })
            .build_dyn(),
    )
    .unwrap();
    let inv = reg
        .invoke_recorded("strict", json!({"password": "hunter2-pass"}))
        .await;
    let msg = inv.output.unwrap_err().to_string();
    assert!(!msg.contains("hunter2-pass"), "{msg}");

    // A good call still works and is audited with its harmless fields in clear.
    let inv = reg
        .invoke_recorded(
            "signup",
            json!({"user": "alice", "password": "a-long-enough-password"}),
        )
        .await;
    assert_eq!(inv.output.unwrap().render, "signed up");

    let text = std::fs::read_to_string(&audit).unwrap();
    for s in SECRETS {
        assert!(!text.contains(s), "audit leaks {s:?}:\n{text}");
    }
    assert!(!text.contains("a-long-enough-password"));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let started: Vec<&Value> = lines.iter().filter(|l| l["event"] == "started").collect();
    let first = &started[0]["input"];
    assert_eq!(first["pass"], "[REDACTED]");
    assert_eq!(first["credentials"], "[REDACTED]");
    assert_eq!(first["headers"][0], json!(["Authorization", "[REDACTED]"]));
    assert_eq!(first["headers"][1], json!(["Accept", "text/plain"]));
    assert_eq!(first["dsn"], "postgres://[REDACTED]@db.example:5432/app");
    let last = &started.last().unwrap()["input"];
    assert_eq!(last["user"], "alice");
    assert_eq!(last["password"], "[REDACTED]");
    // The failed validation is audited too, with its message scrubbed.
    assert!(
        lines
            .iter()
            .any(|l| l["event"] == "completed" && l["error_kind"] == "invalid_arguments"),
        "{text}"
    );
}

/// Credentials in URL query strings and fragments, in every URL of the arguments (also
/// inside prose): the values of secret parameters are hidden, every occurrence of a
/// repeated one, with percent-encoded and mixed-case names, and the rest of each URL stays
/// readable. A validation error that would quote such a URL masks it. A URL without
/// credentials passes through untouched.
#[tokio::test]
async fn query_string_credentials_are_redacted_in_every_url() {
    const QUERY_SECRETS: &[&str] = &[
        "qwerty123",
        "Zm9vYmFyc2ln",
        "userinfo-pw1",
        "amz-cred-2",
        "amz-sig-3",
        "note-key-4",
        "note-key-5",
        "oauth-code-6",
        "frag-tok-7",
        "enc-sig-8",
        "enc-cs-9",
        "rep-10",
        "rep-11",
        "rep-12",
        "qs-pw-13",
        "qs-cs-14",
        "qs-sig-15",
        "too-long-16",
    ];
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let reg = registry(&audit);
    reg.register(
        DynamicTool::builder("visit")
            .description("Visit one short link")
            .parameters(json!({
                "type": "object",
                "properties": {"link": {"type": "string", "maxLength": 20}},
                "required": ["link"]
            }))
            .handler(|_, _| async { Ok(ToolOutput::text("visited")) })
            .build_dyn(),
    )
    .unwrap();

    let hostile = json!({
        "url": "https://bob:userinfo-pw1@example.com/x?access_token=qwerty123&sig=Zm9vYmFyc2ln&user=ann",
        "signed": "https://b.s3.example/o?X-Amz-Date=20261203T000000Z&X-Amz-Credential=amz-cred-2&X-Amz-Signature=amz-sig-3&X-Amz-Expires=300",
        "note": "open https://api.example/v1?api_key=note-key-4&key=note-key-5 then \
                 https://h.example/cb?code=oauth-code-6&state=s1#access_token=frag-tok-7&expires_in=60.",
        "encoded": "https://h.example/p?X%2DAmz%2DSignature=enc-sig-8&CLIENT%5FSECRET=enc-cs-9",
        "repeated": ["https://h.example/p?token=rep-10&page=2&token=rep-11&TOKEN=rep-12"],
        "login": "https://h.example/login?password=qs-pw-13&client_secret=qs-cs-14&signature=qs-sig-15",
    });
    assert!(reg.invoke_recorded("connect", hostile).await.is_ok());
    let inv = reg
        .invoke_recorded(
            "visit",
            json!({"link": "https://h.example/?token=too-long-16"}),
        )
        .await;
    let err = inv.output.unwrap_err();
    assert_eq!(err.kind(), "invalid_arguments");
    let msg = err.to_string();
    assert!(!msg.contains("too-long-16"), "{msg}");
    assert!(msg.contains("/link"), "{msg}");

    // A good call: a URL without credentials is kept as it is.
    let plain = "https://example.com/search?q=token&page=2&country_code=US#key-points";
    let inv = reg
        .invoke_recorded("visit", json!({"link": "https://h.example/"}))
        .await;
    assert_eq!(inv.output.unwrap().render, "visited");
    assert!(
        reg.invoke_recorded("connect", json!({"url": plain}))
            .await
            .is_ok()
    );

    let text = std::fs::read_to_string(&audit).unwrap();
    for s in QUERY_SECRETS {
        assert!(!text.contains(s), "audit leaks {s:?}:\n{text}");
    }
    let started: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["event"] == "started")
        .collect();
    let first = &started[0]["input"];
    assert_eq!(
        first["url"],
        "https://[REDACTED]@example.com/x?access_token=[REDACTED]&sig=[REDACTED]&user=ann"
    );
    assert_eq!(
        first["signed"],
        "https://b.s3.example/o?X-Amz-Date=20261203T000000Z&X-Amz-Credential=[REDACTED]\
         &X-Amz-Signature=[REDACTED]&X-Amz-Expires=300"
    );
    assert_eq!(
        first["note"],
        "open https://api.example/v1?api_key=[REDACTED]&key=[REDACTED] then \
         https://h.example/cb?code=[REDACTED]&state=s1#access_token=[REDACTED]&expires_in=60."
    );
    assert_eq!(
        first["encoded"],
        "https://h.example/p?X%2DAmz%2DSignature=[REDACTED]&CLIENT%5FSECRET=[REDACTED]"
    );
    assert_eq!(
        first["repeated"][0],
        "https://h.example/p?token=[REDACTED]&page=2&token=[REDACTED]&TOKEN=[REDACTED]"
    );
    assert_eq!(
        first["login"],
        "https://h.example/login?password=[REDACTED]&client_secret=[REDACTED]&signature=[REDACTED]"
    );
    assert_eq!(started.last().unwrap()["input"]["url"], plain);
}
