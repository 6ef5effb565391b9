//! The share rule and the fair slot scheduler: a lone client uses every slot, another
//! client's call is never queued behind it, freed slots go to the client holding the
//! fewest, a client's own cap holds, and a cancelled wait leaves nothing behind.

use std::time::Duration;

use super::*;

fn caller(id: &str) -> Caller {
    Caller::new(id)
}

#[test]
fn the_rule_admits_a_lone_client_to_the_pool_and_others_to_their_reserve() {
    let s = Share::elastic(4, 1);
    assert_eq!(s.admit(3, 3, None), Ok(()));
    assert_eq!(s.admit(4, 4, None), Err(Refusal::Own { cap: 4 }));
    // Pool full: a client holding nothing still gets its reserve, up to the ceiling.
    assert_eq!(s.admit(4, 0, None), Ok(()));
    assert_eq!(s.admit(7, 0, None), Ok(()));
    assert_eq!(s.admit(8, 0, None), Err(Refusal::Full { pool: 4, held: 0 }));
    assert_eq!(s.admit(5, 1, None), Err(Refusal::Full { pool: 4, held: 1 }));
    // A configured client's own cap, lower than the share's.
    assert_eq!(s.admit(1, 1, Some(1)), Err(Refusal::Own { cap: 1 }));
    // A cap above the share's is the share's.
    assert_eq!(s.admit(0, 4, Some(100)), Err(Refusal::Own { cap: 4 }));
}

#[test]
fn holdings_count_per_client_and_give_back_only_what_is_held() {
    let s = Share {
        pool: 2,
        per_client: 2,
        reserve: 0,
        ceiling: 2,
    };
    let mut h = Holdings::default();
    let a: Arc<str> = Arc::from("a");
    let b: Arc<str> = Arc::from("b");
    assert!(h.take(&s, &a, None).is_ok());
    assert!(h.take(&s, &b, None).is_ok());
    assert!(h.take(&s, &a, None).is_err());
    h.give_back("nobody");
    assert_eq!((h.of("a"), h.of("b"), h.total()), (1, 1, 2));
    h.give_back("a");
    h.give_back("a");
    assert_eq!((h.of("a"), h.total()), (0, 1));
}

#[tokio::test]
async fn a_lone_client_uses_every_slot_and_another_is_not_queued_behind_it() {
    let slots = Slots::new(4);
    let hog = caller("hog");
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(slots.acquire(Some(&hog)).await);
    }
    assert_eq!(slots.held("hog"), (4, 4));
    // The hog's fifth waits…
    let fifth = tokio::spawn({
        let slots = slots.clone();
        let hog = hog.clone();
        async move { slots.acquire(Some(&hog)).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!fifth.is_finished());
    // …but another client's first call runs at once, beyond the pool.
    let victim = caller("victim");
    let first = tokio::time::timeout(Duration::from_secs(1), slots.acquire(Some(&victim)))
        .await
        .expect("the other client's first call is admitted at once");
    assert_eq!(slots.held("victim"), (1, 5));
    // Its second waits for a slot, and is served before the hog's fifth (it holds fewer)
    // once its own first call ends.
    let second = tokio::spawn({
        let slots = slots.clone();
        let victim = victim.clone();
        async move { slots.acquire(Some(&victim)).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!second.is_finished());
    drop(first);
    let second = tokio::time::timeout(Duration::from_secs(1), second)
        .await
        .expect("served when its own call ended")
        .expect("no panic");
    assert!(!fifth.is_finished());
    assert_eq!(slots.held("victim"), (1, 5));
    // One of the hog's calls ends: the victim's call now counts in the full pool, so
    // the hog's fifth still waits (the overflow is given back to the pool first)…
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!fifth.is_finished());
    assert_eq!(slots.held("hog"), (3, 4));
    // …until the pool has room again.
    drop(second);
    let fifth = tokio::time::timeout(Duration::from_secs(1), fifth)
        .await
        .expect("served")
        .expect("no panic");
    drop((fifth, held));
    assert_eq!(slots.held("hog").1, 0);
}

#[tokio::test]
async fn a_freed_slot_goes_to_the_client_holding_the_fewest() {
    let slots = Slots::new(3);
    let (a, b, c) = (caller("a"), caller("b"), caller("c"));
    let a1 = slots.acquire(Some(&a)).await;
    let a2 = slots.acquire(Some(&a)).await;
    let b1 = slots.acquire(Some(&b)).await;
    assert_eq!(slots.held("a").1, 3);
    let wait = |who: Caller| {
        let slots = slots.clone();
        tokio::spawn(async move { slots.acquire(Some(&who)).await })
    };
    // a waits first, then b; c, holding none, runs beyond the full pool at once.
    let a3 = wait(a.clone());
    tokio::time::sleep(Duration::from_millis(10)).await;
    let b2 = wait(b.clone());
    tokio::time::sleep(Duration::from_millis(10)).await;
    let c1 = tokio::time::timeout(Duration::from_secs(1), slots.acquire(Some(&c)))
        .await
        .expect("c's first call is not queued");
    assert_eq!(slots.held("c"), (1, 4));
    // A call beyond the pool ending frees no pool slot: nobody is served.
    drop(c1);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(!a3.is_finished() && !b2.is_finished());
    // b's call ends: b (holding none) is served before a (holding two), though a
    // waited longer.
    drop(b1);
    let b2 = tokio::time::timeout(Duration::from_secs(1), b2)
        .await
        .expect("b first")
        .expect("no panic");
    assert!(!a3.is_finished());
    drop(a1);
    let a3 = tokio::time::timeout(Duration::from_secs(1), a3)
        .await
        .expect("then a")
        .expect("no panic");
    drop((a2, a3, b2));
    assert_eq!(slots.held("a"), (0, 0));
}

#[tokio::test]
async fn a_client_cap_holds_and_a_cancelled_wait_leaves_nothing() {
    let slots = Slots::new(8);
    let mut capped = caller("capped");
    capped.max_concurrent = Some(1);
    let one = slots.acquire(Some(&capped)).await;
    // Its second waits though seven slots are free; given up, it leaves the queue.
    let waited =
        tokio::time::timeout(Duration::from_millis(30), slots.acquire(Some(&capped))).await;
    assert!(waited.is_err());
    assert_eq!(slots.held("capped"), (1, 1));
    assert!(slots.lock().waiting.is_empty());
    drop(one);
    assert_eq!(slots.held("capped"), (0, 0));
    // Calls without a caller share the identity `local`.
    let l = slots.acquire(None).await;
    assert_eq!(slots.held(Caller::LOCAL), (1, 1));
    drop(l);
}

#[tokio::test]
async fn many_clients_racing_never_exceed_the_ceiling_and_all_finish() {
    let slots = Slots::new(3);
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..40 {
        let slots = slots.clone();
        let peak = peak.clone();
        tasks.push(tokio::spawn(async move {
            let who = caller(&format!("c{}", i % 5));
            for _ in 0..5 {
                let slot = slots.acquire(Some(&who)).await;
                let total = slots.held("").1;
                peak.fetch_max(total, std::sync::atomic::Ordering::Relaxed);
                tokio::task::yield_now().await;
                drop(slot);
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(10), t)
            .await
            .expect("no call waits forever")
            .expect("no panic");
    }
    assert!(peak.load(std::sync::atomic::Ordering::Relaxed) <= 6);
    assert_eq!(slots.held("").1, 0);
}
