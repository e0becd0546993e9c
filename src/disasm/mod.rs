//! The disassembler: a static walk of PM4 command streams.
//!
//! A [`Disassembler`] reads either a trace (its memory, and every `SUBM` in
//! trace order, each walked against the memory as it is at that point of the
//! sequence: regions mapped and host writes applied so far) or a raw file of
//! little-endian dwords placed at a base address (walked as one stream).
//!
//! The walk is static, as Mesa's IB parser walks: every INDIRECT_BUFFER (and
//! INDIRECT_BUFFER_CONST) is followed each time it is referenced, one level
//! deeper; a CHAIN continues at the same level and ends the buffer it sits
//! in. Headers, lengths and bodies come from [`crate::packet`] (the same
//! rules and typed decoders the processor executes) and register names,
//! bitfields and enum names from [`crate::regs::db`].
//!
//! The walk never panics and always ends: nesting is limited
//! ([`DisasmOptions::max_depth`]), a buffer already being walked is not
//! entered again (cycles), and a packet budget
//! ([`DisasmOptions::max_packets`]) bounds the total work. Unreadable
//! memory, truncated packets, unmapped IB targets and cycles are reported as
//! [`Diagnostic`]s next to the packets, never as errors.
//!
//! Outputs:
//! - [`Disassembler::write_text`]: one line per packet (address, raw dwords
//!   wrapped onto continuation lines, opcode, decoded fields; register
//!   writes on their own lines), indented by IB depth;
//! - [`Disassembler::listing`]: the same as data ([`Listing`], `Serialize`
//!   with the `serde` feature), with `by_opcode` counts over the whole walk;
//! - [`Disassembler::write_source`]: assembler source for [`crate::asm`]
//!   that assembles back into a trace with the same memory and the same
//!   events (see [`source`]).
//!
//! ```
//! use pm4core::disasm::{DisasmOptions, Disassembler};
//!
//! let words: Vec<u8> = [0xC001_7600u32, 0x0000_0008, 0x0000_0100, 0xFFFF_1000]
//!     .iter()
//!     .flat_map(|d| d.to_le_bytes())
//!     .collect();
//! let dis = Disassembler::for_raw(&words, 0x1000, DisasmOptions::default())?;
//! let listing = dis.listing();
//! assert_eq!(listing.by_opcode["SET_SH_REG"], 1);
//! assert_eq!(listing.by_opcode["NOP"], 1);
//! assert_eq!(listing.packets[0].fields[0].name, "SPI_SHADER_PGM_LO_PS");
//! # Ok::<(), pm4core::disasm::DisasmError>(())
//! ```

mod fields;
pub mod source;
mod text;

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::sync::Arc;

pub use fields::{decode_fields, event_name, packet_name, packet_name_on, register_base, Field};

use crate::memory::{GuestMemory, SparseMemory, ADDRESS_SPACE_END};
use crate::packet::body::IndirectBufferForm;
use crate::packet::private::PrivatePackets;
use crate::packet::reader::{DwordSource, FrameError, FrameErrorKind, MemorySource, PacketReader};
use crate::packet::{Header, Opcode, Packet, PacketLocation, PacketType};
use crate::regs::db::GpuFamily;
use crate::trace::{Trace, TraceEvent};

/// The deepest IB nesting any walk follows.
pub const MAX_DEPTH: u32 = 64;

