//! Predication: SET_PREDICATION (ZPASS, primitive count, 32/64-bit
//! booleans in memory), COND_EXEC and PRED_EXEC. Skipped packets advance by
//! their length and have no effect at all; the loop does the skipping, and
//! applies the predication and the skips these handlers answer
//! ([`Step::Predicate`], [`Step::Move`]).

use crate::packet::body::{CondExec, PredExec, SetPredication};
use crate::packet::wire::PredicationOp;
use crate::processor::view::context::{Ctx, HandlerResult, Step};
use crate::processor::{Predication, SuspendReason};

const VALID: u64 = 1 << 63;

pub(crate) fn set_predication(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let s = ctx.decode::<SetPredication>(body)?;
    let mut predication = ctx.predication();
    // The condition "visible / no overflow" for this packet's data.
    let op = PredicationOp::from_wire(s.op);
    let condition = match op {
        Some(PredicationOp::Clear) => return Ok(ctx.predicate(Predication::default())),
        Some(PredicationOp::Zpass) => {
            let mut sum = 0u64;
            let mut ready = true;
            for rb in 0..u64::from(ctx.state.config.render_backends) {
                let record = s.address.wrapping_add(rb * 16);
                let begin = ctx.read_u64(record)?;
                let end = ctx.read_u64(record.wrapping_add(8))?;
                if begin & VALID == 0 || end & VALID == 0 {
                    ready = false;
                }
                sum = sum.wrapping_add((end & !VALID).wrapping_sub(begin & !VALID));
            }
            if !ready {
                if !s.draw_if_not_final {
                    return Ok(ctx.suspend(SuspendReason::Predication { address: s.address }));
                }
                // HINT = 1 (§3.9): the data is not final, so the CP draws,
                // whatever PRED_BOOL says.
                if !s.continue_bit {
                    predication.accumulated = false;
                }
                predication.not_final = true;
                predication.skip = false;
                return Ok(ctx.predicate(predication));
            }
            sum != 0
        }
        Some(PredicationOp::Primcount) => {
            let q = |i: u64| ctx.read_u64(s.address.wrapping_add(i * 8)).map(|v| v & !VALID);
            let (needed0, written0, needed1, written1) = (q(0)?, q(1)?, q(2)?, q(3)?);
            let overflow = needed1.wrapping_sub(needed0) != written1.wrapping_sub(written0);
            !overflow
        }
        Some(PredicationOp::Bool64) => ctx.read_u64(s.address)? != 0,
        Some(PredicationOp::Bool32) => ctx.read_u32(s.address)? != 0,
        None => {
            return Err(Box::new(ctx.body_err(crate::packet::body::BodyError::Invalid {
                opcode: ctx.opcode(),
                what: "PRED_OP is reserved",
            })))
        }
    };
    // CONTINUE accumulates: visible if any block was visible (ZPASS), no
    // overflow only if no block overflowed (primitive count).
    let condition = if s.continue_bit {
        if op == Some(PredicationOp::Primcount) {
            condition && predication.accumulated
        } else {
            condition || predication.accumulated
        }
    } else {
        condition
    };
    if !s.continue_bit {
        predication.not_final = false;
    }
    predication.accumulated = condition;
    predication.skip = !predication.not_final && if s.draw_if_visible { !condition } else { condition };
    Ok(ctx.predicate(predication))
}

/// COND_EXEC: skip the next EXEC_COUNT dwords when the 32-bit value is 0.
pub(crate) fn cond_exec(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let c = ctx.decode::<CondExec>(body)?;
    if ctx.read_u32(c.address)? == 0 {
        return Ok(ctx.skip(c.exec_count));
    }
    Ok(Step::Next)
}

/// PRED_EXEC: the next EXEC_COUNT dwords run only on the devices selected in
/// DEVICE_SELECT; this single device is device 0.
pub(crate) fn pred_exec(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    let PredExec { device_select, exec_count } = ctx.decode(body)?;
    if device_select & 1 == 0 {
        return Ok(ctx.skip(exec_count));
    }
    Ok(Step::Next)
}
