//! (being written)

use super::Spec;

pub(crate) fn specs() -> Vec<Spec> {
    Vec::new()
}