/// How the disassembler walks and prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisasmOptions {
    /// Register database for names and bitfields; `None` takes the trace's
    /// `INFO gpu` when it names a known family, else gfx10.3.
    pub family: Option<GpuFamily>,
    /// Follow INDIRECT_BUFFER / INDIRECT_BUFFER_CONST packets.
    pub follow_ibs: bool,
    /// Deepest IB nesting followed (the submitted buffer is depth 0; at
    /// most [`MAX_DEPTH`] whatever this says).
    pub max_depth: u32,
    /// Packets walked in total, over every submission, before the walk
    /// stops ([`WalkSummary::complete`] false): at least the input's own
    /// dwords ([`Disassembler::walk_budget`]), so only a walk that re-enters
    /// buffers (IBs fanned out many times) meets it. Bounds the work and the
    /// output of any input (`pm4 disasm --max-packets`).
    pub max_packets: u64,
    /// Raw dwords per text line; longer packets wrap onto continuation lines.
    pub dwords_per_line: usize,
    /// The embedder's private packets: a packet the table matches is named
    /// by its entry (as `ProcessorConfig::private_packets` runs it), its
    /// body not decoded.
    pub private_packets: PrivatePackets,
}

impl Default for DisasmOptions {
    fn default() -> Self {
        DisasmOptions {
            family: None,
            follow_ibs: true,
            max_depth: 16,
            max_packets: 1 << 20,
            dwords_per_line: 8,
            private_packets: PrivatePackets::default(),
        }
    }
}

/// Why a [`Disassembler`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DisasmError {
    /// A raw file's base address is not dword aligned.
    #[error("base address {0:#x} is not 4-byte aligned")]
    Misaligned(u64),
    /// A raw file does not fit below the end of the 48-bit address space.
    #[error("{len} bytes at {base:#x} run past the 48-bit address space")]
    OutOfRange { base: u64, len: u64 },
}

/// One submitted command buffer (a `SUBM`, or the whole raw file).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Submission {
    /// Index among the walk's submissions, in trace order.
    pub index: usize,
    /// Queue: 0 graphics, 1..=56 compute.
    pub queue: u32,
    /// Address of the first dword.
    pub address: u64,
    /// Size in dwords.
    pub size_dw: u32,
}

/// One packet of the walk.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PacketRecord {
    /// Address of the header dword.
    pub address: u64,
    /// IB nesting depth (0 = the submitted buffer).
    pub depth: u32,
    /// Index of the submission being walked.
    pub submission: usize,
    /// Queue of that submission.
    pub queue: u32,
    /// The packet's dwords, header first (only those inside the buffer for a
    /// truncated packet); hex strings in JSON.
    #[cfg_attr(feature = "serde", serde(serialize_with = "hex_dwords"))]
    pub dwords: Vec<u32>,
    /// Opcode name (`SET_SH_REG`, `UNKNOWN_0x01`) or `TYPE0`/`TYPE1`/`TYPE2`.
    pub opcode: String,
    /// Header PREDICATE bit (type 3).
    pub predicate: bool,
    /// Header SHADER_TYPE bit (type 3): compute.
    pub compute: bool,
    /// Decoded fields, in order.
    pub fields: Vec<Field>,
    /// What is wrong with the packet (truncated, unreadable body, body too
    /// short for its layout), if anything.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub problem: Option<String>,
}

#[cfg(feature = "serde")]
#[allow(clippy::ptr_arg)]
fn hex_dwords<S: serde::Serializer>(dwords: &Vec<u32>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(dwords.iter().map(|d| format!("{d:08x}")))
}

/// Something the walk met that is not a packet: an unmapped IB target, a
/// cycle, the nesting limit, the packet budget, unreadable memory.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Diagnostic {
    /// The address concerned (a packet, or an IB target).
    pub address: u64,
    /// Depth of the buffer being walked.
    pub depth: u32,
    /// Submission being walked, if any.
    pub submission: Option<usize>,
    /// What happened (written, and serialised, as its sentence).
    pub message: DiagnosticKind,
}

