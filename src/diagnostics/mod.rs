//! Diagnostics built on the replay: the register state at any packet with
//! the packet that last wrote each register ([`state`]), stream statistics
//! ([`stats`]) and hang forensics ([`forensics`]).
//!
//! They all watch a replay packet by packet through a [`ReplayObserver`]
//! ([`crate::replay::replay_observed`]): the observer sees each packet right
//! after it ran, with its queue's processor and the guest memory. A plain
//! replay has no observer and pays nothing for any of this.

pub mod forensics;
pub mod state;
pub mod stats;
pub mod timeline;

use std::ops::ControlFlow;

use crate::backend::QueueId;
use crate::memory::GuestMemory;
use crate::packet::{Header, PacketLocation, PacketType};
use crate::processor::{Processor, SuspendReason};
use crate::regs::{self, RegisterFile};

/// A packet a queue ran (executed, or skipped by predication), as an
/// observer sees it.
///
/// ```
/// use pm4core::backend::QueueId;
/// use pm4core::diagnostics::ExecutedPacket;
/// use pm4core::packet::{Header, PacketLocation};
///
/// let nop = ExecutedPacket {
///     queue: QueueId::GRAPHICS,
///     index: 0,
///     header: Header(0xC000_1000),
///     location: PacketLocation { buffer: 0x1000, buffer_size_dw: 2, offset_dw: 0 },
/// };
/// assert_eq!(nop.address(), 0x1000);
/// assert_eq!(nop.name(), "NOP");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecutedPacket {
    pub queue: QueueId,
    /// Packets the queue ran before this one (0-based, every packet decoded
    /// counts, as in the replay summary's packet counts).
    pub index: u64,
    pub header: Header,
    pub location: PacketLocation,
}

impl ExecutedPacket {
    /// Guest address of the header.
    pub fn address(&self) -> u64 {
        self.location.address()
    }

    /// Opcode name (`UNKNOWN_0xNN` for an opcode the map does not name),
    /// or `TYPE0` / `TYPE2`.
    pub fn name(&self) -> String {
        crate::disasm::packet_name(self.header)
    }
}

/// Watches a replay packet by packet ([`crate::replay::replay_observed`]).
///
/// ```
/// use std::ops::ControlFlow;
/// use pm4core::diagnostics::{ExecutedPacket, ReplayObserver};
/// use pm4core::memory::GuestMemory;
/// use pm4core::processor::Processor;
/// use pm4core::replay::{replay_observed, ReplayOptions};
/// use pm4core::trace::Trace;
///
/// /// Counts the packets of the graphics queue.
/// struct Count(u64);
/// impl ReplayObserver for Count {
///     fn packet(&mut self, p: &ExecutedPacket, _: &Processor, _: &dyn GuestMemory) -> ControlFlow<()> {
///         self.0 += u64::from(p.queue.is_graphics());
///         ControlFlow::Continue(())
///     }
/// }
/// let trace = Trace::read_file(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/corpus/ibs.pm4t"))).unwrap();
/// let mut count = Count(0);
/// let outcome = replay_observed(&trace, &ReplayOptions::default(), &mut |_| {}, Some(&mut count));
/// assert_eq!(count.0, outcome.summary.packets.total);
/// ```
pub trait ReplayObserver {
    /// Called right after `packet` ran, with its queue's processor and the
    /// guest memory. `Break` stops the replay there.
    fn packet(&mut self, packet: &ExecutedPacket, processor: &Processor, memory: &dyn GuestMemory) -> ControlFlow<()>;

    /// Called once before the first submission runs, with the memory as the
    /// trace maps it (after `--patch`).
    #[allow(unused_variables)]
    fn start(&mut self, memory: &dyn GuestMemory) {}

    /// The trace's `WRIT` chunk `chunk` writes `len` bytes at `address`
    /// (applied before the next packet runs).
    #[allow(unused_variables)]
    fn host_write(&mut self, chunk: u32, address: u64, len: u64) {}

