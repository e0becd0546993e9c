//! The trace file format (`docs/trace-format.md`, version 1): reading,
//! checking and writing `.pm4t` files.
//!
//! A trace is the exchange format between capture, replay, the assembler
//! and the test corpus: the guest memory command buffers read (`MEM ` and
//! `ZERO` regions), host writes between submissions (`WRIT`), shader
//! creations (`SHDR`) and submissions (`SUBM`), in the order they happened.
//!
//! [`Trace::parse`] checks every rule of the format up front (header, chunk
//! bounds, CRC-32 of every chunk, critical and ancillary tags, payload
//! lengths, alignment, the 48-bit address space, non-overlapping regions,
//! host writes, command buffers and shaders inside memory declared before
//! them, queue indices, reserved fields, the `END ` count) and reports the
//! first violation as a [`TraceError`] naming the chunk index, byte offset
//! and [`TraceRule`]. It never panics and never allocates on behalf of a
//! length field: `MEM ` regions are mapped straight from the file's bytes
//! ([`Trace::map_region`]) and `ZERO` regions allocate nothing until written.
//!
//! [`TraceWriter`] builds traces in memory through the same rules, so the
//! library never writes a trace its reader refuses.
//!
//! ```
//! use pm4core::trace::{Trace, TraceEvent, TraceWriter};
//!
//! let mut w = TraceWriter::new();
//! w.info("gpu", "gfx10.3")?;
//! w.mem(0x1000, &0xffff_1000u32.to_le_bytes())?; // one NOP dword
//! w.submit(0, 0x1000, 1)?;
//! let trace = Trace::from_bytes(w.finish())?;
//! assert_eq!(trace.gpu(), Some("gfx10.3"));
//! assert!(matches!(trace.events()[1], TraceEvent::Submit { queue: 0, size_dw: 1, .. }));
//! # Ok::<(), pm4core::trace::TraceError>(())
//! ```

mod error;
mod event;
pub mod format;
mod reader;
mod rules;
mod writer;

pub use error::{TraceError, TraceRule};
pub use event::{ChunkSummary, PayloadRange, TraceEvent};
pub use format::Tag;
pub use reader::Trace;
pub use writer::TraceWriter;