/// What a walk met that is not a packet. `Display` writes the sentence the
/// text listing and `--json` show.
///
/// ```
/// use pm4core::disasm::DiagnosticKind;
///
/// let d = DiagnosticKind::IbCycle { target: 0x1000 };
/// assert_eq!(d.to_string(), "IB to 0x1000 closes a cycle; not followed");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// A trace's memory region could not be mapped.
    RegionNotMapped(String),
    /// A trace's host write could not be applied.
    HostWriteNotApplied(String),
    /// A raw file's last bytes do not make a dword.
    TrailingBytes { bytes: usize },
    /// A CHAIN leads back to a buffer of the walk.
    ChainCycle { target: u64 },
    /// A CHAIN's target is not mapped.
    ChainUnmapped { target: u64, size_dw: u32 },
    /// The packet budget ran out.
    BudgetExhausted { budget: u64 },
    /// A header cannot be read.
    UnreadableHeader(String),
    /// Dwords after a CHAIN, never walked.
    AfterChain { dwords: u32 },
    /// An IB deeper than the nesting limit.
    NestingLimit { target: u64, limit: u32 },
    /// An IB leads back to a buffer of the walk.
    IbCycle { target: u64 },
    /// An IB's target is not mapped.
    IbUnmapped { target: u64, size_dw: u32 },
}

impl std::fmt::Display for DiagnosticKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::RegionNotMapped(e) => write!(f, "region not mapped: {e}"),
            Self::HostWriteNotApplied(e) => write!(f, "host write not applied: {e}"),
            Self::TrailingBytes { bytes } => write!(f, "{bytes} trailing bytes (less than a dword) not walked"),
            Self::ChainCycle { target } => write!(f, "CHAIN to {target:#x} closes a cycle; not followed"),
            Self::ChainUnmapped { target, size_dw } => {
                write!(f, "CHAIN target {target:#x} ({size_dw} dwords) is unmapped")
            }
            Self::BudgetExhausted { budget } => write!(f, "packet budget of {budget} exhausted; walk stopped"),
            Self::UnreadableHeader(e) => write!(f, "cannot read a packet header: {e}"),
            Self::AfterChain { dwords } => write!(f, "{dwords} dwords after the CHAIN are not walked"),
            Self::NestingLimit { target, limit } => {
                write!(f, "IB to {target:#x} not followed: nesting limit {limit} reached")
            }
            Self::IbCycle { target } => write!(f, "IB to {target:#x} closes a cycle; not followed"),
            Self::IbUnmapped { target, size_dw } => write!(f, "IB target {target:#x} ({size_dw} dwords) is unmapped"),
        }
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for DiagnosticKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One step of a walk, in order.
#[derive(Clone, Copy, Debug)]
pub enum WalkEvent<'a> {
    /// A submission starts.
    Submission(&'a Submission),
    /// A packet.
    Packet(&'a PacketRecord),
    /// A diagnostic.
    Diagnostic(&'a Diagnostic),
}

/// Totals of a walk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WalkSummary {
    /// Packets per opcode name (`NOP` includes the one-dword pads, `TYPE2`
    /// the type-2 fillers), over the whole static walk.
    pub by_opcode: BTreeMap<String, u64>,
    /// Packets walked.
    pub packets: u64,
    /// Submissions walked.
    pub submissions: usize,
    /// Diagnostics reported.
    pub diagnostics: usize,
    /// Packets listed with a problem (truncated, unreadable body, body too
    /// short, type-1 header): the `!` lines under packets.
    pub problems: usize,
    /// False when the packet budget stopped the walk (a walk of malformed
    /// packets is complete: they are counted in `problems`).
    pub complete: bool,
}

/// A whole walk as data (the `--json` output).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Listing {
    /// Register database used (`gfx10.3`, `gfx7`).
    pub gpu: String,
    /// Every submission walked.
    pub submissions: Vec<Submission>,
    /// Every packet, in walk order.
    pub packets: Vec<PacketRecord>,
    /// Every diagnostic, in walk order.
    pub diagnostics: Vec<Diagnostic>,
    /// Packets per opcode name over the whole walk.
    pub by_opcode: BTreeMap<String, u64>,
    /// Packets with a `problem`.
    pub problems: usize,
    /// False when the packet budget stopped the walk (a walk of malformed
    /// packets is complete: they are counted in `problems`).
    pub complete: bool,
}

