//! Predication: SET_PREDICATION (ZPASS, primitive count, 32/64-bit
//! booleans in memory), COND_EXEC and PRED_EXEC. Skipped packets advance by
//! their length and have no effect at all; the loop does the skipping.

use crate::packet::body::{CondExec, PredExec, SetPredication};
use crate::packet::Packet;
use crate::processor::context::{Ctx, Flow, HandlerResult};
use crate::processor::{Pm4Error, SuspendReason};

const VALID: u64 = 1 << 63;

pub(crate) fn set_predication(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> HandlerResult {
    let s = ctx.decode::<SetPredication>(p)?;
    // The condition "visible / no overflow" for this packet's data.
    let condition = match s.op {
        0 => {
            ctx.exec.predication = Default::default();
            return Ok(Flow::Continue);
        }
        1 => {
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
                let predication = &mut ctx.exec.predication;
                if !s.continue_bit {
                    predication.accumulated = false;
                }
                predication.not_final = true;
                predication.skip = false;
                return Ok(Flow::Continue);
            }
            sum != 0
        }
        2 => {
            let q = |i: u64| ctx.read_u64(s.address.wrapping_add(i * 8)).map(|v| v & !VALID);
            let (needed0, written0, needed1, written1) = (q(0)?, q(1)?, q(2)?, q(3)?);
            let overflow = needed1.wrapping_sub(needed0) != written1.wrapping_sub(written0);
            !overflow
        }
        3 => ctx.read_u64(s.address)? != 0,
        4 => ctx.read_u32(s.address)? != 0,
        _ => {
            return Err(Box::new(ctx.body_err(crate::packet::body::BodyError::Invalid {
                opcode: p.opcode(),
                what: "PRED_OP is reserved",
            })))
        }
    };
    // CONTINUE accumulates: visible if any block was visible (ZPASS), no
    // overflow only if no block overflowed (primitive count).
    let condition = if s.continue_bit {
        if s.op == 2 {
            condition && ctx.exec.predication.accumulated
        } else {
            condition || ctx.exec.predication.accumulated
        }
    } else {
        condition
    };
    let predication = &mut ctx.exec.predication;
    if !s.continue_bit {
        predication.not_final = false;
    }
    predication.accumulated = condition;
    predication.skip = !predication.not_final && if s.draw_if_visible { !condition } else { condition };
    Ok(Flow::Continue)
}

fn skip(ctx: &mut Ctx<'_>, skip_dw: u32) -> HandlerResult {
    let remaining = ctx.exec.top().map_or(0, |c| c.remaining_dw());
    if skip_dw > remaining {
        return Err(Box::new(Pm4Error::SkipPastEnd {
            location: ctx.location,
            opcode: ctx.opcode,
            skip_dw,
            remaining_dw: remaining,
        }));
    }
    // Dwords, not packets (§3.10): the cursor moves past them unparsed, so
    // whatever they hold (even a type-1 dword) is never decoded.
    if let Some(cursor) = ctx.exec.top_mut() {
        cursor.offset_dw += skip_dw;
    }
    ctx.state.stats.skipped += 1;
    ctx.state.stats.dwords += u64::from(skip_dw);
    Ok(Flow::Continue)
}

/// COND_EXEC: skip the next EXEC_COUNT dwords when the 32-bit value is 0.
pub(crate) fn cond_exec(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> HandlerResult {
    let c = ctx.decode::<CondExec>(p)?;
    if ctx.read_u32(c.address)? == 0 {
        return skip(ctx, c.exec_count);
    }
    Ok(Flow::Continue)
}

/// PRED_EXEC: the next EXEC_COUNT dwords run only on the devices selected in
/// DEVICE_SELECT; this single device is device 0.
pub(crate) fn pred_exec(ctx: &mut Ctx<'_>, p: &Packet<'_>) -> HandlerResult {
    let PredExec { device_select, exec_count } = ctx.decode(p)?;
    if device_select & 1 == 0 {
        return skip(ctx, exec_count);
    }
    Ok(Flow::Continue)
}
