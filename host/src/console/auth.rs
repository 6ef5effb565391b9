//! Who may use the console (docs/console.md, "Access"): the operator token taken once by
//! the login page, a session cookie, single-use CSRF nonces on every state-changing form,
//! and a limit on wrong tokens.
//!
//! - **Sessions** are 256 random bits (hex) held in memory: a cookie of another console,
//!   or of this one before a restart, names no session here. A session ends after
//!   [`IDLE`] (or the operator's `--console-session-idle`) without a request and [`LIFETIME`] after login, whichever comes first; at
//!   most [`MAX_SESSIONS`] are held (a login past that ends the least recently used).
//! - **CSRF nonces** are 128 random bits, one per form shown, kept in the session that
//!   was shown the form (at most [`MAX_NONCES`], oldest dropped) and removed when used:
//!   a nonce of another session, an invented one or one used before is refused, so a
//!   form cannot be replayed (an approval is not given twice by a reload).
//! - **Wrong tokens** draw from a bucket of [`LOGIN_BURST`] tries that refills one per
//!   [`LOGIN_REFILL`]; an empty bucket answers 429 without comparing. The bucket is the
//!   process's (the console listens on loopback, where every client has one address).
//! - Session ids and nonces are compared in constant time (`subtle`).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq as _;

/// A session with no request for this long ends.
pub const IDLE: Duration = Duration::from_secs(30 * 60);
/// A session ends this long after its login, used or not.
pub const LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// Most sessions held at once.
pub const MAX_SESSIONS: usize = 64;
/// Most CSRF nonces a session holds (forms shown and not yet sent).
pub const MAX_NONCES: usize = 256;
/// Wrong tokens accepted in a burst before logins are refused for a while.
pub const LOGIN_BURST: u32 = 10;
/// One more try is allowed each this long.
pub const LOGIN_REFILL: Duration = Duration::from_secs(2);

/// Why a random value could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("the system's random source failed: {0}")]
pub struct RandomError(String);

/// `n` random bytes as lower-case hex.
fn random_hex<const N: usize>() -> Result<String, RandomError> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|e| RandomError(e.to_string()))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// One operator session.
#[derive(Debug)]
struct Session {
    /// A short, non-secret name for the audit trail (`console:` and 8 hex digits of a
    /// separate random value, never part of the id).
    label: String,
    created: Instant,
    last_seen: Instant,
    nonces: VecDeque<String>,
}

/// What a request's cookie resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionView {
    /// The session id (the cookie's value).
    pub id: String,
    /// Its name for the audit trail.
    pub label: String,
}

/// The sessions and the login bucket of one console.
#[derive(Debug)]
pub struct Sessions {
    inner: Mutex<Inner>,
    idle: Duration,
}

#[derive(Debug)]
struct Inner {
    sessions: HashMap<String, Session>,
    tries: f64,
    refilled: Instant,
}

/// The outcome of a login attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum Login {
    /// The token was right: a new session.
    Ok(SessionView),
    /// The token was wrong.
    Wrong,
    /// Too many wrong tokens lately: try again after this long.
    Limited(Duration),
}

impl Default for Sessions {
    fn default() -> Self {
        Self::new()
    }
}

impl Sessions {
    /// No session yet, a full login bucket, sessions ending after [`IDLE`] unused.
    pub fn new() -> Sessions {
        Self::with_idle(IDLE)
    }

    /// As [`Sessions::new`], sessions ending after `idle` unused (at most [`LIFETIME`]).
    pub fn with_idle(idle: Duration) -> Sessions {
        Sessions {
            idle: idle.min(LIFETIME),
            inner: Mutex::new(Inner {
                sessions: HashMap::new(),
                tries: f64::from(LOGIN_BURST),
                refilled: Instant::now(),
            }),
        }
    }

    // A poisoned lock means a panic while holding it; each critical section leaves the
    // map whole (single inserts and removes), so carry on with it.
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks a login: `right` says whether the token was right (compared by the caller,
    /// in constant time). A wrong one spends a try; with no try left nothing is compared
    /// and the answer is [`Login::Limited`] (call [`Sessions::may_try`] first).
    pub fn login(&self, right: bool) -> Result<Login, RandomError> {
        let now = Instant::now();
        let mut inner = self.lock();
        if !right {
            inner.tries = (inner.tries - 1.0).max(0.0);
            return Ok(Login::Wrong);
        }
        let idle = self.idle;
        inner.sessions.retain(|_, s| alive(s, now, idle));
        if inner.sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = inner
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(id, _)| id.clone())
        {
            inner.sessions.remove(&oldest);
        }
        let id = random_hex::<32>()?;
        let label = format!("console:{}", &random_hex::<4>()?);
        inner.sessions.insert(
            id.clone(),
            Session {
                label: label.clone(),
                created: now,
                last_seen: now,
                nonces: VecDeque::new(),
            },
        );
        Ok(Login::Ok(SessionView { id, label }))
    }

