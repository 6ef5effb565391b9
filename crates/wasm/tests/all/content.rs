//! Content blocks from WASM: a `toolhost:tool@0.2.0` component (`content_v2`) returns an
//! image, a resource link and an embedded blob beside text; they reach the registry output
//! (binary data base64-encoded) and a hostile MIME type is refused. A 0.1.0 component
//! (`calc`) loads next to it and keeps working.

use serde_json::json;
use toolhost_core::tools::ToolError;

use crate::support;

#[tokio::test]
async fn a_0_2_component_returns_content_blocks_and_0_1_components_still_load() {
    let dir = tempfile::tempdir().unwrap();
    support::install(dir.path(), "calc", None);
    support::install(dir.path(), "content_v2", None);
    let reg = support::registry(dir.path()).await;

    let out = support::call(&reg, "picture", json!({}))
        .await
        .output
        .unwrap();
    assert_eq!(out.canonical, json!({"ok": true}));
    assert_eq!(
        serde_json::to_value(&out.content).unwrap(),
        json!([
            {"type": "text", "text": "a picture:"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png",
             "annotations": {"audience": ["user"], "priority": 0.5}},
            {"type": "resource_link", "uri": "file:///data/report.txt", "name": "report",
             "title": "Report", "mimeType": "text/plain", "size": 42},
            {"type": "resource", "resource": {"uri": "demo://blob/1",
             "mimeType": "application/octet-stream", "blob": "AQID"}}
        ])
    );
    assert_eq!(
        out.render,
        "a picture:\n[image image/png (12 base64 bytes)]\n[resource link file:///data/report.txt]\n[resource demo://blob/1]"
    );

    // A hostile MIME type: refused whole, quoted escaped.
    let inv = support::call(&reg, "bad_picture", json!({})).await;
    let e = inv.output.unwrap_err();
    assert!(
        matches!(&e, ToolError::ExecutionFailed(_, m) if m.contains("is not a MIME type") && !m.contains('\u{1b}')),
        "{e}"
    );

    // No blocks: the 0.1.0 behaviour.
    let plain = support::call(&reg, "plain", json!({}))
        .await
        .output
        .unwrap();
    assert!(plain.content.is_empty());
    assert_eq!(plain.render, r#"{"ok":true}"#);

    // The 0.1.0 component beside it.
    support::still_works(&reg).await;
}
