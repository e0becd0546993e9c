//! `processor`: one submission of arbitrary dwords on a small processor,
//! with arbitrary guest memory its packets can point into, run in slices
//! with host writes between them so that waits can be satisfied.
//!
//! Input layout (every field reads as zero past the end):
//!
//! ```text
//! u8   config:   bits 0-2 max_ib_depth - 1, bit 3 stop on unknown packets,
//!                bit 4 report packets, bit 5 a compute queue, bit 6 create a
//!                shader from the guest data, bit 7 submit the dword count
//!                asked for even when fewer dwords are present (unmapped tail)
//! u8   schedule: bits 0-2 calls - 1, bits 3-4 slice size (1, 7, 64,
//!                unlimited), bits 5-7 render backends (0, 1, 2, 4, 8, 16, 16, 16)
//! u16  command dwords, then that many dwords (mapped at CMD_BASE)
//! u8   host steps (low 4 bits), then 9 bytes per step: kind, a (u32), b (u32)
//! ...  guest data (mapped at DATA_BASE)
//! ```
//!
//! A zeroed scratch region lies at [`SCRATCH_BASE`]. Between two calls the
//! harness takes the next host step (by default: satisfy what the processor
//! waits for): write the value that ends the wait, write `b` where it waits,
//! write `b` into one of the regions, set register `a` to `b`, or abort and
//! submit again. Work is bounded by construction: at most [`MAX_CALLS`]
//! calls, each running at most [`WORK_BUDGET`] packets per submission,
//! except for one input in [`FULL_BUDGET_SHARE`] (by length), which runs
//! with [`LONG_BUDGET`] so that the fuzzer also sees what long runs do (multi-draw packets with huge counts, loops that
//! write new memory until the written-memory cap of
//! [`Limits::max_written_memory`] refuses them); written pages never pass
//! that cap.
//!
//! What the harness keeps is bounded too, and checked after every call:
//! the recording backend's log holds at most [`MAX_LOG_LINES`] lines
//! (a multi-draw packet of 2^26 sub-draws once grew it to 11 GB), and the
//! written pages plus the log's heap stay under [`RESIDENT_CAP`].

use super::{Input, Outcome, Violation};
use crate::backend::{QueueId, RecordingBackend};
use crate::limits::Limits;
use crate::memory::{GuestMemory, SparseMemory};
use crate::packet::body::{CompareFunction, PollTarget};
use crate::processor::{
    Env, HostCommand, Pm4Error, ProcessStatus, Processor, ProcessorConfig, SuspendReason, UnknownPacketPolicy,
};
use crate::shader::ShaderRegistry;

const TARGET: &str = "processor";

/// Where the command buffer is mapped.
pub const CMD_BASE: u64 = 0x1000;
/// Where the guest data is mapped.
pub const DATA_BASE: u64 = 0x1_0000;
/// Where the zeroed scratch region is mapped.
pub const SCRATCH_BASE: u64 = 0x10_0000;
/// Size of the scratch region.
pub const SCRATCH_LEN: u64 = 0x1_0000;
/// Packets one submission may run.
pub const WORK_BUDGET: u64 = 10_000;
/// Most calls to `process_slice` (and so host steps) per input.
pub const MAX_CALLS: usize = 8;
/// Bytes per host step.
pub const STEP_LEN: usize = 9;
/// Code address of the shader created from the guest data.
pub const SHADER_CODE: u64 = 0x20_0000;

/// Host-command NOP codes the harness registers (code = low 16 bits of
/// `HOST_COMMAND_SIGNATURE | code`).
pub const HOST_COMMANDS: [(u16, HostCommand); 6] = [
    (1, HostCommand::Flip),
    (2, HostCommand::PushMarker),
    (3, HostCommand::PopMarker),
    (4, HostCommand::ContextPush),
    (5, HostCommand::ContextPop),
    (6, HostCommand::Custom),
];

const SLICES: [u64; 4] = [1, 7, 64, u64::MAX];

/// Most lines the harness's recording backend keeps
/// ([`RecordingBackend::max_lines`], set from [`Limits::max_events`]).
pub const MAX_LOG_LINES: u64 = 1 << 16;

/// Most heap bytes one log line may hold (the longest, a draw binding four
/// programs with an index buffer and indirect arguments, is under 300).
pub const MAX_LINE_BYTES: u64 = 512;

/// What the harness may hold: the written-page cap of
/// [`Limits::max_written_memory`] plus [`MAX_LOG_LINES`] lines of at most
/// [`MAX_LINE_BYTES`].
pub const RESIDENT_CAP: u64 = (1 << 30) + (MAX_LOG_LINES + 1) * MAX_LINE_BYTES;

/// One input in this many (those whose length leaves this remainder minus
/// one) runs with the default work budget instead of [`WORK_BUDGET`].
pub const FULL_BUDGET_SHARE: usize = 64;

