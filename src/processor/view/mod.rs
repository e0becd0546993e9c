//! The view loop: the type-3 packets of one view of the prefetch window
//! (the dwords of the current buffer the window holds, from the cursor
//! on), walked while the view holds them whole.
//!
//! Each packet takes one of three ways:
//! - a one-dword NOP pad (header `0xFFFF10xx`, bits \[7:2\] clear): counted,
//!   a run of them in one go ([`pad_run`]);
//! - a register run the packet's table entry stores inline
//!   ([`Table::inline`]: SET_SH_REG, SET_CONTEXT_REG, SET_UCONFIG_REG and
//!   their _INDEX forms): stored by `register_store::store_register_run` /
//!   `store_uconfig` when it fits them, else it takes the third way;
//! - everything else: the entry's handler, called with the packet's body
//!   after the context is placed on it (its offset, header and the loop's
//!   count of packets left: three stores), then one check
//!   ([`Ctx::attention`]: did a write hit the window, did the handler
//!   charge sub-packets). A handler that answers [`Step::Next`] with
//!   nothing to look at goes straight on; every other answer (a wait, an
//!   error, a call, chain or skip, a change of predication, the constant
//!   engine) goes to [`finish`], out of line.
//!
//! The inline ways run only while predication does not skip and the
//! backend does not see every packet (`ProcessorConfig::report_packets`);
//! otherwise every packet calls its handler (a pad is a NOP, a register
//! writer's handler is the general store), one at a time: the general
//! path, which `tests/fast_path.rs` checks the inline one against.
//!
//! The loop counts packets in a local (`left`: packets the view may still
//! run before the slice's budget or the work budget runs out) and settles
//! the counts ([`View::settle`]) when the view ends or a handler needs
//! them settled. A handler never sees the counts: a multi-draw charges its
//! sub-draws through [`Ctx::charge`], against what the context was told.

pub(crate) mod context;

use super::execution::Pm4Execution;
use super::opcodes::{inline, Table};
use super::register_store::{store_register_run, store_uconfig, CONTEXT_RUN_SPANS, SH_RUN_SPANS};
use super::stream::{report_packet, set_offset, StreamStatus};
use super::{Pm4Error, SuspendReason};
use crate::packet::body::BodyError;
use crate::packet::{Header, Opcode, PacketLocation, COUNT_ONE_DWORD};
use crate::regs::space;
use context::{Ctx, HandlerResult, Move, Step};

/// One view of the prefetch window while [`run_view`] walks it: the
/// context handlers see, the execution and the counters.
pub(super) struct View<'v, 'c> {
    pub(super) ctx: Ctx<'c>,
    pub(super) exec: &'c mut Pm4Execution,
    /// The tally's packet count and counts by opcode.
    pub(super) packets: &'v mut u64,
    pub(super) by_opcode: &'v mut [u64; 256],
    /// Whether the backend gets a call per packet.
    pub(super) report: bool,
    /// The slice's budget (packets), charged when the view settles.
    pub(super) budget: &'v mut u64,
    pub(super) work_budget: u64,
    /// The queue kind's opcode table.
    pub(super) table: &'static Table,
    /// The buffer the view is in, and the view's first dword in it.
    pub(super) buffer: u64,
    pub(super) size: u32,
    pub(super) offset: u32,
    /// The buffer's entry on the IB stack.
    pub(super) depth: usize,
    /// Packets the view could still run when it last settled: the packets
    /// run since are this minus the loop's count of packets left.
    pub(super) settled: u64,
    /// Whether predication skips (predicated packets go to the caller).
    pub(super) skip: bool,
}

impl View<'_, '_> {
    /// Charges the packets run since the last settle (`settled - left`)
    /// to the work budget, the slice's budget and the count, and tells the
    /// context what is left of the work budget.
    #[inline(always)]
    fn settle(&mut self, left: u64) {
        let ran = self.settled - left;
        self.exec.packets += ran;
        *self.budget -= ran;
        *self.packets += ran;
        self.settled = left;
        self.ctx.charge_base = self.work_budget.saturating_sub(self.exec.packets).saturating_sub(left);
    }

