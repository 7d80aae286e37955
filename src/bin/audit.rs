//! The `audit` binary: parse, run, print, exit 0 (no violation found), 1 (violation found) or
//! 2 (error).

use std::io::Write;
use std::process::ExitCode;

use dp_audit::commands::{Cli, run};

fn main() -> ExitCode {
    let cli = Cli::parse_args(std::env::args_os().collect());
    let result = run(cli);
    // Temporary copies of streams given as shards (`<(zcat a.gz)`).
    dp_audit::sources::shards::remove_stored_streams();
    match result {
        Ok(outcome) => {
            let mut out = std::io::stdout().lock();
            let written = out
                .write_all(outcome.stdout.as_bytes())
                .and_then(|()| out.flush());
            match written {
                // A reader that closed the pipe early (`audit list | head`) is not an error.
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    eprintln!("audit: error: cannot write the result to stdout: {e}");
                    return ExitCode::from(2);
                }
                _ => {}
            }
            if let Some(err) = outcome.late_error {
                eprintln!("audit: error (after the verdict above): {err}");
                // A confirmed violation is the answer, whatever failed after it: exit 1, the
                // failure reported beside it. Otherwise the run has no complete answer.
                return ExitCode::from(if outcome.code == 1 { 1 } else { 2 });
            }
            ExitCode::from(outcome.code)
        }
        Err(err) => {
            // Every error's message already includes its cause (an OS error once, not twice as
            // a chain printer would show it).
            eprintln!("audit: error: {err}");
            ExitCode::from(2)
        }
    }
}