/// The work budget of that share: 2^22 packets, long enough for a loop to
/// reach the written-page cap (2^18 pages) or a multi-draw packet to make
/// millions of draws, short enough that such an input runs in a fraction
/// of a second fuzzed and in seconds under `cargo test` (unoptimized), where
/// the processor's default of 2^26 took 44 s.
pub const LONG_BUDGET: u64 = 1 << 22;
const RENDER_BACKENDS: [u32; 8] = [0, 1, 2, 4, 8, 16, 16, 16];

/// The `processor` harness.
pub fn processor(data: &[u8]) -> Outcome {
    let fail = |what: String| Violation::new(TARGET, what);
    let mut input = Input::new(data);
    let config_bits = input.u8();
    let schedule = input.u8();
    let asked_dw = input.u16();
    let cmd = input.bytes(usize::from(asked_dw) * 4);
    let cmd = cmd.get(..cmd.len() / 4 * 4).unwrap_or(&[]);
    let step_count = usize::from(input.u8() & 0xF);
    let steps = input.bytes(step_count * STEP_LEN);
    let guest = input.rest();

    let budget = if data.len() % FULL_BUDGET_SHARE == FULL_BUDGET_SHARE - 1 { LONG_BUDGET } else { WORK_BUDGET };
    let config = ProcessorConfig {
        max_ib_depth: usize::from(config_bits & 7) + 1,
        work_budget: budget,
        unknown_packet_policy: if config_bits & 8 != 0 { UnknownPacketPolicy::Stop } else { UnknownPacketPolicy::Skip },
        report_packets: config_bits & 0x10 != 0,
        render_backends: RENDER_BACKENDS[usize::from(schedule >> 5)],
        max_unknown_reports: 4,
        host_commands: HOST_COMMANDS.to_vec(),
        gds_bytes: crate::processor::DEFAULT_GDS_BYTES,
        skip_unmapped_ibs: schedule & 0x80 != 0,
        family: crate::regs::db::GpuFamily::Gfx103,
        private_packets: Default::default(),
    };
    let queue = if config_bits & 0x20 != 0 { QueueId(1) } else { QueueId::GRAPHICS };
    let size_dw = if config_bits & 0x80 != 0 { u32::from(asked_dw) } else { (cmd.len() / 4) as u32 };
    let calls = usize::from(schedule & 7) + 1;
    let slice = SLICES[usize::from((schedule >> 3) & 3)];

    let mut memory = SparseMemory::new();
    let cap = Limits::default().max_written_memory;
    memory.set_written_limit(cap);
    let mapped = memory
        .map_bytes(CMD_BASE, cmd)
        .and_then(|()| memory.map_bytes(DATA_BASE, guest))
        .and_then(|()| memory.map_zeroed(SCRATCH_BASE, SCRATCH_LEN));
    mapped.map_err(|e| fail(format!("the harness's regions do not map: {e}")))?;
    let mut shaders = ShaderRegistry::new();
    if config_bits & 0x40 != 0 {
        let before = memory.write_generation();
        if shaders.create(&memory, DATA_BASE, SHADER_CODE, false).is_err() && memory.write_generation() != before {
            return Err(fail("a rejected shader creation wrote memory".into()));
        }
    }
    let mut backend = RecordingBackend::with_limits(&Limits { max_events: MAX_LOG_LINES, ..Limits::default() });
    let mut p = Processor::with_config(queue, config);
    p.submit(CMD_BASE, size_dw).map_err(|e| fail(format!("a new processor refused a submit: {e}")))?;

    let mut steps = steps.chunks_exact(STEP_LEN);
    for _ in 0..calls.min(MAX_CALLS) {
        let mut env = Env { memory: &mut memory, backend: &mut backend, shaders: &mut shaders };
        let result = p.process_slice(&mut env, slice);
        check_status(TARGET, &p, &result, budget)?;
        check_resident(&memory, &backend, cap)?;
        let step = steps.next().map(Input::new);
        let mut step = step.unwrap_or(Input::new(&[]));
        let (kind, a, b) = (step.u8(), step.u32(), step.u32());
        match kind % 6 {
            0 => {
                if let Some(reason) = p.suspended() {
                    satisfy(&mut p, &mut memory, reason);
                }
            }
            1 => {
                let address = p.suspended().and_then(|r| r.watched_address()).unwrap_or(DATA_BASE);
                let _ = memory.write_u32(address, b);
            }
            2 => {
                let base = [CMD_BASE, DATA_BASE, SCRATCH_BASE][(a >> 30) as usize % 3];
                let _ = memory.write_u32(base + u64::from(a & 0xFFFC), b);
            }
            3 => {
                p.registers_mut().set(a & 0xFFFF, b);
            }
            4 => {
                p.abort();
                let offset = a % (size_dw + 1);
                let address = CMD_BASE + u64::from(offset) * 4;
                p.submit(address, size_dw - offset).map_err(|e| fail(format!("submit after abort: {e}")))?;
            }
            _ => {}
        }
        if p.is_idle() {
            break;
        }
    }
    Ok(())
}