    /// Packets the view may run from here: the slice's budget and the work
    /// budget, settled.
    #[inline]
    fn reset_left(&mut self) -> u64 {
        let left = (*self.budget).min(self.work_budget.saturating_sub(self.exec.packets));
        self.settled = left;
        self.ctx.charge_base = self.work_budget.saturating_sub(self.exec.packets).saturating_sub(left);
        left
    }
}

/// Why [`run_view`] left its view of the window.
pub(super) enum ViewStop {
    /// The view ended, its next packet is not a type-3 packet it holds
    /// whole, predication skips it, or the budgets ran out: go on at the
    /// cursor with a new view.
    Next,
    /// A handler failed.
    Failed(Box<Pm4Error>),
    /// The cursor moved (a call, chain or skip), or a write hit the dwords
    /// the window holds (`stale`).
    Moved { stale: bool },
    /// The stream stops here with `status`.
    Return { stale: bool, status: StreamStatus },
}

/// The header of a one-dword NOP pad: type 3, count 0x3FFF, NOP, bits
/// \[7:2\] clear (the predicate and shader-type bits may be anything).
/// A pad is never an embedder's private packet: those need a body or a
/// code in bits \[7:2\].
const PAD_HEADER: u32 = 0xC000_0000 | COUNT_ONE_DWORD << 16 | (Opcode::NOP.0 as u32) << 8;

/// Whether `h` is a one-dword NOP pad (see [`PAD_HEADER`]).
#[inline(always)]
pub(crate) fn is_pad(h: u32) -> bool {
    h | 3 == PAD_HEADER | 3
}

