//! Embedder-private packets: the encodings an emulator puts in its own
//! command buffers for itself (KytyPS5's NOP sub-operations in header bits
//! \[7:2\], prosper's `R_*` NOPs signed in their first body dword,
//! SharpEmu's "agc-nop", or opcodes no GPU knows), told apart by a table the
//! embedder registers ([`PrivatePackets`], through
//! `ProcessorConfig::private_packets` and `DisasmOptions::private_packets`).
//!
//! An entry ([`PrivatePacketEntry`]) has a name, a code of the embedder's
//! choosing, and a match: `header & header_mask == header_value`, plus
//! optionally `body[0] & mask == value` on the first body dword. The first
//! entry that matches wins. The processor asks the table only for NOPs and
//! for packets it has no handler for (never for a one-dword pad or a
//! register write), and hands a match to
//! `Backend::private_packet` ([`PrivatePacket`]): not as a NOP, not as an
//! unknown packet. The payload is the body after the dwords the entry
//! matched (after the first body dword when it matches on it, else the whole
//! body). The disassembler names a matched packet by its entry.
//!
//! ```
//! use pm4core::backend::{Backend, QueueId};
//! use pm4core::memory::{GuestMemory, SparseMemory};
//! use pm4core::packet::private::{PrivatePacket, PrivatePacketEntry, PrivatePackets};
//! use pm4core::processor::{Env, ProcessStatus, Processor, ProcessorConfig};
//! use pm4core::shader::ShaderRegistry;
//!
//! // An emulator's own NOP: a 6-bit code in header bits [7:2] (here 0x17, its flip).
//! let flip = PrivatePacketEntry::new("EMU_FLIP", 0x17).header(0xC000_FFFC, 0xC000_1000 | 0x17 << 2);
//! let config = ProcessorConfig { private_packets: PrivatePackets::new([flip]), ..ProcessorConfig::default() };
//!
//! #[derive(Default)]
//! struct Renderer(Vec<(String, u32, Vec<u32>)>);
//! impl Backend for Renderer {
//!     fn private_packet(&mut self, p: &PrivatePacket<'_>) {
//!         self.0.push((p.name.to_owned(), p.code, p.payload.to_vec()));
//!     }
//! }
//!
//! // The flip NOP with two payload dwords, then a plain NOP.
//! let words = [0xC001_1000 | 0x17 << 2, 7, 8, 0xC000_1000, 0];
//! let memory = SparseMemory::new();
//! memory.map_dwords(0x1000, &words).unwrap();
//! let (mut renderer, shaders) = (Renderer::default(), ShaderRegistry::new());
//! let mut processor = Processor::with_config(QueueId::GRAPHICS, config);
//! processor.submit(0x1000, words.len() as u32).unwrap();
//! let mut env = Env { memory: &memory, backend: &mut renderer, shaders: &shaders };
//! assert_eq!(processor.process(&mut env).unwrap(), ProcessStatus::Completed);
//! assert_eq!(renderer.0, [("EMU_FLIP".to_owned(), 0x17, vec![7, 8])]);
//! ```

use std::sync::Arc;

use super::{Header, PacketLocation};
use crate::backend::QueueId;

/// One private encoding: its name, the embedder's code for it, and how to
/// tell it (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrivatePacketEntry {
    name: String,
    code: u32,
    header_mask: u32,
    header_value: u32,
    first_dword: Option<(u32, u32)>,
}

impl PrivatePacketEntry {
    /// An entry named `name` with the embedder's `code`, matching every
    /// type-3 NOP until [`Self::header`] says otherwise.
    pub fn new(name: impl Into<String>, code: u32) -> Self {
        PrivatePacketEntry {
            name: name.into(),
            code,
            header_mask: 0xC000_FF00,
            header_value: 0xC000_1000,
            first_dword: None,
        }
    }

    /// Matches headers with `header & mask == value`.
    pub fn header(mut self, mask: u32, value: u32) -> Self {
        self.header_mask = mask;
        self.header_value = value & mask;
        self
    }

    /// Also requires a first body dword with `dword & mask == value` (the
    /// payload then starts after it).
    pub fn first_dword(mut self, mask: u32, value: u32) -> Self {
        self.first_dword = Some((mask, value & mask));
        self
    }

    /// The entry's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The embedder's code.
    pub fn code(&self) -> u32 {
        self.code
    }

    /// Whether a packet with `header` and `body` is this entry's.
    #[inline]
    pub fn matches(&self, header: Header, body: &[u32]) -> bool {
        header.0 & self.header_mask == self.header_value
            && match self.first_dword {
                None => true,
                Some((mask, value)) => body.first().is_some_and(|d| d & mask == value),
            }
    }

    /// The payload of a packet this entry matched: `body` after the first
    /// dword when the entry matches on it.
    pub fn payload<'b>(&self, body: &'b [u32]) -> &'b [u32] {
        match self.first_dword {
            Some(_) => body.get(1..).unwrap_or(&[]),
            None => body,
        }
    }
}

/// An embedder's table of private packets, shared (cloning it clones an
/// `Arc`): empty by default, when nothing is private.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrivatePackets {
    entries: Arc<[PrivatePacketEntry]>,
}

impl PrivatePackets {
    /// A table of `entries`, tried in order.
    pub fn new(entries: impl IntoIterator<Item = PrivatePacketEntry>) -> Self {
        PrivatePackets { entries: entries.into_iter().collect() }
    }

    /// The entries, in the order they are tried.
    pub fn entries(&self) -> &[PrivatePacketEntry] {
        &self.entries
    }

    /// True when the table has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The first entry that matches the packet with `header` and `body`.
    #[inline]
    pub fn classify(&self, header: Header, body: &[u32]) -> Option<&PrivatePacketEntry> {
        self.entries.iter().find(|e| e.matches(header, body))
    }
}

/// A private packet as the backend receives it
/// (`Backend::private_packet`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrivatePacket<'a> {
    /// The queue that ran it.
    pub queue: QueueId,
    /// Its entry's name.
    pub name: &'a str,
    /// Its entry's code.
    pub code: u32,
    /// Its header.
    pub header: Header,
    /// The body after the dwords its entry matched.
    pub payload: &'a [u32],
    /// Where it sits.
    pub location: PacketLocation,
}
