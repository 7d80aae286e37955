//! The library layer under every command: each mode of `audit` as plain options and a function
//! that does the work, called alike by the command line ([`crate::commands`], which only parses
//! and checks its flags into these options) and by the Python package.
//!
//! - [`run`]: `audit run`, one kind of audit of a catalogue entry or a program (fixed pair,
//!   search, layered search, Bayesian or sequential), with its report and output;
//! - [`accountant`]: `audit accountant`, the accountants of a privacy ledger through one trait;
//! - [`test`]: `audit test`, a claim tested on release samples drawn elsewhere;
//! - [`one_run`]: `audit one-run`, a training run audited in one run from its canaries;
//! - [`final_model`]: `audit final-model`, the built-in trainer audited from its final model
//!   over many runs;
//! - [`claim`]: a `--claim` value, including `ledger:FILE[:DELTA]`;
//! - [`checks`]: the checks of numbers every mode makes, with the errors the user reads.

pub mod accountant;
pub mod checks;
pub mod claim;
pub mod final_model;
pub mod final_model_exec;
pub mod one_run;
pub mod run;
pub mod test;