    /// Whether a login may be tried now; `Err(wait)` when the bucket is empty.
    pub fn may_try(&self) -> Result<(), Duration> {
        let now = Instant::now();
        let mut inner = self.lock();
        let earned = now.duration_since(inner.refilled).as_secs_f64() / LOGIN_REFILL.as_secs_f64();
        inner.tries = (inner.tries + earned).min(f64::from(LOGIN_BURST));
        inner.refilled = now;
        if inner.tries >= 1.0 {
            Ok(())
        } else {
            Err(LOGIN_REFILL.mul_f64(1.0 - inner.tries))
        }
    }

    /// The live session `id` names (constant-time compare), touched; `None` for an
    /// unknown, idle or expired one (which is then forgotten).
    pub fn session(&self, id: &str) -> Option<SessionView> {
        let now = Instant::now();
        let mut inner = self.lock();
        let key = inner
            .sessions
            .keys()
            .find(|k| bool::from(k.as_bytes().ct_eq(id.as_bytes())))?
            .clone();
        let s = inner.sessions.get_mut(&key)?;
        if !alive(s, now, self.idle) {
            inner.sessions.remove(&key);
            return None;
        }
        s.last_seen = now;
        Some(SessionView {
            id: key,
            label: s.label.clone(),
        })
    }

    /// A fresh CSRF nonce for a form shown to session `id`.
    pub fn nonce(&self, id: &str) -> Result<String, RandomError> {
        let nonce = random_hex::<16>()?;
        let mut inner = self.lock();
        if let Some(s) = inner.sessions.get_mut(id) {
            if s.nonces.len() >= MAX_NONCES {
                s.nonces.pop_front();
            }
            s.nonces.push_back(nonce.clone());
        }
        Ok(nonce)
    }

    /// Spends the CSRF nonce `presented` of session `id`: true when the session was given
    /// it and has not used it (it is then gone).
    pub fn spend_nonce(&self, id: &str, presented: &str) -> bool {
        let mut inner = self.lock();
        let Some(s) = inner.sessions.get_mut(id) else {
            return false;
        };
        let mut found = None;
        for (i, n) in s.nonces.iter().enumerate() {
            if bool::from(n.as_bytes().ct_eq(presented.as_bytes())) {
                found = Some(i);
            }
        }
        match found {
            Some(i) => {
                s.nonces.remove(i);
                true
            }
            None => false,
        }
    }

    /// Ends session `id`.
    pub fn logout(&self, id: &str) {
        self.lock().sessions.remove(id);
    }

    /// How many sessions are alive.
    pub fn len(&self) -> usize {
        let now = Instant::now();
        self.lock()
            .sessions
            .values()
            .filter(|s| alive(s, now, self.idle))
            .count()
    }

    /// Whether no session is alive.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn alive(s: &Session, now: Instant, idle: Duration) -> bool {
    now.duration_since(s.last_seen) < idle && now.duration_since(s.created) < LIFETIME
}

/// The value of cookie `name` in a request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login(s: &Sessions) -> SessionView {
        match s.login(true).unwrap() {
            Login::Ok(v) => v,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_nonce_works_once_and_only_for_its_session() {
        let s = Sessions::new();
        let a = login(&s);
        let b = login(&s);
        let n = s.nonce(&a.id).unwrap();
        assert!(!s.spend_nonce(&b.id, &n), "another session's nonce");
        assert!(s.spend_nonce(&a.id, &n));
        assert!(!s.spend_nonce(&a.id, &n), "replayed");
        assert!(!s.spend_nonce(&a.id, "00"), "invented");
        s.logout(&a.id);
        let n = s.nonce(&a.id).unwrap();
        assert!(!s.spend_nonce(&a.id, &n), "a nonce of an ended session");
    }

    #[test]
    fn wrong_tokens_empty_the_bucket() {
        let s = Sessions::new();
        for _ in 0..LOGIN_BURST {
            assert!(s.may_try().is_ok());
            assert_eq!(s.login(false).unwrap(), Login::Wrong);
        }
        assert!(s.may_try().is_err());
    }

    #[test]
    fn sessions_are_bounded_and_unknown_ids_resolve_to_nothing() {
        let s = Sessions::new();
        let first = login(&s);
        for _ in 0..MAX_SESSIONS {
            login(&s);
        }
        assert_eq!(s.len(), MAX_SESSIONS);
        assert!(
            s.session(&first.id).is_none(),
            "the least recently used went"
        );
        assert!(s.session("not-a-session").is_none());
    }

    #[test]
    fn cookies_are_found_by_exact_name() {
        let mut h = axum::http::HeaderMap::new();
        h.insert(
            axum::http::header::COOKIE,
            "a_x=1; toolhost_console_9=abc; other=2".parse().unwrap(),
        );
        assert_eq!(cookie(&h, "toolhost_console_9"), Some("abc"));
        assert_eq!(cookie(&h, "toolhost_console"), None);
    }
}
