//! The driving half of multi-round-trip requests (MCP 2026-07-28): a request of a
//! 2026-07-28 client runs as a task; when it asks the client something
//! ([`crate::rounds::Asker`]), the request is answered with an `input_required` result
//! whose `requestState` says how to continue, and the client's retry continues it.
//!
//! - **The state is sealed** (HMAC-SHA256, rmcp's `RequestStateCodec`) over the round,
//!   the questions' keys and, where a call is parked, its id, with the request itself as
//!   associated data ([`binding`]: the method, the name and the arguments, canonically).
//!   A forged or tampered state, one replayed against other arguments, or one older
//!   than [`STATE_TTL`] is refused with JSON-RPC error -32602 and runs nothing.
//! - **Each state is spent once**: its nonce is remembered until it expires, so an
//!   approval's answer cannot be replayed to run a call twice. What is remembered is
//!   bounded per client ([`SPENT_SHARE`]: [`MAX_SPENT`] in the shared pool, a quarter of
//!   it per client, a reserve of its own for each beyond a full pool); beyond it that
//!   client's new rounds are refused rather than anything forgotten, and no other
//!   client's.
//! - **Restartable rounds keep nothing** (toolhost's own approvals, asked before a call
//!   runs): the task is dropped and the retry runs the request again from the start
//!   with the answer given up front. Any replica holding the same key continues it.
//! - **Suspended rounds** (a wrapped server's elicitation, sampling or roots request)
//!   park the task here until the retry answers: at most [`MAX_PARKED`] at once in the
//!   shared pool, half of it per client, with a reserve for each ([`PARKED_SHARE`]), each
//!   for at most [`STATE_TTL`], and a request gets at most [`MAX_ROUNDS`] rounds. A retry
//!   that reaches a replica without the parked call is told so, and to start over.
//! - Questions sent together (within [`GATHER`] of the first) are asked in one round,
//!   at most [`MAX_ASKS_PER_ROUND`]; further ones are refused to whoever asked.
//! - Answers (`inputResponses`) are untrusted: only those to the questions of the round
//!   the state names are used, each must be an object, and keys the round did not ask
//!   for are ignored. A round whose answers are missing is asked again. A first request
//!   (no state) may answer a wrapped server's questions up front ([`upfront`]): each is
//!   used once, for the question that server asks under that key.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    RequestStateCodec, RequestStateError, SealOptions, ServerResult,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::DownstreamClient;
use crate::rounds::{Ask, Asker, Missing, Parked as ParkedFlag};
use tokio_util::sync::CancellationToken;

pub(crate) use request::binding;
use request::{bad_state, not_an_object, upfront};
use toolhost_core::tools::{Holdings, Refusal, Share};

/// The most rounds one request may take before it is refused.
pub const MAX_ROUNDS: u32 = 10;
/// The most calls parked at once, waiting for their clients' answers.
pub const MAX_PARKED: usize = 64;
/// How parked calls are shared by clients (`toolhost_core::tools::share`): one client
/// parks at most half the pool; beyond a full pool each client still parks 4, up to
/// twice the pool in all.
pub const PARKED_SHARE: Share = Share {
    pool: MAX_PARKED,
    per_client: MAX_PARKED / 2,
    reserve: 4,
    ceiling: MAX_PARKED * 2,
};
/// How long a `requestState` is valid, and a parked call waits for its retry.
pub const STATE_TTL: Duration = Duration::from_secs(300);
/// The most spent states remembered at once (each until it expires).
pub const MAX_SPENT: usize = 4096;
/// How remembered (spent) states are shared by clients: one client holds at most a
/// quarter of the pool (1024 rounds continued in [`STATE_TTL`]); beyond a full pool each
/// client still continues 256, up to twice the pool in all (16 clients at their reserve).
pub const SPENT_SHARE: Share = Share {
    pool: MAX_SPENT,
    per_client: MAX_SPENT / 4,
    reserve: 256,
    ceiling: MAX_SPENT * 2,
};
/// The most questions asked in one round.
pub const MAX_ASKS_PER_ROUND: usize = 16;
/// How long after a first question others are gathered into the same round.
pub const GATHER: Duration = Duration::from_millis(25);

/// A request's work: what the client gets when it completes.
type Work = JoinHandle<Result<ServerResult, ErrorData>>;

