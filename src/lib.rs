//! pm4core emulates the front-end command processor (CP) of the PS5's
//! "Prospero" GPU (AMD RDNA2, gfx10.3) and of the PS4's (gfx7): it reads the
//! PM4 packets a game's driver writes into command buffers in guest memory,
//! runs the graphics queue and the 56 compute queues, keeps each queue's
//! registers, follows indirect buffers, honours predication, suspends and
//! resumes waits, binds shader programs on the way through, and hands
//! draws, dispatches, events, fences and flips to the emulator's renderer.
//! It never panics on guest data: every problem is an error value that says
//! what and where.
//!
//! # Embedding it in an emulator
//!
//! An emulator gives the GPU its guest memory (a [`memory::GuestMemory`]:
//! its own mappings through `pm4core-hostmem`, its own access functions
//! through [`memory::TranslatedMemory`], or [`memory::FlatMemory`]) and its
//! renderer (a [`backend::Backend`]), then submits command buffers from any
//! thread to a [`gpu::Gpu`]; its CPU's stores to labels wake the waits on
//! them, notified or not.
//!
//! ```
//! use std::sync::Arc;
//! use pm4core::backend::{Backend, Draw, QueueId};
//! use pm4core::gpu::{Gpu, GpuConfig};
//! use pm4core::memory::{FlatMemory, GuestMemory};
//! use pm4core::packet::body::CompareFunction;
//! use pm4core::packet::builder::CommandBuffer;
//! use pm4core::packet::Opcode;
//!
//! /// The emulator's renderer.
//! #[derive(Default)]
//! struct Renderer { vertices: u32 }
//! impl Backend for Renderer {
//!     fn draw(&mut self, draw: &Draw<'_>) { self.vertices += draw.count; }
//! }
//!
//! let ram = Arc::new(FlatMemory::new(0, 1 << 20)?);             // the emulator's guest RAM
//! let mut cb = CommandBuffer::new();                            // what the game's driver wrote
//! cb.wait_mem(0x8000, CompareFunction::Equal, 1, u32::MAX)?.pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])?;
//! ram.write_bytes(0x1000, &cb.to_bytes())?;
//! let gpu = Gpu::threaded(Arc::clone(&ram), Renderer::default(), GpuConfig::default())?;
//! let frame = gpu.submit(QueueId::GRAPHICS, 0x1000, cb.len_dw())?;
//! ram.write_u32(0x8000, 1)?;                                    // the CPU's store, not notified
//! frame.wait()?;                                                // the GPU's polling saw it
//! assert_eq!(gpu.with_backend(|r| r.vertices)?, 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Modules
//!
//! - [`gpu`]: the queues, their scheduling in threaded or deterministic
//!   mode, waits, interrupts, stalls, shutdown;
//! - [`processor`]: one queue's command processor (the ProcessPm4 loop and
//!   its handlers), usable on its own;
//! - [`memory`]: guest memory and its contract;
//! - [`backend`]: what the renderer receives;
//! - [`packet`]: headers, framing, typed packet bodies and the command
//!   buffer builder;
//! - [`regs`]: the register files and the generated register databases;
//! - [`shader`]: AGC (PS5) and GNM (PS4) shader containers;
//! - tools, each a Cargo feature: `trace` (the trace file format and the
//!   `recorder`), `replay` (with `diagnostics`), `disasm`, `asm`, `import`,
//!   `inspect`, behind the `pm4` command.

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

// The README's Rust snippets compile and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeSnippets;

/// `n` and a noun in the right number: `1 submission`, `3 submissions`.
#[cfg_attr(not(feature = "tools"), allow(dead_code))]
pub(crate) fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
