//! Pipeline stage 3 beyond the static policy: the permission hook chain (any deny wins,
//! in order, fail closed on a panic, every decision an event) and approvals with a scope
//! (once, this session, always for an argument pattern, deny with a reason). The tools
//! write real marker files, so "did not run" is checked on disk.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use toolhost_core::tools::*;

/// A tool that creates the file at `path`.
fn marker_tool(name: &str, perms: Vec<Permission>) -> Arc<dyn BaseTool> {
    DynamicTool::builder(name)
        .description("Create a marker file at the given path (test tool)")
        .parameters(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))
        .permissions(perms)
        .handler(|args, _| async move {
            let path = args["path"].as_str().unwrap_or_default().to_string();
            std::fs::write(&path, b"ran").map_err(ToolError::from)?;
            Ok(ToolOutput::text("done"))
        })
        .build_dyn()
}

/// A hook with a fixed verdict that counts its calls.
struct Fixed {
    name: &'static str,
    verdict: HookVerdict,
    seen: AtomicUsize,
}

impl Fixed {
    fn new(name: &'static str, verdict: HookVerdict) -> Arc<Fixed> {
        Arc::new(Fixed {
            name,
            verdict,
            seen: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl PermissionHook for Fixed {
    fn name(&self) -> &str {
        self.name
    }
    async fn check(&self, _call: &HookCall<'_>) -> HookVerdict {
        self.seen.fetch_add(1, Ordering::SeqCst);
        self.verdict.clone()
    }
}

struct Panics;

#[async_trait]
impl PermissionHook for Panics {
    fn name(&self) -> &str {
        "panics"
    }
    async fn check(&self, call: &HookCall<'_>) -> HookVerdict {
        if call.arguments["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("boom"))
        {
            panic!("hostile hook input");
        }
        HookVerdict::Abstain
    }
}

fn drain(events: &mut tokio::sync::broadcast::Receiver<ToolEvent>) -> Vec<Value> {
    let mut out = Vec::new();
    while let Ok(ev) = events.try_recv() {
        out.push(serde_json::to_value(&ev).unwrap());
    }
    out
}

#[tokio::test]
async fn the_first_deny_of_the_chain_wins_and_later_hooks_are_not_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (first, veto, last) = (
        Fixed::new("first", HookVerdict::Allow),
        Fixed::new("veto", HookVerdict::Deny("quarantine mode is on".into())),
        Fixed::new("last", HookVerdict::Allow),
    );
    let reg = ToolRegistry::new()
        .with_permission_checker(PermissionChecker::new(PermissionConfig::permissive()))
        .with_permission_hook(first.clone())
        .with_permission_hook(veto.clone())
        .with_permission_hook(last.clone());
    assert_eq!(reg.permission_hooks(), ["first", "veto", "last"]);
    reg.register(marker_tool("touch", vec![Permission::Write]))
        .unwrap();
    let mut events = reg.subscribe();
    let mark = dir.path().join("a");
    let inv = reg
        .invoke_recorded("touch", json!({"path": mark.to_str().unwrap()}))
        .await;
    let err = inv.output.unwrap_err();
    assert!(matches!(err, ToolError::PermissionDenied(..)), "{err:?}");
    // The reason reaches the model.
    assert!(err.to_string().contains("quarantine mode is on"), "{err}");
    assert!(!mark.exists(), "a vetoed tool ran");
    assert_eq!(
        (
            first.seen.load(Ordering::SeqCst),
            veto.seen.load(Ordering::SeqCst),
            last.seen.load(Ordering::SeqCst)
        ),
        (1, 1, 0)
    );
    // Every party's decision, in order, with who made it.
    let who: Vec<(String, String)> = drain(&mut events)
        .iter()
        .filter(|e| e["event"] == "allowed" || e["event"] == "permission_denied")
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_string(),
                e["by"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        who,
        [
            ("allowed".into(), "policy".into()),
            ("allowed".into(), "hook:first".into()),
            ("permission_denied".into(), "hook:veto".into()),
        ]
    );
}

#[tokio::test]
async fn a_panicking_hook_denies_and_disturbs_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let reg = ToolRegistry::new().with_permission_hook(Arc::new(Panics));
    reg.register(marker_tool("touch", vec![Permission::Write]))
        .unwrap();
    let boom = dir.path().join("boom");
    let inv = reg
        .invoke_recorded("touch", json!({"path": boom.to_str().unwrap()}))
        .await;
    let err = inv.output.unwrap_err();
    assert!(
        err.to_string().contains("permission hook panics failed"),
        "{err}"
    );
    assert!(!boom.exists());
    // Good call afterwards.
    let ok = dir.path().join("ok");
    let inv = reg
        .invoke_recorded("touch", json!({"path": ok.to_str().unwrap()}))
        .await;
    assert!(inv.is_ok(), "{:?}", inv.output);
    assert!(ok.exists());
}

#[tokio::test]
async fn deny_paths_stops_a_hostile_path_and_lets_a_good_one_through() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    let hook = DenyPaths::new(&[format!("{}/secret", dir.path().display())]).unwrap();
    let reg = ToolRegistry::new().with_permission_hook(Arc::new(hook));
    reg.register(marker_tool("touch", vec![Permission::Write]))
        .unwrap();
    // The model tries to sneak in with `..` and `.` segments.
    let sneaky = format!("{}/public/../secret/./planted", dir.path().display());
    let inv = reg.invoke_recorded("touch", json!({"path": sneaky})).await;
    let err = inv.output.unwrap_err().to_string();
    assert!(err.contains("deny_paths"), "{err}");
    assert!(!secret.join("planted").exists());
    let good = dir.path().join("fine");
    let inv = reg
        .invoke_recorded("touch", json!({"path": good.to_str().unwrap()}))
        .await;
    assert!(inv.is_ok(), "{:?}", inv.output);
    assert!(good.exists());
}

/// Answers from a script and records what it was asked.
struct Scripted {
    answers: Mutex<Vec<ApprovalAnswer>>,
    asked: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(answers: Vec<ApprovalAnswer>) -> Arc<Scripted> {
        Arc::new(Scripted {
            answers: Mutex::new(answers),
            asked: Mutex::new(Vec::new()),
        })
    }
    fn asked(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

#[async_trait]
impl Approver for Scripted {
    async fn approve(&self, _req: &ApprovalRequest) -> ApprovalDecision {
        unreachable!("the registry asks for the full answer")
    }
    async fn answer(&self, req: &ApprovalRequest) -> ApprovalAnswer {
        self.asked.lock().unwrap().push(req.tool.clone());
        let mut a = self.answers.lock().unwrap();
        if a.is_empty() {
            ApprovalDecision::Deny.into()
        } else {
            a.remove(0)
        }
    }
}

#[tokio::test]
async fn allow_for_this_session_covers_that_session_only() {
    let dir = tempfile::tempdir().unwrap();
    let approver = Scripted::new(vec![ApprovalDecision::AllowSession.into()]);
    let reg = ToolRegistry::new().with_approver(approver.clone());
    reg.register(marker_tool("wipe", vec![Permission::Delete]))
        .unwrap();
    let call = |session: &str, file: &str| {
        let reg = reg.clone();
        let path = dir.path().join(file).to_str().unwrap().to_string();
        let ctx = ToolContext::new(session, "t");
        async move {
            reg.invoke_call(ToolCall::new("wipe", json!({"path": path})), &ctx)
                .await
        }
    };
    assert!(call("s1", "a").await.is_ok());
    assert!(call("s1", "b").await.is_ok());
    assert_eq!(approver.asked(), 1, "the session's approval was not kept");
    // Another session is asked again (the script now denies).
    let other = call("s2", "c").await;
    assert!(matches!(other.output, Err(ToolError::PermissionDenied(..))));
    assert_eq!(approver.asked(), 2);
    assert!(!dir.path().join("c").exists());
}

#[tokio::test]
async fn allow_always_covers_matching_arguments_and_deny_gives_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().display().to_string();
    let always = ApprovalAnswer {
        decision: ApprovalDecision::AllowAlways,
        reason: None,
        pattern: ArgPattern([("path".to_string(), format!("{tmp}/scratch/*"))].into()),
    };
    let deny = ApprovalAnswer {
        decision: ApprovalDecision::Deny,
        reason: Some("not outside the scratch folder".into()),
        pattern: ArgPattern::default(),
    };
    let approver = Scripted::new(vec![always, deny]);
    let reg = ToolRegistry::new().with_approver(approver.clone());
    reg.register(marker_tool("wipe", vec![Permission::Delete]))
        .unwrap();
    std::fs::create_dir(dir.path().join("scratch")).unwrap();
    let mut events = reg.subscribe();
    let at = |p: &str| json!({"path": format!("{tmp}/{p}")});

    assert!(reg.invoke_recorded("wipe", at("scratch/1")).await.is_ok());
    assert!(reg.invoke_recorded("wipe", at("scratch/2")).await.is_ok());
    assert_eq!(approver.asked(), 1, "the matching call was asked again");
    // Outside the pattern: asked, and denied with the approver's reason.
    let inv = reg.invoke_recorded("wipe", at("elsewhere")).await;
    let err = inv.output.unwrap_err().to_string();
    assert!(err.contains("not outside the scratch folder"), "{err}");
    assert_eq!(approver.asked(), 2);
    assert!(!dir.path().join("elsewhere").exists());

    let decided: Vec<(String, String)> = drain(&mut events)
        .iter()
        .filter(|e| e["event"] == "approval_decided")
        .map(|e| {
            (
                e["decision"].as_str().unwrap().to_string(),
                e["by"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        decided,
        [
            ("allow_always".into(), "approver".into()),
            ("allow_always".into(), "remembered".into()),
            ("deny".into(), "approver".into()),
        ]
    );
    // A reset forgets the rule.
    reg.reset_approvals();
    assert!(
        reg.invoke_recorded("wipe", at("scratch/3"))
            .await
            .output
            .is_err()
    );
}