/// What a round ended with.
pub(crate) enum Step {
    /// The request completed.
    Done(Box<ServerResult>),
    /// The client must answer these first.
    Input(InputRequiredResult),
    /// The request neither asked nor ended within the time it was given before it
    /// becomes a task ([`Rounds::run`]'s `task_after`): its work, running on, for the
    /// caller to carry on as a task.
    Running(Running),
}

/// A request's work that outlived the rounds: it runs on, and asks through `asks`.
pub(crate) struct Running {
    /// The work; its result is the request's.
    pub(crate) work: JoinHandle<Result<ServerResult, ErrorData>>,
    /// Cancels the work (the tool's own cancellation).
    pub(crate) cancel: CancellationToken,
    /// Its later questions.
    pub(crate) asks: mpsc::Receiver<Ask>,
}

/// The sealed content of a `requestState`.
#[derive(Serialize, Deserialize)]
struct State {
    /// Spent once ([`Rounds::spend`]).
    nonce: u64,
    /// Rounds taken so far.
    round: u32,
    /// The parked call it continues (suspended rounds).
    park: Option<u64>,
    /// The keys of the questions of this round.
    keys: Vec<String>,
}

/// A call waiting for its client's answers.
struct Parked {
    work: Work,
    /// Cancels the work (the tool's own cancellation) before it is aborted.
    cancel: CancellationToken,
    missing: Missing,
    flag: ParkedFlag,
    asks: mpsc::Receiver<Ask>,
    waiting: BTreeMap<String, Waiting>,
    binding: [u8; 32],
    round: u32,
    expires: Instant,
    /// The client it belongs to (its identity).
    owner: Arc<str>,
}

impl Parked {
    /// Ends the parked call: its tool is cancelled, its wrapped server's requests fail.
    fn stop(&self) {
        self.cancel.cancel();
        self.work.abort();
    }
}

/// A request's work being driven through its rounds.
struct Driving {
    work: Work,
    cancel: CancellationToken,
    missing: Missing,
    flag: ParkedFlag,
    asks: mpsc::Receiver<Ask>,
    binding: [u8; 32],
    round: u32,
    owner: Arc<str>,
    /// How long the work may run without asking before it is handed on as a task.
    task_after: Option<Duration>,
}

/// What a fresh run of a request is.
struct Fresh<'a> {
    binding: [u8; 32],
    round: u32,
    capabilities: ClientCapabilities,
    session: &'a str,
    owner: &'a Arc<str>,
    /// Answers given up front to a wrapped server's questions ([`upfront`]).
    upfront: BTreeMap<String, Value>,
    task_after: Option<Duration>,
}

/// The client's answer when the work ended: its result, or -32021 when it failed after
/// needing a capability the client had not declared.
fn finished(
    done: Result<Result<ServerResult, ErrorData>, tokio::task::JoinError>,
    missing: &Missing,
) -> Result<Step, ErrorData> {
    let result = match done {
        Ok(r) => r,
        Err(e) => {
            return Err(ErrorData::internal_error(
                format!("the request's task failed: {e}"),
                None,
            ));
        }
    };
    let needed = missing.as_object();
    let failed = match &result {
        Err(_) => true,
        Ok(ServerResult::CallToolResult(r)) => r.is_error == Some(true),
        Ok(_) => false,
    };
    if failed && !needed.is_empty() {
        let names = needed.keys().cloned().collect::<Vec<_>>().join(", ");
        return Err(ErrorData::new(
            rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "Missing required client capability: {names} (the request needs it; declare \
                 it in _meta io.modelcontextprotocol/clientCapabilities)"
            ),
            Some(serde_json::json!({ "requiredCapabilities": needed })),
        ));
    }
    result.map(|r| Step::Done(Box::new(r)))
}

/// One question of a parked call, and where its answer goes.
struct Waiting {
    request: InputRequest,
    reply: oneshot::Sender<Result<Value, ErrorData>>,
}

/// The multi-round-trip requests of one server (shared by its sessions).
pub(crate) struct Rounds {
    codec: RequestStateCodec,
    parked: Mutex<HashMap<u64, Parked>>,
    spent: Mutex<Spent>,
    next: AtomicU64,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds").finish_non_exhaustive()
    }
}

