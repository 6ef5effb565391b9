//! Tests of the round driver (`server/rounds.rs`): the binding, a restartable round that
//! keeps nothing and is spent once, a parked round resumed by its answer.

use super::*;
use rmcp::model::{CallToolResult, ContentBlock, ElicitRequestParams, ElicitationCapability};
use serde_json::json;

fn owner() -> std::sync::Arc<str> {
    std::sync::Arc::from("p")
}

fn caps() -> ClientCapabilities {
    let mut c = ClientCapabilities::default();
    c.elicitation = Some(ElicitationCapability::default());
    c
}

fn form() -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form", "message": "ok?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    }))
    .unwrap()
}

fn done(text: String) -> Result<ServerResult, ErrorData> {
    Ok(ServerResult::CallToolResult(CallToolResult::success(vec![
        ContentBlock::text(text),
    ])))
}

fn input(step: Step) -> InputRequiredResult {
    match step {
        Step::Input(i) => i,
        Step::Done(d) => panic!("complete: {d:?}"),
        Step::Running(_) => panic!("handed on as a task"),
    }
}

fn text(step: Step) -> String {
    match step {
        Step::Done(d) => serde_json::to_string(&*d).unwrap(),
        Step::Input(i) => panic!("input required: {i:?}"),
        Step::Running(_) => panic!("handed on as a task"),
    }
}

#[test]
fn the_binding_ignores_key_order_only() {
    let a = binding(
        "p",
        "tools/call",
        "t",
        &json!({"x": 1, "y": {"b": 2, "a": 1}}),
    );
    let b = binding(
        "p",
        "tools/call",
        "t",
        &json!({"y": {"a": 1, "b": 2}, "x": 1}),
    );
    assert_eq!(a, b);
    assert_ne!(
        a,
        binding(
            "p",
            "tools/call",
            "t",
            &json!({"x": 2, "y": {"a": 1, "b": 2}})
        )
    );
    assert_ne!(
        a,
        binding(
            "q",
            "tools/call",
            "t",
            &json!({"x": 1, "y": {"a": 1, "b": 2}})
        )
    );
    assert_ne!(
        a,
        binding(
            "p",
            "tools/call",
            "u",
            &json!({"x": 1, "y": {"a": 1, "b": 2}})
        )
    );
}

/// An approval-like question: restartable, nothing parked; the answer reaches the
/// second run; the state is spent once and bound to its request.
#[tokio::test]
async fn a_restartable_round_keeps_nothing_and_its_state_is_spent_once() {
    let rounds = Rounds::new(None).unwrap();
    let stop = CancellationToken::new();
    let bind = binding("p", "tools/call", "t", &json!({}));
    let work = |client: DownstreamClient, _c: CancellationToken| async move {
        let r = client
            .elicit_before_running("k", form(), Duration::from_secs(5))
            .await?;
        done(format!("answered {:?}", r.action))
    };
    let first = input(
        rounds
            .run(bind, None, None, caps(), "s", &owner(), &stop, None, work)
            .await
            .unwrap(),
    );
    assert_eq!(rounds.parked(), 0);
    let keys: Vec<_> = first.input_requests.unwrap().into_keys().collect();
    assert_eq!(keys, ["k"]);
    let state = first.request_state.unwrap();
    let answers: InputResponses = [("k".to_string(), json!({"action": "accept"}))].into();
    // Bound to its request: other arguments are refused.
    let other = binding("p", "tools/call", "t", &json!({"x": 1}));
    let e = rounds
        .run(
            other,
            Some(&state),
            Some(&answers),
            caps(),
            "s",
            &owner(),
            &stop,
            None,
            work,
        )
        .await
        .err()
        .unwrap();
    assert!(e.message.contains("failed verification"), "{e:?}");
    let out = text(
        rounds
            .run(
                bind,
                Some(&state),
                Some(&answers),
                caps(),
                "s",
                &owner(),
                &stop,
                None,
                work,
            )
            .await
            .unwrap(),
    );
    assert!(out.contains("answered Accept"), "{out}");
    let e = rounds
        .run(
            bind,
            Some(&state),
            Some(&answers),
            caps(),
            "s",
            &owner(),
            &stop,
            None,
            work,
        )
        .await
        .err()
        .unwrap();
    assert!(e.message.contains("used already"), "{e:?}");
}

