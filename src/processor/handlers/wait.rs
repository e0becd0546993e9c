//! Packets that wait: WAIT_REG_MEM / WAIT_REG_MEM64, REWIND and
//! MEM_SEMAPHORE. A wait that is not satisfied suspends the processor
//! ([`Flow::Suspend`]): the packet runs again when the queue resumes.

use crate::packet::body::{MemSemaphore, PollTarget, Rewind, WaitRegMem};
use crate::packet::Packet;
use crate::processor::context::{Ctx, Flow, HandlerResult};
use crate::processor::handlers::Fast;
use crate::processor::{Pm4Error, SuspendReason};

pub(crate) fn wait_reg_mem(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> HandlerResult {
    let w = ctx.decode::<WaitRegMem>(p)?;
    // OPERATION 1 (write, wait, write): REFERENCE goes to the first register
    // before the second is polled.
    let target = match (w.operation, w.target) {
        (1, PollTarget::Register(first)) => {
            ctx.write_register(first, w.reference as u32);
            PollTarget::Register(w.write_register2)
        }
        (_, t) => t,
    };
    let value = poll(ctx, &w, target)?;
    if w.function.test(value & w.mask, w.reference) {
        Ok(Flow::Continue)
    } else {
        Ok(suspend(ctx, &w, target, value))
    }
}

/// Suspends the stream on the wait `w`, which saw `value` at `target`.
fn suspend(ctx: &mut Ctx<'_>, w: &WaitRegMem, target: PollTarget, value: u64) -> Flow {
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

/// WAIT_REG_MEM's and WAIT_REG_MEM64's fast entry (see [`Fast`]; `body`
/// is the packet's body, `ctx.opcode` its opcode): the wait, as its
/// handler makes it (it goes on, or suspends). One that writes a register
/// first (OPERATION 1) and a body that does not decode: [`Fast::General`],
/// having done nothing.
pub(crate) fn wait_reg_mem_fast(ctx: &mut Ctx<'_>, body: &[u32]) -> Fast {
    use crate::packet::body::Body;
    let Ok(w) = WaitRegMem::decode_body(ctx.opcode, body) else { return Fast::General };
    if w.operation == 1 {
        return Fast::General;
    }
    match poll(ctx, &w, w.target) {
        Ok(value) if w.function.test(value & w.mask, w.reference) => Fast::Done,
        Ok(value) => {
            suspend(ctx, &w, w.target, value);
            Fast::Suspended
        }
        Err(e) => Fast::Failed(Box::new(e)),
    }
}

/// REWIND: wait until the producer sets VALID (bit 31) in the packet's own
/// body dword, which the loop re-reads from memory on every resume.
pub(crate) fn rewind(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> HandlerResult {
    if ctx.decode::<Rewind>(p)?.valid {
        Ok(Flow::Continue)
    } else {
        Ok(ctx.suspend(SuspendReason::Rewind { address: ctx.location.address().wrapping_add(4) }))
    }
}

/// MEM_SEMAPHORE: signal increments (or sets to 1) the 64-bit semaphore;
/// wait blocks while it is zero, then decrements it.
pub(crate) fn mem_semaphore(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> HandlerResult {
    let s = ctx.decode::<MemSemaphore>(p)?;
    let value = ctx.read_u64(s.address)?;
    match s.sem_sel {
        6 => {
            let new = if s.write_one { 1 } else { value.wrapping_add(1) };
            ctx.write_u64(s.address, new)?;
            Ok(Flow::Continue)
        }
        7 => {
            if value == 0 {
                Ok(ctx.suspend(SuspendReason::MemSemaphore { address: s.address }))
            } else {
                ctx.write_u64(s.address, value - 1)?;
                Ok(Flow::Continue)
            }
        }
        _ => Err(Box::new(ctx.body_err(crate::packet::body::BodyError::Invalid {
            opcode: p.opcode(),
            what: "SEM_SEL is neither signal (6) nor wait (7)",
        }))),
    }
}