/// Walks type-3 packets straight from `words` (a view of the window, its
/// first packet held whole and within both budgets) while it holds them
/// whole (see the module documentation). Returns the dwords walked and why
/// it stopped, with the packets run settled.
#[inline(never)]
pub(super) fn run_view(words: &[u32], view: &mut View<'_, '_>) -> (usize, ViewStop) {
    let table = view.table;
    let mut at = 0usize;
    let mut left = view.settled;
    view.ctx.charge_base = view.work_budget.saturating_sub(view.exec.packets).saturating_sub(left);
    let stop = 'view: loop {
        if !view.report && !view.skip {
            // The inline ways' own loop, which only a packet it leaves or a
            // handler's answer other than `Next` ends.
            loop {
                let Some(&h) = words.get(at) else { break 'view ViewStop::Next };
                if h < 0xC000_0000 || left == 0 {
                    break 'view ViewStop::Next;
                }
                // One-dword NOP pads, the most common packet of some
                // streams: one compare each, and a run of them (a buffer's
                // padding) counted in one go, within the packets left.
                if is_pad(h) {
                    let rest = words.get(at + 1..).unwrap_or_default();
                    let limit = usize::try_from(left - 1).unwrap_or(usize::MAX).min(rest.len());
                    let run = 1 + pad_run(rest.get(..limit).unwrap_or_default());
                    view.by_opcode[usize::from(Opcode::NOP.0)] += run as u64;
                    at += run;
                    left -= run as u64;
                    continue;
                }
                let count = ((h >> 16) & 0x3FFF) as usize;
                let opcode = ((h >> 8) & 0xFF) as usize;
                let inline = table.inline[opcode];
                let stored = if inline & inline::SH != 0 {
                    store_register_run(words, at, count, space::SH, &SH_RUN_SPANS, view.ctx.state)
                } else if inline & inline::CONTEXT != 0 {
                    store_register_run(words, at, count, space::CONTEXT, &CONTEXT_RUN_SPANS, view.ctx.state)
                } else if inline & inline::UCONFIG != 0 {
                    store_uconfig(words, at, count, view.ctx.state)
                } else {
                    None
                };
                if let Some(length) = stored {
                    view.by_opcode[opcode] += 1;
                    at += length;
                    left -= 1;
                    continue;
                }
                // The handler, when the view holds the packet whole.
                let length = if count == COUNT_ONE_DWORD as usize { 1 } else { count + 2 };
                let end = at + length;
                let Some(body) = words.get(at + 1..end) else { break 'view ViewStop::Next };
                left -= 1;
                let result = view.ctx.run(table.handlers[opcode], at, h, left, body);
                if matches!(result, Ok(Step::Next)) && !view.ctx.attention() {
                    view.by_opcode[opcode] += 1;
                    at = end;
                    continue;
                }
                match finish(view, at, end, result, left) {
                    // Back to the top: predication may have changed.
                    Ok((next, now_left)) => {
                        (at, left) = (next, now_left);
                        continue 'view;
                    }
                    Err((next, stop)) => {
                        at = next;
                        break 'view stop;
                    }
                }
            }
        }
        // The general path: one packet, through its handler.
        let Some(&h) = words.get(at) else { break ViewStop::Next };
        if h < 0xC000_0000 || left == 0 || (h & 1 != 0 && view.skip) {
            break ViewStop::Next;
        }
        let count = (h >> 16) & 0x3FFF;
        let length = if count == COUNT_ONE_DWORD { 1 } else { count as usize + 2 };
        let end = at + length;
        let Some(body) = words.get(at + 1..end) else { break ViewStop::Next };
        let handler = table.handlers[((h >> 8) & 0xFF) as usize];
        left -= 1;
        let result = view.ctx.run(handler, at, h, left, body);
        match finish(view, at, end, result, left) {
            Ok((next, now_left)) => (at, left) = (next, now_left),
            Err((next, stop)) => {
                at = next;
                break stop;
            }
        }
    };
    view.settle(left);
    (at, stop)
}

/// What the loop does with a handler's answer for the packet `at..end`
/// (counted as run in `left`) other than a plain `Next`, and with every
/// answer on the general path: returns where the view goes on and the
/// packets left, or where it stopped (past a packet that ran, else at it)
/// and why.
///
/// - an error stops the stream; the packet is charged to the work budget
///   but not counted as run. A one-dword packet (COUNT 0x3FFF: no body,
///   packets.md §1.4) whose handler needs a body is no error: it is
///   reported as not emulated and passed (its handler's error, boxed, is
///   the one allocation such a malformed packet costs);
/// - a wait puts the cursor back on the packet (it runs again on resume)
///   and does not charge the work budget (a long wait must not end in
///   `WorkBudgetExhausted`);
/// - a call, chain or skip moves the cursor past the packet first (a call
///   returns there), then as asked; the view ends;
/// - a change of predication is kept in the execution and the context;
/// - sub-packets charged by a multi-draw go to the work budget;
/// - a write that hit the window ends the view (the window is dropped).
#[inline(never)]
fn finish(
    view: &mut View<'_, '_>,
    at: usize,
    end: usize,
    result: HandlerResult,
    left: u64,
) -> Result<(usize, u64), (usize, ViewStop)> {
    let offset_dw = view.offset + at as u32;
    let stale = view.ctx.window_written();
    let step = match result {
        Ok(step) => step,
        Err(e) if one_dword_without_body(view.ctx.header(), &e) => {
            super::handlers::report_not_emulated(&mut view.ctx, "one-dword form (COUNT 0x3FFF, no body)");
            Step::Next
        }
        Err(e) => return Err(failed(view, at, left, e)),
    };
    // What a multi-draw charged: the work budget only.
    let charged = view.ctx.take_charged();
    view.exec.packets += charged;
    if let Step::Suspend(_) = step {
        view.settle(left);
        *view.packets -= 1;
        let location = PacketLocation { buffer: view.buffer, buffer_size_dw: view.size, offset_dw };
        let reason = view.ctx.suspended.take().unwrap_or(SuspendReason::Rewind { address: location.address() });
        let exec = &mut *view.exec;
        set_offset(exec, view.depth, offset_dw);
        exec.packets = exec.packets.saturating_sub(1);
        exec.suspended = Some(reason);
        view.ctx.state.stats.waits += 1;
        return Err((at, ViewStop::Return { stale, status: StreamStatus::Suspended(reason) }));
    }
    // Past the packet (where a view that ends here goes on, and where a
    // call returns), then the cursor's moves, which may fail (and then the
    // packet did not run).
    let past = offset_dw + (end - at) as u32;
    set_offset(view.exec, view.depth, past);
    match step {
        Step::Move(_) => match view.ctx.movement {
            Move::Call { address, size_dw } => {
                if !view.exec.push(address, size_dw) {
                    let location = view.ctx.location();
                    let (depth, limit) = (view.exec.depth() + 1, view.exec.max_depth());
                    let e = Pm4Error::IbStackOverflow { location, target: address, depth, limit };
                    return Err(failed(view, at, left, Box::new(e)));
                }
            }
            Move::Chain { address, size_dw } => view.exec.chain(address, size_dw),
            Move::Skip { dwords } => {
                let remaining = view.size.saturating_sub(past);
                if dwords > remaining {
                    let (location, opcode) = (view.ctx.location(), view.ctx.opcode());
                    let e = Pm4Error::SkipPastEnd { location, opcode, skip_dw: dwords, remaining_dw: remaining };
                    return Err(failed(view, at, left, Box::new(e)));
                }
                // Dwords, not packets (§3.10): the cursor moves past them
                // unparsed, so whatever they hold is never decoded.
                set_offset(view.exec, view.depth, past + dwords);
                view.ctx.state.stats.skipped += 1;
                view.ctx.state.stats.dwords += u64::from(dwords);
            }
        },
        Step::Predicate(_) => {
            view.exec.predication = view.ctx.predication;
            view.skip = view.ctx.predication.skip;
        }
        Step::Next | Step::RunConstantEngine | Step::Suspend(_) => {}
    }
    view.by_opcode[usize::from(view.ctx.opcode().0)] += 1;
    if view.report {
        let location = PacketLocation { buffer: view.buffer, buffer_size_dw: view.size, offset_dw };
        let header = view.ctx.header();
        report_packet(view.ctx.backend, view.ctx.state.queue, header, location);
    }
    match step {
        Step::RunConstantEngine => Err((end, ViewStop::Return { stale, status: StreamStatus::RunConstantEngine })),
        Step::Move(_) => Err((end, ViewStop::Moved { stale })),
        _ if stale => Err((end, ViewStop::Moved { stale })),
        _ if charged != 0 => {
            view.settle(left);
            Ok((end, view.reset_left()))
        }
        _ => Ok((end, left)),
    }
}

/// The stop of a packet at `at` whose handler failed with `e`: charged to
/// the work budget, not counted as run.
#[cold]
fn failed(view: &mut View<'_, '_>, at: usize, left: u64, e: Box<Pm4Error>) -> (usize, ViewStop) {
    view.settle(left);
    *view.packets -= 1;
    (at, ViewStop::Failed(e))
}

/// Whether `e` is a handler's complaint that a one-dword packet (header
/// `header`, COUNT 0x3FFF) has no body.
fn one_dword_without_body(header: Header, e: &Pm4Error) -> bool {
    header.count() == COUNT_ONE_DWORD
        && matches!(e, Pm4Error::MalformedPacket { source: BodyError::Missing { body_len: 0, .. }, .. })
}

/// How many one-dword NOP pads `words` starts with: one at a time up to
/// eight (most runs are short), then eight at a time while eight in a row
/// are pads (one vector compare, where the target has them), then one at
/// a time again.
#[inline(always)]
fn pad_run(words: &[u32]) -> usize {
    let short = words.iter().take(8).take_while(|&&w| is_pad(w)).count();
    if short < 8 {
        return short;
    }
    let mut run = short;
    let rest = words.get(run..).unwrap_or_default();
    for chunk in rest.chunks_exact(8) {
        if !chunk.iter().fold(true, |all, &w| all & is_pad(w)) {
            break;
        }
        run += 8;
    }
    run + words.get(run..).unwrap_or_default().iter().take_while(|&&w| is_pad(w)).count()
}