impl Listing {
    /// The listing as pretty-printed JSON.
    #[cfg(feature = "cli")]
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }
}

enum Input<'a> {
    Trace(&'a Trace),
    /// The file's bytes are shared with `memory`, not copied.
    Raw {
        memory: SparseMemory,
        base: u64,
        size_dw: u32,
        tail: usize,
        bytes: Arc<[u8]>,
    },
}

/// A disassembler over a trace or a raw dword file.
pub struct Disassembler<'a> {
    input: Input<'a>,
    options: DisasmOptions,
    family: GpuFamily,
}

impl<'a> Disassembler<'a> {
    /// Walks every submission of `trace`, in trace order.
    pub fn for_trace(trace: &'a Trace, options: DisasmOptions) -> Self {
        let family = options.family.or_else(|| trace.gpu_family()).unwrap_or_default();
        Disassembler { input: Input::Trace(trace), options, family }
    }

    /// Walks `bytes` (little-endian dwords; 1 to 3 trailing bytes are not
    /// walked) placed at `base` as one graphics-queue stream.
    pub fn for_raw(bytes: &'a [u8], base: u64, options: DisasmOptions) -> Result<Self, DisasmError> {
        Self::for_raw_shared(Arc::from(bytes), base, options)
    }

    /// [`Disassembler::for_raw`] over bytes the caller already holds in an
    /// `Arc` (a file read once): they are walked where they are, not copied.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pm4core::disasm::{DisasmOptions, Disassembler};
    ///
    /// let bytes: Arc<[u8]> = 0xFFFF_1000u32.to_le_bytes().into();
    /// let dis = Disassembler::for_raw_shared(bytes, 0x1000, DisasmOptions::default())?;
    /// assert_eq!(dis.by_opcode()["NOP"], 1);
    /// # Ok::<(), pm4core::disasm::DisasmError>(())
    /// ```
    pub fn for_raw_shared(bytes: Arc<[u8]>, base: u64, options: DisasmOptions) -> Result<Self, DisasmError> {
        if base % 4 != 0 {
            return Err(DisasmError::Misaligned(base));
        }
        let len = bytes.len() as u64;
        if base.checked_add(len).is_none_or(|end| end > ADDRESS_SPACE_END) {
            return Err(DisasmError::OutOfRange { base, len });
        }
        let whole = bytes.len() / 4 * 4;
        let tail = bytes.len() - whole;
        let memory = SparseMemory::new();
        memory.map_shared(base, Arc::clone(&bytes), 0, whole).map_err(|_| DisasmError::OutOfRange { base, len })?;
        let size_dw = u32::try_from(whole / 4).unwrap_or(u32::MAX);
        let family = options.family.unwrap_or_default();
        Ok(Disassembler { input: Input::Raw { memory, base, size_dw, tail, bytes }, options, family })
    }

    /// The register database in use.
    pub fn family(&self) -> GpuFamily {
        self.family
    }

    /// The options.
    pub fn options(&self) -> &DisasmOptions {
        &self.options
    }

    /// Packets the walk may visit in total: [`DisasmOptions::max_packets`],
    /// or the input's dwords if there are more (a listing of every dword the
    /// input holds is never cut short).
    pub fn walk_budget(&self) -> u64 {
        let input_dwords = match &self.input {
            Input::Trace(trace) => trace.bytes().len() as u64 / 4,
            Input::Raw { bytes, .. } => bytes.len() as u64 / 4,
        };
        self.options.max_packets.max(input_dwords)
    }

