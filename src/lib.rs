//! pm4core: the front-end command processor (CP) of the PS5's "Prospero" GPU
//! (AMD RDNA2, gfx10.3), with PS4 (gfx7) notes.
//!
//! A game's driver writes PM4 packets into command buffers in guest memory and
//! submits them to a queue; each queue's [`processor::Processor`] walks them
//! with a resumable [`processor::Pm4Execution`], applies register writes to
//! its [`regs::RegisterFile`] and sends every effect out through the
//! [`memory::GuestMemory`] and [`backend::Backend`] traits.
//!
//! See `ARCHITECTURE.md` for the map of modules.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

// Without default features only the core is built (processor, gpu, memory,
// backend, registers, packets, AGC containers); each tool is a feature.

// The assembler's syntax reference uses [brackets] for defaults, not links.
#[cfg(feature = "asm")]
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
pub mod asm;
pub mod backend;
#[cfg(feature = "replay")]
pub mod diagnostics;
#[cfg(feature = "disasm")]
pub mod disasm;
#[cfg(all(feature = "asm", feature = "import", feature = "inspect", feature = "replay"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod gpu;
#[cfg(feature = "import")]
pub mod import;
#[cfg(feature = "inspect")]
pub mod inspect;
pub mod limits;
pub mod memory;
pub mod packet;
pub mod processor;
#[cfg(feature = "trace")]
pub mod recorder;
pub mod regs;
#[cfg(feature = "replay")]
pub mod replay;
pub mod shader;
#[cfg(feature = "trace")]
pub mod trace;

pub use regs::db::GpuFamily;

/// `n` and a noun in the right number: `1 submission`, `3 submissions`.
#[cfg_attr(not(feature = "tools"), allow(dead_code))]
pub(crate) fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
