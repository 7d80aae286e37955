//! The result record: what every kind of audit reports (the claim, the pairs, the bounds with
//! their events, the β split, the verdict, the ε estimate), serialized to the JSON layout
//! [`RECORD_SCHEMA_VERSION`] and rendered by [`crate::report`]. The modes fill it (each builds
//! its own record section); nothing here runs an audit, and nothing here uses a mode: the
//! record is a leaf of the crate (`tests/import_layers.rs` fails when an import circle comes
//! back).
//!
//! Inside, the files are layered too: [`bound`] (one bound, the verdict, the ε estimate) ←
//! [`layers`] (a layer's answer) ← [`audit_report`] (one audit's report) ← [`result`] (the one
//! record).

pub mod audit_report;
pub mod bound;
pub mod effort;
pub mod layers;
pub mod result;

pub use audit_report::*;
pub use bound::*;
pub use result::{RECORD_SCHEMA_VERSION, ResultRecord};
