//! Pipeline stage 3: the static permission checker runs before execution; destructive
//! tools need an approver (allow once, allow always, deny), and none means denied.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::json;
use toolhost_core::tools::*;

use crate::support::*;

#[tokio::test]
async fn permission_checker_runs_before_execution() {
    let runs = Arc::new(AtomicUsize::new(0));
    let reg = ToolRegistry::new().with_permission_checker(PermissionChecker::default());
    reg.register(counting_tool(
        "writer",
        vec![Permission::Write],
        runs.clone(),
    ))
    .unwrap();
    reg.register(counting_tool(
        "reader",
        vec![Permission::Read],
        runs.clone(),
    ))
    .unwrap();
    let mut events = reg.subscribe();

    let inv = reg.invoke_recorded("writer", json!({"text": "x"})).await;
    assert!(matches!(inv.output, Err(ToolError::PermissionDenied(..))));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(!inv.output.unwrap_err().is_recoverable());
    match events.recv().await.unwrap() {
        ToolEvent::PermissionDenied { tool, reason, .. } => {
            assert_eq!(tool, "writer");
            assert!(reason.contains("add \"write\" to `allowed`"), "{reason}");
        }
        other => panic!("expected PermissionDenied event, got {other:?}"),
    }
    assert!(matches!(
        events.recv().await.unwrap(),
        ToolEvent::Completed { ok: false, .. }
    ));

    assert!(
        reg.invoke_recorded("reader", json!({"text": "x"}))
            .await
            .is_ok()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

fn destructive_file_tool(name: &str) -> Arc<dyn BaseTool> {
    DynamicTool::builder(name)
        .description("Create a marker file at the given path (destructive test tool)")
        .parameters(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))
        .permissions(vec![Permission::Delete])
        .handler(|args, _| async move {
            let path = args["path"].as_str().unwrap_or_default().to_string();
            std::fs::write(&path, b"ran").map_err(ToolError::from)?;
            Ok(ToolOutput::text("done"))
        })
        .build_dyn()
}

#[tokio::test]
async fn destructive_tool_without_approver_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("mark");
    let reg = ToolRegistry::new();
    reg.register(destructive_file_tool("rm_rf")).unwrap();
    let inv = reg
        .invoke_recorded("rm_rf", json!({"path": mark.to_str().unwrap()}))
        .await;
    let err = inv.output.unwrap_err();
    assert!(matches!(err, ToolError::PermissionDenied(..)), "{err:?}");
    assert!(err.to_string().contains("no approver is configured"));
    assert!(!mark.exists(), "the destructive tool ran without approval");
}

struct Scripted {
    answers: std::sync::Mutex<Vec<ApprovalDecision>>,
    asked: AtomicUsize,
}

#[async_trait]
impl Approver for Scripted {
    async fn approve(&self, req: &ApprovalRequest) -> ApprovalDecision {
        assert_eq!(req.risk, RiskLevel::Destructive);
        assert!(req.reason.contains("delete"));
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.answers.lock().unwrap().remove(0)
    }
}

#[tokio::test]
async fn approver_deny_once_and_always() {
    let dir = tempfile::tempdir().unwrap();
    let approver = Arc::new(Scripted {
        answers: std::sync::Mutex::new(vec![
            ApprovalDecision::Deny,
            ApprovalDecision::AllowOnce,
            ApprovalDecision::AllowAlways,
        ]),
        asked: AtomicUsize::new(0),
    });
    let reg = ToolRegistry::new().with_approver(approver.clone());
    reg.register(destructive_file_tool("rm_rf")).unwrap();
    let mut events = reg.subscribe();
    let path = |n: &str| dir.path().join(n).to_str().unwrap().to_string();

    let denied = reg
        .invoke_recorded("rm_rf", json!({"path": path("a")}))
        .await;
    assert!(
        denied
            .output
            .unwrap_err()
            .to_string()
            .contains("approver denied")
    );
    assert!(!dir.path().join("a").exists());
    assert!(
        reg.invoke_recorded("rm_rf", json!({"path": path("b")}))
            .await
            .is_ok()
    );
    assert!(
        reg.invoke_recorded("rm_rf", json!({"path": path("c")}))
            .await
            .is_ok()
    );
    // "Allow always" is remembered: the approver is not asked again.
    assert!(
        reg.invoke_recorded("rm_rf", json!({"path": path("d")}))
            .await
            .is_ok()
    );
    assert_eq!(approver.asked.load(Ordering::SeqCst), 3);
    assert!(dir.path().join("b").exists() && dir.path().join("d").exists());

    let mut decided = Vec::new();
    while let Ok(ev) = events.try_recv() {
        if let ToolEvent::ApprovalDecided { decision, by, .. } = ev {
            decided.push((decision, by));
        }
    }
    assert_eq!(
        decided,
        vec![
            (ApprovalDecision::Deny, "approver".to_string()),
            (ApprovalDecision::AllowOnce, "approver".to_string()),
            (ApprovalDecision::AllowAlways, "approver".to_string()),
            (ApprovalDecision::AllowAlways, "remembered".to_string()),
        ]
    );
    // After a reset the approver is asked again; a panicking approver counts as a denial.
    reg.reset_approvals();
    let inv = reg
        .invoke_recorded("rm_rf", json!({"path": path("e")}))
        .await;
    assert!(matches!(inv.output, Err(ToolError::PermissionDenied(..))));
    assert_eq!(approver.asked.load(Ordering::SeqCst), 4);
    assert!(!dir.path().join("e").exists());
}

#[tokio::test]
async fn one_checker_shared_through_an_arc_governs_every_registry_that_holds_it() {
    let checker = Arc::new(PermissionChecker::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let registries: Vec<ToolRegistry> = (0..2).map(|_| ToolRegistry::new()).collect();
    for reg in &registries {
        reg.set_permission_checker(Some(checker.clone()));
        for (name, p) in [("writer", Permission::Write), ("reader", Permission::Read)] {
            reg.register(counting_tool(name, vec![p], runs.clone()))
                .unwrap();
        }
    }
    assert_eq!(Arc::strong_count(&checker), 3, "shared, not copied");
    for reg in &registries {
        let denied = reg.invoke_recorded("writer", json!({"text": "x"})).await;
        assert!(matches!(
            denied.output,
            Err(ToolError::PermissionDenied(..))
        ));
        assert!(
            reg.invoke_recorded("reader", json!({"text": "x"}))
                .await
                .is_ok()
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2, "only the reads ran");
    // Taken away from one registry, it still governs the other.
    registries[0].set_permission_checker(None);
    assert_eq!(Arc::strong_count(&checker), 2);
    let still = registries[1]
        .invoke_recorded("writer", json!({"text": "x"}))
        .await;
    assert!(matches!(still.output, Err(ToolError::PermissionDenied(..))));
}
