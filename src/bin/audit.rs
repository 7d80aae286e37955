//! The `audit` binary: parse, run, print, exit 0 (no violation found), 1 (violation found) or
//! 2 (error).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use dp_audit::commands::{Cli, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(outcome) => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`audit list | head`) is not an error.
            let _ = out.write_all(outcome.stdout.as_bytes());
            let _ = out.flush();
            ExitCode::from(outcome.code)
        }
        Err(err) => {
            eprintln!("audit: error: {:#}", anyhow::Error::from(err));
            ExitCode::from(2)
        }
    }
}