    /// Walks everything, handing each step to `sink`, and returns the totals.
    pub fn walk(&self, sink: &mut dyn FnMut(WalkEvent<'_>)) -> WalkSummary {
        self.run(true, sink)
    }

    /// The addresses of every packet the walk meets (each once).
    pub fn packet_addresses(&self) -> HashSet<u64> {
        let mut set = HashSet::new();
        self.run(false, &mut |event| {
            if let WalkEvent::Packet(p) = event {
                set.insert(p.address);
            }
        });
        set
    }

    /// The opcode counts of the whole static walk.
    pub fn by_opcode(&self) -> BTreeMap<String, u64> {
        self.run(false, &mut |_| {}).by_opcode
    }

    /// The whole walk as data.
    pub fn listing(&self) -> Listing {
        let mut listing = Listing { gpu: self.family.to_string(), ..Listing::default() };
        let summary = self.walk(&mut |event| match event {
            WalkEvent::Submission(s) => listing.submissions.push(s.clone()),
            WalkEvent::Packet(p) => listing.packets.push(p.clone()),
            WalkEvent::Diagnostic(d) => listing.diagnostics.push(d.clone()),
        });
        listing.by_opcode = summary.by_opcode;
        listing.problems = summary.problems;
        listing.complete = summary.complete;
        listing
    }

    /// Writes the text listing: a comment line per submission, then one
    /// line per packet (see the module docs), and diagnostics as `!` lines.
    pub fn write_text(&self, out: &mut dyn io::Write) -> io::Result<WalkSummary> {
        let mut writer = text::TextWriter::new(out, self.options.dwords_per_line, self.family);
        let summary = self.run_with(Sink::Text(&mut writer));
        writer.finish().map(|()| summary)
    }

    /// Writes `by_opcode` counts, one `NAME count` line each, as comments.
    pub fn write_summary(summary: &WalkSummary, out: &mut dyn io::Write) -> io::Result<()> {
        let s = |n: u64| if n == 1 { "" } else { "s" };
        writeln!(
            out,
            "; {} packet{} in {} submission{}, {} diagnostic{}, {} packet{} with a problem{}",
            summary.packets,
            s(summary.packets),
            summary.submissions,
            s(summary.submissions as u64),
            summary.diagnostics,
            s(summary.diagnostics as u64),
            summary.problems,
            s(summary.problems as u64),
            if summary.complete { "" } else { " (walk stopped by the packet budget)" }
        )?;
        for (name, count) in &summary.by_opcode {
            writeln!(out, ";   {name:<32} {count}")?;
        }
        Ok(())
    }

    /// Writes assembler source that [`crate::asm::assemble`] turns back into
    /// a trace with the same memory and events (see [`source`]).
    pub fn write_source(&self, out: &mut dyn io::Write) -> io::Result<()> {
        source::write_source(self, out)
    }

    fn run(&self, decode: bool, sink: &mut dyn FnMut(WalkEvent<'_>)) -> WalkSummary {
        self.run_with(Sink::Events { decode, sink })
    }

    fn run_with(&self, sink: Sink<'_, '_>) -> WalkSummary {
        let mut walker = Walker {
            family: self.family,
            options: &self.options,
            budget: self.walk_budget(),
            remaining: self.walk_budget(),
            exhausted: false,
            submission: None,
            queue: 0,
            stack: Vec::new(),
            summary: WalkSummary { complete: true, ..WalkSummary::default() },
            opcode_counts: [0; 256],
            type_counts: [0; 3],
            dwords: Vec::new(),
            sink,
        };
        match &self.input {
            Input::Trace(trace) => {
                let mut memory = SparseMemory::new();
                for event in trace.events() {
                    match *event {
                        TraceEvent::MemRegion { address, .. } | TraceEvent::ZeroRegion { address, .. } => {
                            if let Err(e) = trace.map_region(&memory, event) {
                                walker.diagnostic(address, 0, DiagnosticKind::RegionNotMapped(e.to_string()));
                            }
                        }
                        TraceEvent::HostWrite { address, .. } => {
                            if let Err(e) = trace.apply_host_write(&mut memory, event) {
                                walker.diagnostic(address, 0, DiagnosticKind::HostWriteNotApplied(e.to_string()));
                            }
                        }
                        TraceEvent::Submit { queue, address, size_dw, .. } => {
                            walker.submit(&memory, queue, address, size_dw);
                        }
                        _ => {}
                    }
                    if walker.exhausted {
                        break;
                    }
                }
            }
            Input::Raw { memory, base, size_dw, tail, .. } => {
                walker.submit(memory, 0, *base, *size_dw);
                if *tail > 0 {
                    let end = base.wrapping_add(u64::from(*size_dw) * 4);
                    walker.diagnostic(end, 0, DiagnosticKind::TrailingBytes { bytes: *tail });
                }
            }
        }
        walker.finish()
    }

    /// The raw input's bytes and base, if this disassembler reads a raw file.
    pub(crate) fn raw_input(&self) -> Option<(&[u8], u64)> {
        match &self.input {
            Input::Raw { bytes, base, .. } => Some((bytes, *base)),
            Input::Trace(_) => None,
        }
    }

    /// The trace, if this disassembler reads one.
    pub(crate) fn trace(&self) -> Option<&'a Trace> {
        match &self.input {
            Input::Trace(trace) => Some(trace),
            Input::Raw { .. } => None,
        }
    }
}

/// Where a walk's steps go.
enum Sink<'s, 'o> {
    /// Each step as a [`WalkEvent`]; packet fields decoded when `decode`.
    Events { decode: bool, sink: &'s mut dyn FnMut(WalkEvent<'_>) },
    /// Straight to the text listing.
    Text(&'s mut text::TextWriter<'o>),
}

