//! The console's live view (docs/console.md, "Live"): [`LiveCalls`], a
//! [`ToolEventListener`] on the registry that counts what `/metrics` counts (calls,
//! latency, denials, per tool), and the snapshot the `/console/live/events` stream sends
//! once a second.
//!
//! Cost on the call path: one short lock and a few stores per completed call; nothing is
//! formatted or sent there. The stream reads a snapshot once a second per open console,
//! whatever the call rate. Bounds: tools are labelled as `/metrics` labels them (at most
//! [`crate::admin::MAX_TOOL_LABELS`] names, then `(other)`); each keeps its last
//! [`LATENCY_SAMPLES`] durations; the recent calls shown are the last [`RECENT`].

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::tools::{ToolEvent, ToolEventListener};

/// Durations kept per tool for its percentiles.
pub const LATENCY_SAMPLES: usize = 256;
/// Recent calls kept for the live table.
pub const RECENT: usize = 50;
/// Seconds of per-second call counts kept for the chart.
pub const SECONDS: usize = 60;

/// One tool's counts.
#[derive(Debug, Default)]
struct ToolStats {
    calls: u64,
    errors: u64,
    denials: u64,
    latencies_ms: VecDeque<f64>,
}

/// A recent call, as the live table shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RecentCall {
    /// Sequence number (increasing), so a page adds only calls it has not shown.
    pub seq: u64,
    /// The tool's label (bounded like `/metrics`'s; `(unknown)` for a name not held).
    pub tool: String,
    /// The client's label (`local`, a configured client, `token:N`, `session`, `peer`).
    pub client: String,
    /// `ok`, or the error kind.
    pub outcome: String,
    /// Wall time, milliseconds.
    pub ms: f64,
}

/// One tool's line of the snapshot.
#[derive(Debug, Clone, Serialize)]
pub struct ToolLine {
    /// The tool's label.
    pub tool: String,
    /// Calls completed.
    pub calls: u64,
    /// Calls that ended in an error (denials included).
    pub errors: u64,
    /// Calls refused by the permission gate.
    pub denials: u64,
    /// Latency percentiles over the last [`LATENCY_SAMPLES`] calls, milliseconds.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
}

/// What the live stream sends each second.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// Calls completed in each of the last [`SECONDS`] seconds, oldest first.
    pub per_second: Vec<u64>,
    /// Calls completed since the start.
    pub total: u64,
    /// Per tool, by name.
    pub tools: Vec<ToolLine>,
    /// The most recent calls, newest last.
    pub recent: Vec<RecentCall>,
}

#[derive(Debug)]
struct State {
    tools: BTreeMap<String, ToolStats>,
    /// (second since `start`, calls in it), oldest first.
    seconds: VecDeque<(u64, u64)>,
    recent: VecDeque<RecentCall>,
    /// Calls and errors per client label (bounded by the config: see
    /// `crate::admin::client_label`).
    clients: BTreeMap<String, (u64, u64)>,
    total: u64,
    seq: u64,
}

/// The live counts (see the module docs).
#[derive(Debug)]
pub struct LiveCalls {
    start: Instant,
    state: Mutex<State>,
}

impl Default for LiveCalls {
    fn default() -> Self {
        Self::new()
    }
}

impl LiveCalls {
    /// Nothing counted yet.
    pub fn new() -> LiveCalls {
        LiveCalls {
            start: Instant::now(),
            state: Mutex::new(State {
                tools: BTreeMap::new(),
                seconds: VecDeque::with_capacity(SECONDS + 1),
                recent: VecDeque::with_capacity(RECENT + 1),
                clients: BTreeMap::new(),
                total: 0,
                seq: 0,
            }),
        }
    }

    // A poisoned lock: every section below leaves the counts whole; carry on.
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn second(&self) -> u64 {
        self.start.elapsed().as_secs()
    }

