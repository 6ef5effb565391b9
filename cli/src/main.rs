//! The `toolhost` command line: parses flags and hands over to the library.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cli::term::exit_quietly_on_broken_pipe();
    let cli = cli::Cli::parse();
    let traces = cli::init_tracing(cli.verbose, cli.quiet);
    let mut builder = match cli.worker_threads() {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        Some(n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(cli.run());
    // The command is done: blocking work still running (a component `serve` is compiling
    // for a client that has gone, the warm-up linking after a load) must not keep the
    // process alive, which dropping the runtime would (it waits for blocking tasks).
    runtime.shutdown_background();
    // The spans still batched go out before the process ends.
    if let Some(t) = &traces {
        t.shutdown();
    }
    match result {
        Ok(code) => code,
        Err(e) => {
            // Errors can quote a plugin's or a server's words: escape them, and hide the
            // credentials of the URLs they quote.
            eprintln!("error: {}", cli::term::error(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}