/// A wrapped server's question: the call is parked until the retry answers it.
#[tokio::test]
async fn a_suspended_round_parks_the_call_until_answered() {
    let rounds = Rounds::new(Some(&[7u8; 32])).unwrap();
    let stop = CancellationToken::new();
    let bind = binding("p", "tools/call", "t", &json!({}));
    let work = |client: DownstreamClient, _c: CancellationToken| async move {
        let r = client.elicit(form(), Duration::from_secs(30)).await?;
        done(format!(
            "got {}",
            serde_json::to_string(&r.content).unwrap()
        ))
    };
    let first = input(
        rounds
            .run(bind, None, None, caps(), "s", &owner(), &stop, None, work)
            .await
            .unwrap(),
    );
    assert_eq!(rounds.parked(), 1);
    let key = first.input_requests.unwrap().into_keys().next().unwrap();
    let state = first.request_state.unwrap();
    // An answer that is not an object is refused (and spends the state).
    let bad: InputResponses = [(key.clone(), json!(12345))].into();
    let e = rounds
        .run(
            bind,
            Some(&state),
            Some(&bad),
            caps(),
            "s",
            &owner(),
            &stop,
            None,
            work,
        )
        .await
        .err()
        .unwrap();
    assert!(e.message.contains("must be an object"), "{e:?}");
    let again = input(
        rounds
            .run(bind, None, None, caps(), "s", &owner(), &stop, None, work)
            .await
            .unwrap(),
    );
    let state = again.request_state.unwrap();
    let key = again.input_requests.unwrap().into_keys().next().unwrap();
    let good: InputResponses = [(key, json!({"action": "accept", "content": {"ok": true}}))].into();
    let out = text(
        rounds
            .run(
                bind,
                Some(&state),
                Some(&good),
                caps(),
                "s",
                &owner(),
                &stop,
                None,
                work,
            )
            .await
            .unwrap(),
    );
    assert!(out.contains(r#"\"ok\":true"#), "{out}");
}

/// A wrapped server's question under its own key, answered up front by a first request
/// (no state): the call completes without a round; the answer is used once (a second
/// question under the key is asked); toolhost's own key is never taken up front; an
/// up-front answer that is not an object is refused before anything runs.
#[tokio::test]
async fn an_answer_given_up_front_is_used_once_for_its_key() {
    let rounds = Rounds::new(None).unwrap();
    let stop = CancellationToken::new();
    let bind = binding("p", "tools/call", "t", &json!({}));
    let asks = |times: usize| {
        move |client: DownstreamClient, _c: CancellationToken| async move {
            let mut got = Vec::new();
            for _ in 0..times {
                let ask = client.elicit(form(), Duration::from_secs(30));
                let r = crate::rounds::INPUT_KEY
                    .scope("user_name".into(), ask)
                    .await?;
                got.push(serde_json::to_string(&r.content).unwrap());
            }
            done(format!("got {}", got.join(" ")))
        }
    };
    let answers: InputResponses = [
        (
            "user_name".to_string(),
            json!({"action": "accept", "content": {"ok": true}}),
        ),
        (
            "unknown_extra_key".to_string(),
            json!({"action": "accept", "content": {"foo": 1}}),
        ),
    ]
    .into();
    let out = text(
        rounds
            .run(
                bind,
                None,
                Some(&answers),
                caps(),
                "s",
                &owner(),
                &stop,
                None,
                asks(1),
            )
            .await
            .unwrap(),
    );
    assert!(out.contains(r#"\"ok\":true"#), "{out}");
    assert_eq!(rounds.parked(), 0);

    // Used once: the second question under the key is asked.
    let second = input(
        rounds
            .run(
                bind,
                None,
                Some(&answers),
                caps(),
                "s",
                &owner(),
                &stop,
                None,
                asks(2),
            )
            .await
            .unwrap(),
    );
    let keys: Vec<_> = second.input_requests.unwrap().into_keys().collect();
    assert_eq!(keys, ["user_name"]);
    assert_eq!(rounds.parked(), 1);

    // toolhost's approval is not answered up front: it is asked.
    let approval = |client: DownstreamClient, _c: CancellationToken| async move {
        let r = client
            .elicit_before_running(
                crate::rounds::APPROVAL_INPUT_KEY,
                form(),
                Duration::from_secs(5),
            )
            .await?;
        done(format!("answered {:?}", r.action))
    };
    let pre: InputResponses = [(
        crate::rounds::APPROVAL_INPUT_KEY.to_string(),
        json!({"action": "accept"}),
    )]
    .into();
    let asked = input(
        rounds
            .run(
                bind,
                None,
                Some(&pre),
                caps(),
                "s",
                &owner(),
                &stop,
                None,
                approval,
            )
            .await
            .unwrap(),
    );
    assert!(
        asked
            .input_requests
            .unwrap()
            .contains_key(crate::rounds::APPROVAL_INPUT_KEY)
    );

    // Not an object: refused, nothing run.
    let bad: InputResponses = [("user_name".to_string(), json!(12345))].into();
    let e = rounds
        .run(
            bind,
            None,
            Some(&bad),
            caps(),
            "s",
            &owner(),
            &stop,
            None,
            asks(1),
        )
        .await
        .err()
        .unwrap();
    assert!(e.message.contains("must be an object"), "{e:?}");

    // A good call after all of it.
    let out = text(
        rounds
            .run(
                bind,
                None,
                Some(&answers),
                caps(),
                "s",
                &owner(),
                &stop,
                None,
                asks(1),
            )
            .await
            .unwrap(),
    );
    assert!(out.contains(r#"\"ok\":true"#), "{out}");
}

/// A client chaining rounds fills only its own share of the spent states: its next
/// round is refused, naming its share, while another client's rounds go on; with the
/// pool full (four such clients), every other client still has its reserve.
#[test]
fn one_client_spending_states_leaves_the_others_their_share() {
    let rounds = Rounds::new(None).unwrap();
    let who = |n: &str| -> std::sync::Arc<str> { std::sync::Arc::from(n) };
    let mut nonce = 0u64;
    let mut spend = |owner: &std::sync::Arc<str>| {
        nonce += 1;
        rounds.spend(nonce, owner)
    };
    let hog = who("hog");
    for _ in 0..SPENT_SHARE.per_client {
        spend(&hog).unwrap();
    }
    let e = spend(&hog).unwrap_err();
    assert!(e.message.contains("its share"), "{e:?}");
    spend(&who("victim")).unwrap();
    for h in ["hog2", "hog3", "hog4"] {
        let h = who(h);
        for _ in 0..SPENT_SHARE.per_client {
            let _ = spend(&h);
        }
    }
    // The pool is full: a client holding one still has its reserve.
    for _ in 1..SPENT_SHARE.reserve {
        spend(&who("victim")).unwrap();
    }
    let e = spend(&who("victim")).unwrap_err();
    assert!(e.message.contains("too many requests"), "{e:?}");
    spend(&who("newcomer")).unwrap();
}

/// The running work of a step handed on as a task.
fn running(step: Step) -> Running {
    match step {
        Step::Running(r) => r,
        Step::Done(d) => panic!("complete: {d:?}"),
        Step::Input(i) => panic!("input required: {i:?}"),
    }
}

/// With a time before the task: a question asked first is a round; the retry whose call
/// then runs on past that time is handed on running (its later question comes through
/// the handed-on asks, not as a round); a call that ends within it is handed on ended,
/// with its result.
#[tokio::test(start_paused = true)]
async fn a_call_that_runs_on_after_its_rounds_is_handed_on_as_a_task() {
    let rounds = Rounds::new(None).unwrap();
    let stop = CancellationToken::new();
    let after = Some(Duration::from_millis(500));
    let bind = binding("p", "tools/call", "t", &json!({}));
    let work = |client: DownstreamClient, _c: CancellationToken| async move {
        let first = client.elicit(form(), Duration::from_secs(30)).await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let second = client.elicit(form(), Duration::from_secs(30)).await?;
        done(format!("{:?} then {:?}", first.action, second.action))
    };
    let r1 = input(
        rounds
            .run(bind, None, None, caps(), "s", &owner(), &stop, after, work)
            .await
            .unwrap(),
    );
    let (key, _) = r1.input_requests.unwrap().into_iter().next().unwrap();
    let answers: InputResponses = [(key, json!({"action": "accept"}))].into();
    let never = |_: DownstreamClient, _: CancellationToken| async { done("not run".into()) };
    let mut task = running(
        rounds
            .run(
                bind,
                r1.request_state.as_deref(),
                Some(&answers),
                caps(),
                "s",
                &owner(),
                &stop,
                after,
                never,
            )
            .await
            .unwrap(),
    );
    assert!(!task.work.is_finished());
    assert_eq!(rounds.parked(), 0, "a call handed on is not parked");
    // Its next question reaches whoever carries it on.
    let ask = task.asks.recv().await.unwrap();
    assert!(ask.restartable.is_none());
    let _ = ask.reply.send(Ok(json!({"action": "decline"})));
    let out = serde_json::to_string(&task.work.await.unwrap().unwrap()).unwrap();
    assert!(out.contains("Accept then Decline"), "{out}");

    // A call that ends at once is handed on ended, its result kept.
    let quick = |_: DownstreamClient, _: CancellationToken| async { done("quick".into()) };
    let task = running(
        rounds
            .run(bind, None, None, caps(), "s", &owner(), &stop, after, quick)
            .await
            .unwrap(),
    );
    let out = serde_json::to_string(&task.work.await.unwrap().unwrap()).unwrap();
    assert!(out.contains("quick"), "{out}");
}
