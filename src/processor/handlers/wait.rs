//! Packets that wait: WAIT_REG_MEM / WAIT_REG_MEM64, REWIND and
//! MEM_SEMAPHORE. A wait that is not satisfied suspends the processor
//! ([`Step::Suspend`]): the packet runs again when the queue resumes.

use crate::packet::body::{MemSemaphore, PollTarget, Rewind, WaitRegMem};
use crate::packet::wire::{SemaphoreSel, WaitOperation};
use crate::processor::view::context::{Ctx, HandlerResult, Step};
use crate::processor::{Pm4Error, SuspendReason};

pub(crate) fn wait_reg_mem(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let w = ctx.decode::<WaitRegMem>(body)?;
    // OPERATION 1 (write, wait, write): REFERENCE goes to the first register
    // before the second is polled.
    let target = match (WaitOperation::from_wire(w.operation), w.target) {
        (Some(WaitOperation::WrWaitWrReg), PollTarget::Register(first)) => {
            ctx.write_register(first, w.reference as u32);
            PollTarget::Register(w.write_register2)
        }
        (_, t) => t,
    };
    let value = poll(ctx, &w, target)?;
    if w.function.test(value & w.mask, w.reference) {
        Ok(Step::Next)
    } else {
        Ok(suspend(ctx, &w, target, value))
    }
}

/// Suspends the stream on the wait `w`, which saw `value` at `target`.
fn suspend(ctx: &mut Ctx<'_>, w: &WaitRegMem, target: PollTarget, value: u64) -> Step {
    ctx.suspend(SuspendReason::WaitRegMem {
        target,
        function: w.function,
        reference: w.reference,
        mask: w.mask,
        current: value,
        is_64: w.is_64,
    })
}

/// The value a wait `w` polls at `target` (32 or 64 bits).
fn poll(ctx: &mut Ctx<'_>, w: &WaitRegMem, target: PollTarget) -> Result<u64, Pm4Error> {
    Ok(match target {
        PollTarget::Memory(address) => {
            if w.is_64 {
                ctx.read_u64(address)?
            } else {
                u64::from(ctx.read_u32(address)?)
            }
        }
        PollTarget::Register(register) => {
            let lo = u64::from(ctx.read_register(register));
            if w.is_64 {
                lo | (u64::from(ctx.read_register(register.wrapping_add(1))) << 32)
            } else {
                lo
            }
        }
    })
}

/// REWIND: wait until the producer sets VALID (bit 31) in the packet's own
/// body dword, which the loop re-reads from memory on every resume.
pub(crate) fn rewind(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    if ctx.decode::<Rewind>(body)?.valid {
        Ok(Step::Next)
    } else {
        Ok(ctx.suspend(SuspendReason::Rewind { address: ctx.location().address().wrapping_add(4) }))
    }
}

/// MEM_SEMAPHORE: signal increments (or sets to 1) the 64-bit semaphore;
/// wait blocks while it is zero, then decrements it.
pub(crate) fn mem_semaphore(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let s = ctx.decode::<MemSemaphore>(body)?;
    let value = ctx.read_u64(s.address)?;
    match SemaphoreSel::from_wire(s.sem_sel) {
        Some(SemaphoreSel::Signal) => {
            let new = if s.write_one { 1 } else { value.wrapping_add(1) };
            ctx.write_u64(s.address, new)?;
            Ok(Step::Next)
        }
        Some(SemaphoreSel::Wait) => {
            if value == 0 {
                Ok(ctx.suspend(SuspendReason::MemSemaphore { address: s.address }))
            } else {
                ctx.write_u64(s.address, value - 1)?;
                Ok(Step::Next)
            }
        }
        None => Err(Box::new(ctx.body_err(crate::packet::body::BodyError::Invalid {
            opcode: ctx.opcode(),
            what: "SEM_SEL is neither signal (6) nor wait (7)",
        }))),
    }
}
