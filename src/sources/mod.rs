//! Where releases come from, besides the catalogue's own `Mechanism`s: an external program that
//! speaks the exec protocol ([`exec`]), and release shards drawn elsewhere ([`shards`], whose
//! text formats [`text`] parses).

pub mod bayesian_shards;
pub mod exec;
pub mod shards;
pub mod text;
