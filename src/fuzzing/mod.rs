//! The bodies of the fuzz targets in `fuzz/`, shared with the corpus test
//! (`tests/fuzz_corpus.rs`) so that the fuzzer and `cargo test` run the very
//! same code on the same inputs. Not part of the library's API.
//!
//! Each harness takes arbitrary bytes, drives one part of the library with
//! them, and checks invariants the library promises (a trace the reader
//! accepted maps, a rejected shader header is left untouched, an error
//! leaves the processor idle, ...). A broken invariant is returned as a
//! [`Violation`]; the fuzz target turns it into a panic, the test into a
//! failure. The harnesses themselves never panic, and their work is bounded
//! by construction: small work budgets, bounded resumes, bounded slices.

pub mod assembler;
pub mod import;
mod input;
pub mod processor;
pub mod shaders;
pub mod trace;

use std::fmt;

pub use assembler::assembler;
pub use import::import;
pub use input::Input;
pub use processor::processor;
pub use shaders::shader_containers;
pub use trace::trace_reader;

/// An invariant a harness checks that did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The harness that found it.
    pub target: &'static str,
    /// What did not hold.
    pub what: String,
}

impl Violation {
    pub(crate) fn new(target: &'static str, what: impl Into<String>) -> Self {
        Violation { target, what: what.into() }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.target, self.what)
    }
}

impl std::error::Error for Violation {}

/// What a harness returns.
pub type Outcome = Result<(), Violation>;

/// A harness: arbitrary bytes in, an invariant check out.
pub type Harness = fn(&[u8]) -> Outcome;

/// Every fuzz target by name (the name of its `fuzz/fuzz_targets/*.rs` file
/// and of its `fuzz/corpus/` and `fuzz/regressions/` folders).
pub const TARGETS: [(&str, Harness); 5] = [
    ("trace_reader", trace_reader),
    ("processor", processor),
    ("shader_containers", shader_containers),
    ("import", import),
    ("assembler", assembler),
];

/// The harness of a target, by name.
pub fn harness(target: &str) -> Option<Harness> {
    TARGETS.iter().find(|(name, _)| *name == target).map(|&(_, h)| h)
}
