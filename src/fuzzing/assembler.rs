//! `assembler`: [`crate::asm::assemble`] on arbitrary text. It must refuse
//! or assemble, never panic; an error must print; what it assembles must be
//! a trace the reader accepts and that passes every check of the
//! `trace_reader` harness (map, rewrite, replay on small processors).

use super::trace::check_trace;
use super::{Outcome, Violation};
use crate::trace::Trace;

const TARGET: &str = "assembler";

/// The `assembler` harness: the input as UTF-8 text (invalid sequences
/// replaced, so every input reaches the assembler).
pub fn assembler(data: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(data);
    match crate::asm::assemble(&text) {
        Ok(bytes) => match Trace::from_bytes(bytes) {
            Ok(trace) => check_trace(TARGET, &trace),
            Err(e) => Err(Violation::new(TARGET, format!("assembled bytes are not a trace: {e}"))),
        },
        Err(e) => {
            let _ = e.to_string();
            Ok(())
        }
    }
}