    /// The counts now.
    pub fn snapshot(&self) -> Snapshot {
        let now = self.second();
        let state = self.lock();
        let mut per_second = vec![0; SECONDS];
        for (s, n) in &state.seconds {
            let age = now.saturating_sub(*s) as usize;
            if age < SECONDS {
                per_second[SECONDS - 1 - age] = *n;
            }
        }
        let tools = state
            .tools
            .iter()
            .map(|(tool, t)| {
                let mut l: Vec<f64> = t.latencies_ms.iter().copied().collect();
                l.sort_by(f64::total_cmp);
                ToolLine {
                    tool: tool.clone(),
                    calls: t.calls,
                    errors: t.errors,
                    denials: t.denials,
                    p50_ms: percentile(&l, 0.50),
                    p95_ms: percentile(&l, 0.95),
                    p99_ms: percentile(&l, 0.99),
                }
            })
            .collect();
        Snapshot {
            per_second,
            total: state.total,
            tools,
            recent: state.recent.iter().cloned().collect(),
        }
    }

    /// Calls and errors per client.
    pub(crate) fn by_client(&self) -> Vec<super::pages::ClientRow> {
        self.lock()
            .clients
            .iter()
            .map(|(client, (calls, errors))| super::pages::ClientRow {
                client: client.clone(),
                calls: *calls,
                errors: *errors,
            })
            .collect()
    }

    fn completed(&self, tool: String, client: String, outcome: String, duration: Duration) {
        let now = self.second();
        let ms = duration.as_secs_f64() * 1000.0;
        let ok = outcome == "ok";
        let mut state = self.lock();
        state.total += 1;
        state.seq += 1;
        let seq = state.seq;
        match state.seconds.back_mut() {
            Some((s, n)) if *s == now => *n += 1,
            _ => {
                state.seconds.push_back((now, 1));
                while state.seconds.len() > SECONDS {
                    state.seconds.pop_front();
                }
            }
        }
        let c = state.clients.entry(client.clone()).or_default();
        c.0 += 1;
        c.1 += u64::from(!ok);
        let t = state.tools.entry(tool.clone()).or_default();
        t.calls += 1;
        if !ok {
            t.errors += 1;
        }
        if t.latencies_ms.len() >= LATENCY_SAMPLES {
            t.latencies_ms.pop_front();
        }
        t.latencies_ms.push_back(ms);
        if state.recent.len() >= RECENT {
            state.recent.pop_front();
        }
        state.recent.push_back(RecentCall {
            seq,
            tool,
            client,
            outcome,
            ms,
        });
    }
}

/// The `q` quantile of sorted `l` (nearest rank), 0 for none.
fn percentile(l: &[f64], q: f64) -> f64 {
    if l.is_empty() {
        return 0.0;
    }
    let rank = ((q * l.len() as f64).ceil() as usize).clamp(1, l.len());
    l[rank - 1]
}

impl ToolEventListener for LiveCalls {
    fn on_event(&self, event: &ToolEvent) {
        match event {
            ToolEvent::Completed {
                tool,
                client,
                source,
                ok,
                error_kind,
                duration,
                ..
            } => {
                let (tool, outcome) =
                    crate::admin::call_labels(tool, source.as_ref(), *ok, error_kind.as_ref());
                self.completed(
                    tool,
                    crate::admin::client_label(client.as_deref()),
                    outcome,
                    *duration,
                );
            }
            ToolEvent::PermissionDenied { tool, .. } => {
                let label = crate::admin::tool_label(tool);
                // Only tools already counted get a denial line: a denial is always
                // followed by its completion, which makes the line.
                let mut state = self.lock();
                state.tools.entry(label).or_default().denials += 1;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_percentiles_and_recent_calls_are_bounded() {
        let live = LiveCalls::new();
        for i in 0..1000u64 {
            live.completed(
                "t".into(),
                "local".into(),
                if i % 10 == 0 { "timeout" } else { "ok" }.into(),
                Duration::from_millis(i % 100),
            );
        }
        let s = live.snapshot();
        assert_eq!(s.total, 1000);
        assert_eq!(s.recent.len(), RECENT);
        assert_eq!(s.recent.last().map(|c| c.seq), Some(1000));
        let t = &s.tools[0];
        assert_eq!((t.calls, t.errors), (1000, 100));
        assert!(t.p50_ms <= t.p95_ms && t.p95_ms <= t.p99_ms && t.p99_ms <= 99.0);
        assert_eq!(s.per_second.iter().sum::<u64>(), 1000);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.0);
    }
}
