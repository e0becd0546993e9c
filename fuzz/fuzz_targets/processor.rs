//! Fuzz target `processor`: the harness `pm4core::fuzzing::processor`, which
//! `tests/fuzz_corpus.rs` also runs over the corpus and the regressions. A
//! broken invariant comes back as a violation and is turned into a panic
//! here, so libFuzzer records it as a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(violation) = pm4core::fuzzing::processor(data) {
        panic!("{violation}");
    }
});
