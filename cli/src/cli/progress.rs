//! The progress bar of the commands that load every plugin before they answer (`list`,
//! `call`, `chat`, `inspect`): on a cold compile cache a large JS or Python component
//! takes seconds to compile, and a silent wait looks like a hang.
//!
//! The rule: the bar is drawn on stderr only when stderr is a terminal, and only once a
//! component has been loading for [`SLOW_LOAD`] (a warm start never shows it). It names
//! the components being compiled and counts the finished ones ("3/6"). Off a terminal
//! nothing is drawn; the loader's `info` logs say the same ("compiling js_http.wasm
//! (12.3 MB)", "compiled js_http.wasm in 4.2 s"). Stdout is never touched.

use std::future::Future;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use toolhost::loader::{LoadEvent, LoadProgress, SLOW_LOAD, human_bytes};

/// A [`LoadProgress`] that draws a bar on a terminal's stderr (see the module docs).
pub struct Bar {
    /// `None` when stderr is not a terminal.
    bar: Option<ProgressBar>,
    /// The components reported as compiling and not finished yet, in order.
    compiling: Mutex<Vec<String>>,
}

impl Bar {
    /// A bar on stderr if it is a terminal, else one that draws nothing.
    pub fn for_stderr() -> Bar {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} loading plugins [{pos}/{len}] {msg} ({elapsed})",
            ) {
                bar.set_style(style);
            }
            bar
        });
        Bar {
            bar,
            compiling: Mutex::new(Vec::new()),
        }
    }

    fn show_compiling(&self, bar: &ProgressBar) {
        let names = self.compiling.lock().unwrap_or_else(|e| e.into_inner());
        let msg = match names.as_slice() {
            [] => String::new(),
            names => format!("compiling {}", names.join(", ")),
        };
        bar.set_message(msg);
    }
}

impl LoadProgress for Bar {
    fn event(&self, event: &LoadEvent<'_>) {
        let Some(bar) = &self.bar else { return };
        match *event {
            LoadEvent::Started { total } => bar.set_length(total as u64),
            LoadEvent::Compiling { name, bytes } => {
                let label = format!("{}.wasm ({})", super::term::text(name), human_bytes(bytes));
                self.compiling
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(label);
                if bar.is_hidden() {
                    bar.set_draw_target(ProgressDrawTarget::stderr());
                    bar.enable_steady_tick(Duration::from_millis(120));
                }
                self.show_compiling(bar);
            }
            LoadEvent::Finished { name, done, .. } => {
                let prefix = format!("{}.wasm ", super::term::text(name));
                self.compiling
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .retain(|l| !l.starts_with(&prefix));
                bar.set_position(done as u64);
                self.show_compiling(bar);
            }
            LoadEvent::Done => bar.finish_and_clear(),
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar
            && !bar.is_finished()
        {
            bar.finish_and_clear();
        }
    }
}

/// Runs the load of one component (`inspect`) on a blocking thread, with `progress`
/// told about it like a folder of one: the bar appears if it takes over [`SLOW_LOAD`].
pub async fn load_one<T, F>(progress: &Bar, path: &Path, load: F) -> anyhow::Result<T>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let name = toolhost::trust::plugin_name(path);
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let handle = tokio::runtime::Handle::current();
    // The load compiles synchronously inside its future: off the runtime's threads, so
    // the timer below can fire while it runs.
    let mut job = tokio::task::spawn_blocking(move || handle.block_on(load));
    progress.event(&LoadEvent::Started { total: 1 });
    let t0 = Instant::now();
    let (joined, slow) = match tokio::time::timeout(SLOW_LOAD, &mut job).await {
        Ok(joined) => (joined, false),
        Err(_) => {
            tracing::info!(plugin = %name, "compiling {name}.wasm ({})", human_bytes(bytes));
            progress.event(&LoadEvent::Compiling { name: &name, bytes });
            let joined = job.await;
            tracing::info!(plugin = %name, "compiled {name}.wasm in {:.1} s", t0.elapsed().as_secs_f64());
            (joined, true)
        }
    };
    progress.event(&LoadEvent::Finished {
        name: &name,
        elapsed: t0.elapsed(),
        slow,
        done: 1,
        total: 1,
    });
    progress.event(&LoadEvent::Done);
    joined.map_err(|e| anyhow::anyhow!("loading {} failed: {e}", path.display()))
}