    /// True to be told when a queue suspends ([`ReplayObserver::suspended`]);
    /// it costs a look at every queue with work after each packet.
    fn wants_suspensions(&self) -> bool {
        false
    }

    /// `queue` suspended on the packet at `packet` (called once per wait,
    /// not again while it stays suspended), with the memory then.
    #[allow(unused_variables)]
    fn suspended(&mut self, queue: QueueId, reason: &SuspendReason, packet: u64, memory: &dyn GuestMemory) {}
}

/// One register write of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RegisterWrite {
    pub register: u32,
    pub value: u32,
    /// The register held `value` already.
    pub redundant: bool,
}

/// A queue's registers as of its last observed packet, to tell what each
/// packet wrote.
#[derive(Default)]
pub(crate) struct RegisterShadow {
    before: RegisterFile,
    /// Scratch: the packet's dwords.
    words: Vec<u32>,
}

impl RegisterShadow {
    /// The registers `packet` wrote: every register of a SET_*_REG run or a
    /// type-0 packet (also when it stored the value already there, which is
    /// then `redundant`), and every register whose value any other packet
    /// changed (LOAD_*_REG, CLEAR_STATE, RMW, …). The shadow then holds the
    /// registers after the packet.
    pub(crate) fn packet_writes(
        &mut self,
        packet: &ExecutedPacket,
        registers: &RegisterFile,
        memory: &dyn GuestMemory,
        out: &mut Vec<RegisterWrite>,
    ) {
        out.clear();
        let header = packet.header;
        let run = match header.packet_type() {
            PacketType::Type0 | PacketType::Type1 => Some((header.type0_base(), regs::space::END, 0)),
            PacketType::Type3 => match header.opcode() {
                op if op.writes_register_run() => op.register_space().map(|space| (space.base, space.size, 1)),
                _ => None,
            },
            PacketType::Type2 => None,
        };
        if let (Some((base, size, offset_dwords)), Some(length)) = (run, header.length_dw()) {
            self.words.clear();
            self.words.resize(length as usize, 0);
            if memory.read_dwords(packet.address(), &mut self.words).is_ok() {
                let body = self.words.get(1..).unwrap_or(&[]);
                let (first, values) = if offset_dwords == 1 {
                    match body.split_first() {
                        Some((first, values)) => (first & 0xFFFF, values),
                        None => (0, &[][..]),
                    }
                } else {
                    (0, body)
                };
                let available = size.saturating_sub(first) as usize;
                for (i, &value) in values.iter().take(available).enumerate() {
                    let register = base.wrapping_add(first).wrapping_add(i as u32);
                    if register < regs::space::END {
                        let redundant = self.before.get(register) == value;
                        out.push(RegisterWrite { register, value, redundant });
                    }
                }
            }
        }
        let statically = out.len();
        let page = regs::REGISTER_PAGE as u32;
        for start in (0..regs::space::END).step_by(regs::REGISTER_PAGE) {
            let now = registers.range(start, page);
            let was = self.before.range(start, page);
            if std::ptr::eq(now, was) || now == was {
                continue;
            }
            for (i, (n, w)) in now.iter().zip(was).enumerate() {
                let register = start + i as u32;
                if n != w && !out.iter().take(statically).any(|x| x.register == register) {
                    out.push(RegisterWrite { register, value: *n, redundant: false });
                }
            }
            for (slot, value) in self.before.range_mut(start, page).iter_mut().zip(now) {
                *slot = *value;
            }
        }
    }
}

/// The register database's name of `register`, or `REG_0xNNNN`.
pub(crate) fn register_name(family: regs::db::GpuFamily, register: u32) -> String {
    regs::db::register(family, register).map_or_else(|| format!("REG_{register:#06x}"), |r| r.name.to_owned())
}

/// `ControlFlow::Continue`, for observers.
pub(crate) const GO_ON: ControlFlow<()> = ControlFlow::Continue(());
