//! NOP and its payload conventions (the custom-NOP table), plus packets
//! whose effect on a serial emulator is nothing.
//!
//! A NOP's first body dword selects a convention through [`CUSTOM_NOPS`],
//! a compile-time table keyed by the dword's high 16 bits:
//! - `0x6875xxxx`: the console drivers' markers and flip requests, id in
//!   the low 12 bits (push/pop/set marker, V#/T#/S# hints, flips);
//! - `0xCAFExxxx` (COUNT 0): a driver trace point with id `xxxx`;
//! - `0x1337F77D` / `0x3337F77D`: comment text / binary blob packets;
//! - [`HOST_COMMAND_SIGNATURE`]` | code`: host commands the embedding
//!   emulator registered in [`crate::processor::ProcessorConfig::host_commands`].
//!
//! A NOP with any other payload is a plain NOP. Before the conventions, a
//! NOP the embedder's private-packet table matches
//! ([`crate::processor::ProcessorConfig::private_packets`]) goes to
//! [`crate::backend::Backend::private_packet`]; a one-dword pad (bits
//! \[7:2\] clear, as the view loop passes them) never does.

use crate::backend::{Flip, Marker};
use crate::memory::address_from_dwords;
use crate::processor::view::context::{Ctx, HandlerResult, Step};
use crate::processor::{HostCommand, Pm4Error, HOST_COMMAND_SIGNATURE};

/// A convention's handler: the NOP's body and its first dword.
type NopHandler = fn(&mut Ctx<'_>, &[u32], u32) -> Result<(), Pm4Error>;

/// A payload convention: the high 16 bits of the first body dword.
pub(crate) struct CustomNop {
    pub key: u16,
    pub handler: NopHandler,
}

/// The custom-NOP table.
pub(crate) const CUSTOM_NOPS: [CustomNop; 5] = [
    CustomNop { key: 0x6875, handler: console_marker },
    CustomNop { key: 0xCAFE, handler: trace_point },
    CustomNop { key: 0x1337, handler: comment },
    CustomNop { key: 0x3337, handler: blob },
    CustomNop { key: (HOST_COMMAND_SIGNATURE >> 16) as u16, handler: host_command },
];

/// The convention a NOP payload follows, by name: the names live with the
/// NOP body ([`crate::packet::body::NOP_CONVENTIONS`]).
pub fn convention_name(first_body_dword: u32) -> Option<&'static str> {
    crate::packet::body::nop_convention(first_body_dword)
}

pub(crate) fn nop(ctx: &mut Ctx<'_>, body: &[u32]) -> HandlerResult {
    if super::private_packet(ctx, body) {
        return Ok(Step::Next);
    }
    if let Some(&first) = body.first() {
        let key = (first >> 16) as u16;
        if let Some(c) = CUSTOM_NOPS.iter().find(|c| c.key == key) {
            (c.handler)(ctx, body, first)?;
        }
    }
    Ok(Step::Next)
}

/// Packets with no effect on a serial emulator (declared `Nothing` in
/// `processor::opcodes`: PFP_SYNC_ME, PREAMBLE_CNTL, PRIME_UTCL2,
/// SWITCH_BUFFER, FRAME_CONTROL, WAIT_FOR_WRITE_CONFIRM).
pub(crate) fn no_effect(_: &mut Ctx<'_>, _: &[u32]) -> HandlerResult {
    Ok(Step::Next)
}

/// Text packed four bytes per dword after `skip` body dwords, up to a NUL.
fn packed_text<'a>(body: &[u32], skip: usize, buf: &'a mut [u8; 256]) -> &'a str {
    let mut n = 0;
    'outer: for word in body.iter().skip(skip) {
        for b in word.to_le_bytes() {
            if b == 0 || n == buf.len() {
                break 'outer;
            }
            buf[n] = b;
            n += 1;
        }
    }
    let bytes = &buf[..n];
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
    }
}

