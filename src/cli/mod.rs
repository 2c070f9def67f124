//! The `corpus-dedup` command line: the binary edge (anyhow errors, one paragraph on stderr), shared
//! by the binary, the Python package's console script and its `run()`, `apply()` and `explain()`.
//! The functions the Python package calls return [`CommandError`]: the library's error, with what
//! the command was working on.

mod args;
mod commands;
mod index;
mod process;

use clap::{CommandFactory, FromArgMatches};

use crate::visible::visible;

use args::{Cli, Command};
use commands::{apply, audit, explain, plan, report, run, serve, task};
pub use commands::{apply_job, audit_json, explain_json, run_job, score_json};
use index::index_command;
use process::{handle_signals, tune_allocator};

/// An error of a command run through [`run_job`], [`apply_job`] or [`explain_json`]: the
/// library's [`crate::Error`], after the command started with what it was working on.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Before the command started (its settings).
    #[error(transparent)]
    Setup(Box<crate::Error>),
    /// The command failed working on `on` (its output, manifest).
    #[error("corpus-dedup {command} failed ({on})")]
    Failed {
        command: &'static str,
        on: String,
        #[source]
        source: Box<crate::Error>,
    },
}

impl From<crate::Error> for CommandError {
    fn from(e: crate::Error) -> CommandError {
        CommandError::Setup(Box::new(e))
    }
}

impl CommandError {
    fn failed(command: &'static str, on: String) -> impl FnOnce(crate::Error) -> CommandError {
        move |source| CommandError::Failed {
            command,
            on,
            source: Box::new(source),
        }
    }

    /// The library's error.
    pub fn error(&self) -> &crate::Error {
        match self {
            CommandError::Setup(e) | CommandError::Failed { source: e, .. } => e,
        }
    }

    /// The paragraph the command prints after `error: ` ([`error_text`]).
    pub fn text(&self) -> String {
        error_text(self)
    }
}

/// The one paragraph of an error as the command prints it after `error: `: the context chain,
/// outermost first, with ids, paths and values quoted from the input shown, never emitted raw.
pub fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(c) = next {
        // The library's errors say their cause in their own message: the sources below would
        // repeat it (a transparent `Setup` shows its error's message and forwards its sources).
        if let Some(CommandError::Setup(inner)) = c.downcast_ref::<CommandError>() {
            let inner: &crate::Error = inner;
            msg.push(inner.to_string());
            break;
        }
        msg.push(c.to_string());
        if c.is::<crate::Error>() || c.is::<Box<crate::Error>>() {
            break;
        }
        next = c.source();
    }
    visible(&msg.join(": ")).into_owned()
}

/// The command line: parses `args` (the program name first), runs the command and returns its
/// exit code (0 or 1; usage errors and `--help` exit from here, signals end the process with
/// 128 + the signal, but for `serve`). It blocks SIGINT and SIGTERM for the process and tunes the allocator, so
/// it is for a process that is the command (the binary, the Python package's console script).
pub fn main<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    tune_allocator();
    // A panic is a bug, not a user error: one paragraph on stderr, no backtrace dump.
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let msg = visible(&msg);
        eprintln!("error: internal error in corpus-dedup{at}: {msg}. This is a bug; please report it with the command line.");
    }));
    // `run --help` and `plan --help` show each option's default, as the run resolves it.
    let cmd = Cli::command()
        .mut_subcommand("run", crate::config::help_with_defaults)
        .mut_subcommand("plan", crate::config::help_with_defaults);
    let cli = Cli::from_arg_matches(&cmd.get_matches_from(args)).unwrap_or_else(|e| e.exit());
    // Parsing starts no thread, so the mask is still inherited by all; `serve` drains its
    // requests on SIGTERM instead (tokio's handler).
    if !matches!(cli.command, Command::Serve { .. }) {
        handle_signals();
    }
    let result = match cli.command {
        Command::Run {
            job,
            work,
            keep_work,
        } => run(job, work, keep_work),
        Command::Plan { job, work } => plan(job, work),
        Command::Apply { options, threads } => apply(options, threads),
        Command::Report { output } => report(output),
        Command::Audit {
            output,
            pairs,
            by_group,
            score,
        } => audit(output, pairs, by_group, score),
        Command::Explain {
            output,
            id,
            limit,
            json,
        } => explain(output, id, limit, json),
        Command::Index { command } => index_command(command),
        Command::Serve { options } => serve(options),
        Command::Task {
            stage,
            task: index,
            tasks,
            work,
            threads,
        } => task(stage, index, tasks, work, threads),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {}", error_text(e.as_ref()));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_says_its_cause_once() {
        let e = crate::Error::Output {
            path: "out/m.parquet".into(),
            source: std::io::Error::from_raw_os_error(28).into(),
        };
        let text = error_text(
            anyhow::Error::new(e)
                .context("corpus-dedup run failed")
                .as_ref(),
        );
        assert_eq!(text.matches("os error 28").count(), 1, "{text}");
        assert!(
            text.starts_with("corpus-dedup run failed: no space left on device"),
            "{text}"
        );
        // The same through the library's command errors, before and after the command started.
        let full = || crate::Error::Output {
            path: "out/m.parquet".into(),
            source: std::io::Error::from_raw_os_error(28).into(),
        };
        let failed = CommandError::failed("run", "output 'out'".into())(full());
        let text = failed.text();
        assert_eq!(text.matches("os error 28").count(), 1, "{text}");
        assert!(
            text.starts_with("corpus-dedup run failed (output 'out'): no space"),
            "{text}"
        );
        assert_eq!(failed.error().kind(), crate::error::ErrorKind::Storage);
        let setup = CommandError::from(full());
        assert_eq!(setup.text(), full().to_string());
    }
}
