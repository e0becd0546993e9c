//! Fuzz target `assembler` (pending the assembler, see `fuzz/README.md`):
//! the harness `pm4core::fuzzing::assembler`, which
//! `tests/fuzz_corpus.rs` also runs over the corpus and the
//! regressions. A broken invariant comes back as a violation and is turned
//! into a panic here, so libFuzzer records it as a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = pm4core::fuzzing::assembler(data) {
        panic!("{violation}");
    }
});