/// The written pages stay under `cap`, the log under [`MAX_LOG_LINES`]
/// lines (and its final "truncated" line), and both together under
/// [`RESIDENT_CAP`].
fn check_resident(memory: &SparseMemory, backend: &RecordingBackend, cap: u64) -> Outcome {
    let fail = |what: String| Violation::new(TARGET, what);
    let pages = memory.allocated_page_bytes() as u64;
    if pages > cap {
        return Err(fail(format!("{pages} bytes of written pages past the cap of {cap}")));
    }
    let lines = backend.lines.len() as u64;
    if lines > MAX_LOG_LINES + 1 {
        return Err(fail(format!("the log holds {lines} lines, past its bound of {MAX_LOG_LINES}")));
    }
    let resident = pages + backend.heap_bytes() as u64;
    if resident > RESIDENT_CAP {
        return Err(fail(format!("the harness holds {resident} bytes, past its cap of {RESIDENT_CAP}")));
    }
    Ok(())
}

/// Writes what ends the wait `reason` (when the host can end it at all).
fn satisfy(p: &mut Processor, memory: &mut SparseMemory, reason: SuspendReason) {
    const VALID: u64 = 1 << 63;
    match reason {
        SuspendReason::WaitRegMem { target, function, reference, mask, is_64, .. } => {
            let value = match function {
                CompareFunction::Less => reference.wrapping_sub(1) & mask,
                CompareFunction::Greater | CompareFunction::NotEqual => mask & !reference,
                _ => reference,
            };
            match target {
                PollTarget::Memory(address) if is_64 => {
                    let _ = memory.write_u64(address, value);
                }
                PollTarget::Memory(address) => {
                    let _ = memory.write_u32(address, value as u32);
                }
                PollTarget::Register(register) => {
                    let regs = p.registers_mut();
                    regs.set(register, value as u32);
                    if is_64 {
                        regs.set(register.wrapping_add(1), (value >> 32) as u32);
                    }
                }
            }
        }
        SuspendReason::AtomicLoop { address, compare, .. } => {
            let _ = memory.write_u64(address, compare);
        }
        SuspendReason::Rewind { address } => {
            let value = memory.read_u32(address).unwrap_or(0);
            let _ = memory.write_u32(address, value | 1 << 31);
        }
        SuspendReason::MemSemaphore { address } => {
            let _ = memory.write_u64(address, 1);
        }
        SuspendReason::Predication { address } => {
            for rb in 0..u64::from(p.config().render_backends) {
                let record = address.wrapping_add(rb * 16);
                let _ = memory.write_u64(record, VALID);
                let _ = memory.write_u64(record.wrapping_add(8), VALID);
            }
        }
        SuspendReason::WaitOnCeCounter { .. } | SuspendReason::WaitOnDeCounterDiff { .. } => {}
    }
}

/// What every call to `process_slice` on a busy processor must leave:
/// an error aborts the submission (the processor is idle), completion
/// leaves it idle, a suspension is what the processor reports, nothing
/// runs more packets than its budget or nests deeper than its limit.
pub fn check_status(
    target: &'static str,
    p: &Processor,
    result: &Result<ProcessStatus, Pm4Error>,
    budget: u64,
) -> Outcome {
    let fail = |what: String| Violation::new(target, what);
    let de = p.execution();
    let ce = p.constant_engine();
    if de.packets > budget || ce.packets > budget {
        return Err(fail(format!("{} + {} packets ran on a budget of {budget}", de.packets, ce.packets)));
    }
    let limit = p.config().max_ib_depth.max(1);
    if de.depth() > limit || ce.depth() > limit {
        return Err(fail(format!("IB stack of {}/{} buffers past the limit {limit}", de.depth(), ce.depth())));
    }
    match result {
        Err(e) => {
            let _ = (e.kind(), e.location(), e.to_string());
            if !p.is_idle() {
                return Err(fail(format!("the processor is still busy after the error {e}")));
            }
        }
        Ok(ProcessStatus::Idle) => return Err(fail("a busy processor reported Idle".into())),
        Ok(ProcessStatus::Completed) => {
            if !p.is_idle() {
                return Err(fail("the processor is still busy after Completed".into()));
            }
        }
        Ok(ProcessStatus::Suspended(reason)) => {
            let _ = reason.to_string();
            if p.suspended() != Some(*reason) || p.is_idle() {
                return Err(fail(format!("Suspended({reason:?}) but the processor says {:?}", p.suspended())));
            }
        }
        Ok(ProcessStatus::Yielded) => {
            if p.is_idle() {
                return Err(fail("the processor is idle after Yielded".into()));
            }
        }
    }
    Ok(())
}