fn console_marker(ctx: &mut Ctx<'_>, body: &[u32], first: u32) -> Result<(), Pm4Error> {
    let id = first & 0xFFF;
    let queue = ctx.state.queue;
    let mut buf = [0u8; 256];
    match id {
        0x001 | 0x00E => {
            let skip = if id == 0x00E { 2 } else { 1 };
            let text = packed_text(body, skip, &mut buf);
            ctx.backend.marker(queue, &Marker::Push(text));
        }
        0x002 => ctx.backend.marker(queue, &Marker::Pop),
        0x003 => {
            let text = packed_text(body, 1, &mut buf);
            ctx.backend.marker(queue, &Marker::Set(text));
        }
        0x776 | 0x777 | 0x778 | 0x780 | 0x781 => {
            let label = match (body.get(1), body.get(2), body.get(3)) {
                (Some(lo), Some(hi), Some(value)) if id == 0x778 || id == 0x781 => {
                    Some((address_from_dwords(*lo, *hi, 2), u64::from(*value)))
                }
                _ => None,
            };
            if let Some((address, value)) = label {
                ctx.write_u32(address, value as u32)?;
            }
            ctx.backend.flip(&Flip { queue, kind: id, label, location: ctx.location() });
        }
        _ => ctx.backend.marker(queue, &Marker::Hint(id)),
    }
    Ok(())
}

fn trace_point(ctx: &mut Ctx<'_>, body: &[u32], first: u32) -> Result<(), Pm4Error> {
    if body.len() == 1 {
        ctx.backend.marker(ctx.state.queue, &Marker::TracePoint(first & 0xFFFF));
    }
    Ok(())
}

fn comment(ctx: &mut Ctx<'_>, body: &[u32], first: u32) -> Result<(), Pm4Error> {
    // 0x1337F77D, byte length, type (7 = text), then the text.
    if first == 0x1337_F77D && body.get(2) == Some(&7) {
        let mut buf = [0u8; 256];
        let len = body.get(1).copied().unwrap_or(0) as usize;
        let text = packed_text(body, 3, &mut buf);
        let text = text.get(..len.min(text.len())).unwrap_or(text);
        ctx.backend.marker(ctx.state.queue, &Marker::Comment(text));
    }
    Ok(())
}

fn blob(_: &mut Ctx<'_>, _: &[u32], _: u32) -> Result<(), Pm4Error> {
    Ok(())
}

fn host_command(ctx: &mut Ctx<'_>, body: &[u32], first: u32) -> Result<(), Pm4Error> {
    let code = (first & 0xFFFF) as u16;
    let Some(&(_, command)) = ctx.state.config.host_commands.iter().find(|(c, _)| *c == code) else {
        return Ok(());
    };
    let queue = ctx.state.queue;
    let payload = body.get(1..).unwrap_or(&[]);
    match command {
        HostCommand::Flip => {
            let label = match payload {
                [lo, hi, value, ..] => Some((address_from_dwords(*lo, *hi, 2), u64::from(*value))),
                _ => None,
            };
            if let Some((address, value)) = label {
                ctx.write_u32(address, value as u32)?;
            }
            ctx.backend.flip(&Flip { queue, kind: u32::from(code), label, location: ctx.location() });
        }
        HostCommand::PushMarker => {
            let mut buf = [0u8; 256];
            let text = packed_text(body, 1, &mut buf);
            ctx.backend.marker(queue, &Marker::Push(text));
        }
        HostCommand::PopMarker => ctx.backend.marker(queue, &Marker::Pop),
        HostCommand::ContextPush => super::registers::push_context(ctx.state),
        HostCommand::ContextPop => super::registers::pop_context(ctx.state),
        HostCommand::Custom => ctx.backend.host_command(queue, u32::from(code), payload),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::CUSTOM_NOPS;
    use crate::packet::body::NOP_CONVENTIONS;

    #[test]
    fn every_handled_convention_has_its_name_and_no_other() {
        let handled: Vec<u16> = CUSTOM_NOPS.iter().map(|c| c.key).collect();
        let named: Vec<u16> = NOP_CONVENTIONS.iter().map(|(k, _)| *k).collect();
        assert_eq!(handled, named);
    }
}
