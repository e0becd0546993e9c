//! Registers: the generated database (names, offsets, bitfields) and the
//! per-processor register file.

pub mod db;
#[rustfmt::skip]
pub mod generated;