struct Walker<'w, 's, 'o> {
    family: GpuFamily,
    options: &'w DisasmOptions,
    budget: u64,
    remaining: u64,
    exhausted: bool,
    submission: Option<usize>,
    queue: u32,
    /// Buffers being walked (cycle detection).
    stack: Vec<u64>,
    summary: WalkSummary,
    /// Type-3 packets by opcode, and type-0/1/2 packets: `summary.by_opcode`
    /// once the walk ends.
    opcode_counts: [u64; 256],
    type_counts: [u64; 3],
    /// The current packet's dwords (reused from packet to packet).
    dwords: Vec<u32>,
    sink: Sink<'s, 'o>,
}

/// What a packet asks the walk to follow.
enum Follow {
    None,
    Calls(Vec<(u64, u32)>),
    Chain(u64, u32),
}

impl Walker<'_, '_, '_> {
    /// The totals, with the packet counts by name.
    fn finish(mut self) -> WalkSummary {
        for (opcode, &n) in self.opcode_counts.iter().enumerate() {
            if n > 0 {
                self.summary.by_opcode.insert(fields::opcode_name_on(self.family, Opcode(opcode as u8)), n);
            }
        }
        for (name, &n) in ["TYPE0", "TYPE1", "TYPE2"].iter().zip(&self.type_counts) {
            if n > 0 {
                self.summary.by_opcode.insert((*name).to_owned(), n);
            }
        }
        self.summary
    }

    fn diagnostic(&mut self, address: u64, depth: u32, message: DiagnosticKind) {
        self.summary.diagnostics += 1;
        let d = Diagnostic { address, depth, submission: self.submission, message };
        match &mut self.sink {
            Sink::Events { sink, .. } => sink(WalkEvent::Diagnostic(&d)),
            Sink::Text(text) => text.diagnostic(&d),
        }
    }

    fn submit(&mut self, memory: &dyn GuestMemory, queue: u32, address: u64, size_dw: u32) {
        let index = self.summary.submissions;
        self.summary.submissions += 1;
        self.submission = Some(index);
        self.queue = queue;
        let s = Submission { index, queue, address, size_dw };
        match &mut self.sink {
            Sink::Events { sink, .. } => sink(WalkEvent::Submission(&s)),
            Sink::Text(text) => text.submission(&s),
        }
        self.walk_level(memory, address, size_dw, 0);
    }

    /// Walks a buffer and whatever it chains to, at one depth.
    fn walk_level(&mut self, memory: &dyn GuestMemory, mut address: u64, mut size_dw: u32, depth: u32) {
        let mut hops: HashSet<u64> = HashSet::new();
        loop {
            self.stack.push(address);
            let next = self.walk_buffer(memory, address, size_dw, depth);
            self.stack.pop();
            hops.insert(address);
            let Some((target, size)) = next else { break };
            if hops.contains(&target) || self.stack.contains(&target) {
                self.diagnostic(target, depth, DiagnosticKind::ChainCycle { target });
                break;
            }
            if !memory.is_mapped(target, 4) {
                self.diagnostic(target, depth, DiagnosticKind::ChainUnmapped { target, size_dw: size });
                break;
            }
            address = target;
            size_dw = size;
        }
    }

    /// Walks one buffer; returns the CHAIN target that ends it, if any.
    fn walk_buffer(&mut self, memory: &dyn GuestMemory, base: u64, size_dw: u32, depth: u32) -> Option<(u64, u32)> {
        let mut reader = PacketReader::new(base, size_dw);
        let mut source = MemorySource::new(memory);
        while !reader.is_at_end() {
            if self.remaining == 0 {
                if !self.exhausted {
                    self.exhausted = true;
                    self.summary.complete = false;
                    let budget = self.budget;
                    self.diagnostic(base, depth, DiagnosticKind::BudgetExhausted { budget });
                }
                return None;
            }
            let location = reader.location();
            let address = location.address();
            let available = reader.remaining_dw();
            // A packet that cannot be framed is still shown: a type-1
            // header as one dword, an overrun with the dwords the buffer has.
            let (header, full_len, mut problem) = match reader.frame(&mut source) {
                Ok(frame) => (frame.header.0, frame.length_dw, None),
                Err(FrameError { kind: FrameErrorKind::Unreadable(e), .. }) => {
                    self.diagnostic(address, depth, DiagnosticKind::UnreadableHeader(e.to_string()));
                    return None;
                }
                Err(FrameError { kind: FrameErrorKind::Type1 { header }, .. }) => {
                    (header, 1, Some("type-1 header (not defined for gfx7/gfx10.3 streams)".to_owned()))
                }
                Err(FrameError { kind: FrameErrorKind::Overrun { header, length_dw, remaining_dw }, .. }) => (
                    header,
                    length_dw,
                    Some(format!("truncated: the packet needs {length_dw} dwords, the buffer has {remaining_dw} left")),
                ),
            };
            let take = full_len.min(available).max(1);
            let mut dwords = std::mem::take(&mut self.dwords);
            dwords.clear();
            dwords.push(header);
            if take > 1 {
                match source.dwords(address.wrapping_add(4), take - 1, available - 1) {
                    Ok(rest) => dwords.extend_from_slice(rest),
                    Err(e) => problem = Some(format!("body unreadable: {e}")),
                }
            }
            let follow = match &problem {
                None => follows(
                    &Packet { header: Header(header), body: dwords.get(1..).unwrap_or(&[]), location },
                    self.options.follow_ibs,
                ),
                Some(_) => Follow::None,
            };
            self.remaining -= 1;
            let short = dwords.len() == 1 && full_len > 1;
            self.emit_packet(address, depth, &dwords, location, problem.as_deref());
            self.dwords = dwords;
            if problem.is_some() && full_len > available {
                return None;
            }
            if problem.is_some() && short {
                return None;
            }
            reader.advance(full_len);
            match follow {
                Follow::None => {}
                Follow::Calls(targets) => {
                    for (target, size) in targets {
                        self.call(memory, address, target, size, depth);
                        if self.exhausted {
                            return None;
                        }
                    }
                }
                Follow::Chain(target, size) => {
                    if !reader.is_at_end() {
                        let rest = reader.remaining_dw();
                        self.diagnostic(address, depth, DiagnosticKind::AfterChain { dwords: rest });
                    }
                    return Some((target, size));
                }
            }
        }
        None
    }

    fn call(&mut self, memory: &dyn GuestMemory, from: u64, target: u64, size: u32, depth: u32) {
        let limit = self.options.max_depth.min(MAX_DEPTH);
        if depth >= limit {
            self.diagnostic(from, depth, DiagnosticKind::NestingLimit { target, limit });
        } else if self.stack.contains(&target) {
            self.diagnostic(from, depth, DiagnosticKind::IbCycle { target });
        } else if !memory.is_mapped(target, 4) {
            self.diagnostic(target, depth + 1, DiagnosticKind::IbUnmapped { target, size_dw: size });
        } else {
            self.walk_level(memory, target, size, depth + 1);
        }
    }

    fn emit_packet(
        &mut self,
        address: u64,
        depth: u32,
        dwords: &[u32],
        location: PacketLocation,
        problem: Option<&str>,
    ) {
        let header = Header(dwords.first().copied().unwrap_or(0));
        self.summary.packets += 1;
        self.summary.problems += usize::from(problem.is_some());
        let count = match header.packet_type() {
            PacketType::Type3 => self.opcode_counts.get_mut(usize::from(header.opcode().0)),
            PacketType::Type0 => self.type_counts.get_mut(0),
            PacketType::Type1 => self.type_counts.get_mut(1),
            PacketType::Type2 => self.type_counts.get_mut(2),
        };
        if let Some(count) = count {
            *count += 1;
        }
        let body = dwords.get(1..).unwrap_or(&[]);
        let queue = crate::backend::QueueId(self.queue);
        let private = crate::processor::private_entry(&self.options.private_packets, queue, header, body);
        let private = private.filter(|_| problem.is_none()).map(|entry| entry.name());
        let (decode, sink) = match &mut self.sink {
            Sink::Text(text) => return text.packet(address, depth, dwords, location, problem, private),
            Sink::Events { decode, sink } => (*decode, sink),
        };
        let mut problem = problem.map(str::to_owned);
        let name = private.map_or_else(|| packet_name_on(self.family, header), str::to_owned);
        let type3 = header.packet_type() == PacketType::Type3;
        let mut fields = Vec::new();
        if decode && problem.is_none() && private.is_none() {
            let body = dwords.get(1..).unwrap_or(&[]);
            let packet = Packet { header, body, location };
            match decode_fields(self.family, &packet) {
                Ok(f) => fields = f,
                Err(e) => problem = Some(e.to_string()),
            }
        }
        let record = PacketRecord {
            address,
            depth,
            submission: self.submission.unwrap_or(0),
            queue: self.queue,
            dwords: dwords.to_vec(),
            opcode: name,
            predicate: type3 && header.predicate(),
            compute: type3 && header.shader_type_compute(),
            fields,
            problem,
        };
        sink(WalkEvent::Packet(&record));
    }
}

/// The buffers a complete packet makes the walk enter.
fn follows(p: &Packet<'_>, follow_ibs: bool) -> Follow {
    if !follow_ibs || p.header.packet_type() != PacketType::Type3 || p.header.length_dw() == Some(1) {
        return Follow::None;
    }
    let op = p.opcode();
    if op != Opcode::INDIRECT_BUFFER && op != Opcode::INDIRECT_BUFFER_CONST {
        return Follow::None;
    }
    match IndirectBufferForm::decode(op, p.body) {
        Ok(IndirectBufferForm::Conditional(c)) => Follow::Calls(c.targets().collect()),
        Ok(IndirectBufferForm::Plain(ib)) if ib.size_dw == 0 => Follow::None,
        Ok(IndirectBufferForm::Plain(ib)) if ib.chain => Follow::Chain(ib.address, ib.size_dw),
        Ok(IndirectBufferForm::Plain(ib)) => Follow::Calls(vec![(ib.address, ib.size_dw)]),
        Err(_) => Follow::None,
    }
}

fn queue_name(queue: u32) -> String {
    crate::backend::QueueId(queue).to_string()
}
