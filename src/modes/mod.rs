//! The library layer under every command: each mode of `audit` as plain options and a function
//! that does the work, called alike by the command line ([`crate::commands`], which only parses
//! and checks its flags into these options) and by the Python package. [`crate::run`] is the same
//! for `audit run`.
//!
//! - [`test`]: `audit test`, a claim tested on release samples drawn elsewhere;
//! - [`one_run`]: `audit one-run`, a training run audited in one run from its canaries;
//! - [`claim`]: a `--claim` value, including `ledger:FILE[:DELTA]`;
//! - [`checks`]: the checks of numbers every mode makes, with the errors the user reads.

pub mod checks;
pub mod claim;
pub mod one_run;
pub mod test;
