//! The stream: the packets of one engine's submission, buffer by buffer
//! off its IB stack ([`Pm4Execution`]), framed through the packet reader's
//! rule (`packet::reader::frame_length`) from the prefetch window.
//!
//! [`run_stream`] keeps the packet counts in locals for the run ([`Tally`])
//! and adds them to the stats when the stream stops. [`run_packets`] is two
//! loops: the outer one picks the current buffer off the IB stack; the
//! middle one frames the packet at the cursor (a frame error, a type-0 or
//! type-2 packet, or a predicated packet while predication skips is taken
//! here, one at a time, by [`skip_or_type0`]), makes sure the window holds
//! it whole, and hands the view of the window from there to the view loop
//! (`processor::view`), which walks type-3 packets while it holds them. The
//! cursor offset is kept in a local and written back when the view loop
//! leaves; a call, chain or skip changes the IB stack, and the outer loop
//! takes the buffer that is current then.

use super::execution::Pm4Execution;
use super::view::context::{Ctx, WatchedMemory};
use super::view::{run_view, View, ViewStop};
use super::window::PrefetchWindow;
use super::{opcodes, register_store, Engine, Env, Pm4Error, ProcessorState, SuspendReason};
use crate::backend::{Backend, QueueId};
use crate::packet::reader::{self, FrameError, FrameErrorKind};
use crate::packet::{Header, Opcode, PacketLocation, PacketType};

/// How one stream's run ended.
pub(super) enum StreamStatus {
    Completed,
    Suspended(SuspendReason),
    Yielded,
    /// The drawing engine launched or unblocked the constant engine.
    RunConstantEngine,
}

/// What the loop counts per packet, kept in locals while packets run and
/// added to [`super::ProcessorStats`] when the stream stops (handlers never
/// read these counters).
struct Tally<'a> {
    packets: u64,
    dwords: u64,
    type0: u64,
    type2: u64,
    /// `ProcessorStats::by_opcode`, taken out of the stats for the run.
    by_opcode: &'a mut [u64; 256],
    /// Whether the backend gets a call per packet.
    report: bool,
}

impl Tally<'_> {
    /// Counts a packet of any type.
    #[inline]
    fn any(&mut self, header: Header, length: u32) {
        self.packets += 1;
        self.dwords += u64::from(length);
        match header.packet_type() {
            PacketType::Type3 => self.by_opcode[usize::from(header.opcode().0)] += 1,
            PacketType::Type2 => self.type2 += 1,
            PacketType::Type0 | PacketType::Type1 => self.type0 += 1,
        }
    }
}

/// The ProcessPm4 loop over one stream, with the packet counters kept in
/// locals for the run (see [`Tally`]).
pub(super) fn run_stream(
    engine: Engine,
    exec: &mut Pm4Execution,
    window: &mut PrefetchWindow,
    state: &mut ProcessorState,
    env: &mut Env<'_>,
    budget: &mut u64,
) -> Result<StreamStatus, Pm4Error> {
    let mut by_opcode = std::mem::take(&mut state.stats.by_opcode);
    by_opcode.resize(256, 0);
    let result = match <&mut [u64; 256]>::try_from(by_opcode.as_mut_slice()) {
        Ok(counts) => {
            let report = state.config.report_packets;
            let mut tally = Tally { packets: 0, dwords: 0, type0: 0, type2: 0, by_opcode: counts, report };
            let result = run_packets(engine, exec, window, state, env, budget, &mut tally);
            let stats = &mut state.stats;
            stats.packets += tally.packets;
            stats.dwords += tally.dwords;
            stats.type0 += tally.type0;
            stats.type2 += tally.type2;
            result
        }
        Err(_) => Ok(StreamStatus::Completed),
    };
    state.stats.by_opcode = by_opcode;
    result
}