/// The spent states' nonces, until when each is remembered and for whom, and what each
/// client holds.
#[derive(Default)]
struct Spent {
    until: HashMap<u64, (Instant, Arc<str>)>,
    held: Holdings,
}

/// Sleeps `after`, or forever without one.
async fn sleep_or_never(after: Option<Duration>) {
    match after {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

fn refused(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_request(message.into(), None)
}

impl Rounds {
    /// Rounds sealed with `key` (at least 32 bytes), or a random key of this process.
    pub fn new(key: Option<&[u8]>) -> Result<Self, RequestStateError> {
        let key = match key {
            Some(k) => k.to_vec(),
            None => {
                let mut k = vec![0u8; 32];
                getrandom::fill(&mut k).map_err(|_| {
                    RequestStateError::InvalidKeyring("the system's random source is unavailable")
                })?;
                k
            }
        };
        Ok(Self {
            codec: RequestStateCodec::try_new(key)?,
            parked: Mutex::new(HashMap::new()),
            spent: Mutex::new(Spent::default()),
            next: AtomicU64::new(1),
        })
    }

    fn fresh_nonce(&self) -> u64 {
        let mut b = [0u8; 8];
        // A nonce only has to be unique among the states of this key's lifetime: the
        // random source, else a counter (unique in this process).
        if getrandom::fill(&mut b).is_ok() {
            u64::from_le_bytes(b)
        } else {
            self.next.fetch_add(1, Ordering::Relaxed) | (1 << 63)
        }
    }

    /// Starts a request (no `state`) or continues it; `start` runs it, asking through
    /// the [`DownstreamClient`] it is given. With `task_after`, a request (first or
    /// continued) whose work neither asks nor ends within it is [`Step::Running`].
    #[allow(clippy::too_many_arguments)] // each is one part of the request
    pub async fn run<F, Fut>(
        &self,
        binding: [u8; 32],
        state: Option<&str>,
        responses: Option<&InputResponses>,
        capabilities: ClientCapabilities,
        session: &str,
        owner: &Arc<str>,
        request: &CancellationToken,
        task_after: Option<Duration>,
        start: F,
    ) -> Result<Step, ErrorData>
    where
        F: FnOnce(DownstreamClient, CancellationToken) -> Fut,
        Fut: std::future::Future<Output = Result<ServerResult, ErrorData>> + Send + 'static,
    {
        self.sweep();
        let Some(sealed) = state else {
            let upfront = upfront(responses)?;
            let run = Fresh {
                binding,
                round: 0,
                capabilities,
                session,
                owner,
                upfront,
                task_after,
            };
            return self.fresh(run, BTreeMap::new(), request, start).await;
        };
        let state: State = self
            .codec
            .open_json_with(sealed, &binding)
            .map_err(bad_state)?;
        self.spend(state.nonce, owner)?;
        let empty = InputResponses::new();
        let responses = responses.unwrap_or(&empty);
        for key in &state.keys {
            if let Some(v) = responses.get(key).filter(|v| !v.is_object()) {
                return Err(not_an_object(key, v));
            }
        }
        let Some(id) = state.park else {
            let preset = state
                .keys
                .iter()
                .filter_map(|k| responses.get(k).map(|v| (k.clone(), v.clone())))
                .collect();
            let run = Fresh {
                binding,
                round: state.round,
                capabilities,
                session,
                owner,
                upfront: BTreeMap::new(),
                task_after,
            };
            return self.fresh(run, preset, request, start).await;
        };
        let parked = self
            .parked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        let Some(mut parked) = parked else {
            return Err(refused(
                "the call this requestState continues is no longer waiting on this server \
                 (answered already, expired, or started on another replica); call again \
                 without requestState",
            ));
        };
        if parked.binding != binding || parked.round != state.round {
            parked.stop();
            return Err(refused("requestState does not match the call it names"));
        }
        parked.flag.set(false);
        let mut missing = BTreeMap::new();
        for (key, w) in std::mem::take(&mut parked.waiting) {
            match responses.get(&key) {
                Some(v) => {
                    let _ = w.reply.send(Ok(v.clone()));
                }
                None => {
                    missing.insert(key, w);
                }
            }
        }
        if !missing.is_empty() {
            // Asked again, in a round of its own.
            parked.waiting = missing;
            return self.park(parked);
        }
        let driving = Driving {
            work: parked.work,
            cancel: parked.cancel,
            missing: parked.missing,
            flag: parked.flag,
            asks: parked.asks,
            binding,
            round: state.round,
            owner: parked.owner,
            task_after,
        };
        self.drive(driving, request).await
    }

    async fn fresh<F, Fut>(
        &self,
        run: Fresh<'_>,
        preset: BTreeMap<String, Value>,
        request: &CancellationToken,
        start: F,
    ) -> Result<Step, ErrorData>
    where
        F: FnOnce(DownstreamClient, CancellationToken) -> Fut,
        Fut: std::future::Future<Output = Result<ServerResult, ErrorData>> + Send + 'static,
    {
        let (tx, asks) = mpsc::channel(MAX_ASKS_PER_ROUND);
        let missing = Missing::default();
        let flag = ParkedFlag::default();
        let asker = Asker::new(
            tx,
            run.capabilities,
            preset,
            run.upfront,
            missing.clone(),
            flag.clone(),
        );
        let client = DownstreamClient::rounds(asker, run.session);
        // The work outlives the request that started it (it may be parked for the next
        // round), so it has a cancellation of its own.
        let cancel = CancellationToken::new();
        let work = tokio::spawn(start(client, cancel.clone()));
        let driving = Driving {
            work,
            cancel,
            missing,
            flag,
            asks,
            binding: run.binding,
            round: run.round,
            owner: run.owner.clone(),
            task_after: run.task_after,
        };
        self.drive(driving, request).await
    }

    /// Runs the work until it completes or asks, or the request driving it is cancelled
    /// (or, with a `task_after`, that passes first: [`Step::Running`]).
    async fn drive(&self, d: Driving, request: &CancellationToken) -> Result<Step, ErrorData> {
        let Driving {
            mut work,
            cancel,
            missing,
            flag,
            mut asks,
            binding,
            round,
            owner,
            task_after,
        } = d;
        let first = tokio::select! {
            done = &mut work => {
                let step = finished(done, &missing);
                if task_after.is_none() {
                    return step;
                }
                // To be carried on as a task, however it ended, unless the client lacked
                // a capability it needed (a protocol error, as without a task).
                let out = match step {
                    Ok(Step::Done(r)) => Ok(*r),
                    Err(e) if e.code != rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY => Err(e),
                    other => return other,
                };
                let work = tokio::spawn(async move { out });
                return Ok(Step::Running(Running { work, cancel, asks }));
            }
            Some(ask) = asks.recv() => ask,
            () = sleep_or_never(task_after) => {
                return Ok(Step::Running(Running { work, cancel, asks }));
            }
            _ = request.cancelled() => {
                cancel.cancel();
                work.abort();
                return Err(refused("the request was cancelled"));
            }
        };
        let mut gathered = vec![first];
        let until = tokio::time::Instant::now() + GATHER;
        loop {
            tokio::select! {
                a = asks.recv() => match a {
                    Some(a) if gathered.len() < MAX_ASKS_PER_ROUND => gathered.push(a),
                    Some(a) => {
                        let _ = a.reply.send(Err(refused(format!(
                            "more than {MAX_ASKS_PER_ROUND} questions at once; refused"
                        ))));
                    }
                    None => break,
                },
                _ = tokio::time::sleep_until(until) => break,
            }
        }
        if round >= MAX_ROUNDS {
            cancel.cancel();
            work.abort();
            return Err(refused(format!(
                "the request asked the client more than {MAX_ROUNDS} rounds of questions; refused"
            )));
        }
        if gathered.iter().any(|a| a.restartable.is_some()) {
            // Asked before anything ran: drop the task, keep nothing.
            cancel.cancel();
            work.abort();
            let mut requests = InputRequests::new();
            for a in gathered {
                if let Some(key) = a.restartable {
                    requests.insert(key, a.request);
                }
            }
            let keys = requests.keys().cloned().collect();
            let state = self.seal(binding, round + 1, None, keys)?;
            return Ok(Step::Input(InputRequiredResult::new(
                Some(requests),
                Some(state),
            )));
        }
        // A wrapped 2026-07-28 server's own key for its question is kept when it is
        // usable and unique in the round; otherwise (and for servers of the older
        // revisions, which name none) the key is `r{round}_{i}`.
        let mut waiting = BTreeMap::new();
        for (i, a) in gathered.into_iter().enumerate() {
            let key = match a.key {
                Some(k) if crate::rounds::usable_key(&k) && !waiting.contains_key(&k) => k,
                _ => format!("r{}_{i}", round + 1),
            };
            waiting.insert(
                key,
                Waiting {
                    request: a.request,
                    reply: a.reply,
                },
            );
        }
        self.park(Parked {
            work,
            cancel,
            missing,
            flag,
            asks,
            waiting,
            binding,
            round,
            expires: Instant::now() + STATE_TTL,
            owner,
        })
    }

    /// Parks `parked` for the next round and asks its questions.
    fn park(&self, mut parked: Parked) -> Result<Step, ErrorData> {
        parked.round += 1;
        let requests: InputRequests = parked
            .waiting
            .iter()
            .map(|(k, w)| (k.clone(), w.request.clone()))
            .collect();
        let keys = requests.keys().cloned().collect();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let state = match self.seal(parked.binding, parked.round, Some(id), keys) {
            Ok(s) => s,
            Err(e) => {
                parked.stop();
                return Err(e);
            }
        };
        let mut all = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        // At most 2 × MAX_PARKED entries: counting this client's is a short scan.
        let mine = all.values().filter(|p| p.owner == parked.owner).count();
        if let Err(why) = PARKED_SHARE.admit(all.len(), mine, None) {
            drop(all);
            parked.stop();
            return Err(refused(match why {
                Refusal::Own { cap } => format!(
                    "this client already has {cap} calls waiting for its answers, its share \
                     of this server's {MAX_PARKED}; answer or abandon one first"
                ),
                Refusal::Full { .. } => format!(
                    "{MAX_PARKED} calls already wait for their clients' answers on this \
                     server; try again later"
                ),
            }));
        }
        parked.flag.set(true);
        all.insert(id, parked);
        Ok(Step::Input(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }

    fn seal(
        &self,
        binding: [u8; 32],
        round: u32,
        park: Option<u64>,
        keys: Vec<String>,
    ) -> Result<String, ErrorData> {
        let state = State {
            nonce: self.fresh_nonce(),
            round,
            park,
            keys,
        };
        self.codec
            .seal_json_with(
                &state,
                &SealOptions::new().associated_data(&binding).ttl(STATE_TTL),
            )
            .map_err(|e| ErrorData::internal_error(format!("cannot seal requestState: {e}"), None))
    }

    /// Marks a state's nonce spent for `owner`; a nonce spent before is a replay.
    fn spend(&self, nonce: u64, owner: &Arc<str>) -> Result<(), ErrorData> {
        let mut guard = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        let Spent { until, held } = &mut *guard;
        let now = Instant::now();
        until.retain(|_, (when, who)| {
            let keep = *when > now;
            if !keep {
                held.give_back(who);
            }
            keep
        });
        if until.contains_key(&nonce) {
            return Err(ErrorData::invalid_params(
                "requestState refused: it was used already (each state continues a request once)",
                None,
            ));
        }
        if let Err(why) = held.take(&SPENT_SHARE, owner, None) {
            return Err(refused(match why {
                Refusal::Own { cap } => format!(
                    "this client continued {cap} requests in the last {} s, its share of this \
                     server; try again later",
                    STATE_TTL.as_secs()
                ),
                Refusal::Full { .. } => {
                    "too many requests are continuing at once on this server; try again later"
                        .to_string()
                }
            }));
        }
        until.insert(nonce, (now + STATE_TTL, owner.clone()));
        Ok(())
    }

    /// Drops parked calls whose time is up (their wrapped servers get an error) and
    /// those that ended meanwhile (a wrapped server's question timed out).
    fn sweep(&self) {
        let now = Instant::now();
        let mut all = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|_, p| {
            let keep = p.expires > now && !p.work.is_finished();
            if !keep {
                p.stop();
            }
            keep
        });
    }

    /// How many calls are parked now.
    #[cfg(test)]
    pub fn parked(&self) -> usize {
        self.parked.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Drop for Rounds {
    fn drop(&mut self) {
        for p in self
            .parked
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            p.stop();
        }
    }
}

mod request;
#[cfg(test)]
mod tests;