/// The packets of one stream (see the module documentation).
fn run_packets(
    engine: Engine,
    exec: &mut Pm4Execution,
    window: &mut PrefetchWindow,
    state: &mut ProcessorState,
    env: &mut Env<'_>,
    budget: &mut u64,
    tally: &mut Tally<'_>,
) -> Result<StreamStatus, Pm4Error> {
    exec.suspended = None;
    let work_budget = state.config.work_budget;
    let table = if state.queue.is_graphics() { &opcodes::GRAPHICS } else { &opcodes::COMPUTE };
    'buffers: loop {
        if !exec.pop_finished() {
            exec.reset();
            return Ok(StreamStatus::Completed);
        }
        let depth = exec.depth() - 1;
        let (buffer, size, mut offset) = match exec.top() {
            Some(c) => (c.buffer, c.size_dw, c.offset_dw),
            None => return Ok(StreamStatus::Completed),
        };

        while offset < size {
            if *budget == 0 {
                set_offset(exec, depth, offset);
                return Ok(StreamStatus::Yielded);
            }
            let location = PacketLocation { buffer, buffer_size_dw: size, offset_dw: offset };
            let remaining = size - offset;
            let address = buffer.wrapping_add(u64::from(offset) * 4);

            // Framing: the header from the prefetch window, then the
            // reader's rule (type 1 and overruns are frame errors).
            let start = match window.ensure(env.memory, address, 1, remaining) {
                Ok(start) => start,
                Err(source) => {
                    return Err(Pm4Error::from_frame(FrameError { location, kind: FrameErrorKind::Unreadable(source) }))
                }
            };
            let header = Header(window.word(start));
            let length = match reader::frame_length(header, remaining) {
                Ok(length) => length,
                Err(kind) => return Err(Pm4Error::from_frame(FrameError { location, kind })),
            };

            // Anything but an unpredicated (or not skipped) type-3 packet:
            // the rare cases, out of line. (COND_EXEC and PRED_EXEC skips
            // move the cursor past the dwords: they never get here.)
            if header.0 < 0xC000_0000 || (header.predicate() && exec.predication.skip) {
                exec.packets += 1;
                if exec.packets > work_budget {
                    return Err(Pm4Error::WorkBudgetExhausted { location, budget: work_budget });
                }
                *budget -= 1;
                offset += skip_or_type0(window, state, env, header, length, location, tally)?;
                continue;
            }
            if exec.packets >= work_budget {
                return Err(Pm4Error::WorkBudgetExhausted { location, budget: work_budget });
            }
            let start = if window.holds(start, length) {
                start
            } else {
                window.ensure(env.memory, address, length, remaining).map_err(|source| Pm4Error::Memory {
                    location,
                    opcode: header.opcode(),
                    source,
                })?
            };

            // The view: this packet (held whole) and whatever follows it
            // in the window, up to the end of the buffer.
            let window_range = window.range();
            let words = window.held(start, remaining);
            // Packets this view may run before the slice's budget or the
            // work budget runs out (the view's first packet passed both
            // checks above).
            let left = (*budget).min(work_budget.saturating_sub(exec.packets));
            let predication = exec.predication;
            let mut view = View {
                // What handlers see: built once per view; each packet sets
                // its place (the view ends when a handler moves to another
                // buffer).
                ctx: Ctx::new(
                    engine,
                    &mut *state,
                    WatchedMemory::new(env.memory, window_range),
                    &mut *env.backend,
                    env.shaders,
                    location,
                    header,
                    predication,
                ),
                exec: &mut *exec,
                packets: &mut tally.packets,
                by_opcode: &mut *tally.by_opcode,
                report: tally.report,
                budget: &mut *budget,
                work_budget,
                table,
                buffer,
                size,
                offset,
                depth,
                settled: left,
                skip: predication.skip,
            };
            let (at, stop) = run_view(words, &mut view);
            tally.dwords += at as u64;
            match stop {
                ViewStop::Next => offset += at as u32,
                ViewStop::Failed(e) => return Err(*e),
                ViewStop::Return { stale, status } => {
                    if stale {
                        window.invalidate();
                    }
                    return Ok(status);
                }
                ViewStop::Moved { stale } => {
                    if stale {
                        window.invalidate();
                    }
                    // A handler that called, chained or returned changed the
                    // stack; one that skipped moved the cursor in this buffer.
                    if exec.depth() != depth + 1 {
                        continue 'buffers;
                    }
                    match exec.top() {
                        Some(c) if c.buffer == buffer && c.size_dw == size => offset = c.offset_dw,
                        _ => continue 'buffers,
                    }
                }
            }
        }
        if exec.depth() == depth + 1 && exec.top().is_some_and(|c| c.buffer == buffer && c.size_dw == size) {
            set_offset(exec, depth, offset);
        }
    }
}

/// A packet consumed by its length without a handler: a type-2 filler, a
/// type-0 register run, or a predicated packet while predication says
/// "skip". Returns the dwords consumed.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn skip_or_type0(
    window: &mut PrefetchWindow,
    state: &mut ProcessorState,
    env: &mut Env<'_>,
    header: Header,
    length: u32,
    location: PacketLocation,
    tally: &mut Tally<'_>,
) -> Result<u32, Pm4Error> {
    let consumed = match header.packet_type() {
        PacketType::Type3 => {
            // Predicated while predication says "skip".
            state.stats.skipped += 1;
            length
        }
        PacketType::Type2 => 1,
        PacketType::Type0 | PacketType::Type1 => {
            let remaining = location.buffer_size_dw - location.offset_dw;
            let start = window
                .ensure(env.memory, location.address(), length, remaining)
                .map_err(|source| Pm4Error::Memory { location, opcode: Opcode::NOP, source })?;
            let base = header.type0_base();
            for (i, value) in window.slice(start, length).iter().skip(1).enumerate() {
                register_store::write_register(state, base.wrapping_add(i as u32), *value);
            }
            tracing::debug!(queue = %state.queue, %location, "type-0 packet writes registers from {base:#x}");
            length
        }
    };
    tally.any(header, consumed);
    if tally.report {
        report_packet(env.backend, state.queue, header, location);
    }
    Ok(consumed)
}

/// [`Backend::packet`] for a packet counted (when the configuration asks).
#[cold]
#[inline(never)]
pub(super) fn report_packet(backend: &mut dyn Backend, queue: QueueId, header: Header, location: PacketLocation) {
    backend.packet(queue, header, &location);
}

/// Sets the offset of the cursor at `depth` on the IB stack.
#[inline]
pub(super) fn set_offset(exec: &mut Pm4Execution, depth: usize, offset: u32) {
    if let Some(c) = exec.at_mut(depth) {
        c.offset_dw = offset;
    }
}
