//! NOP and the packets whose body layout the reference does not give.

use super::{Body, BodyError, Words};
use crate::packet::field::{BodyField, FieldValue as V};
use crate::packet::Opcode;

/// The NOP payload conventions, keyed by the high 16 bits of the first
/// body dword (the processor's custom-NOP table gives each its handler).
pub const NOP_CONVENTIONS: [(u16, &str); 5] = [
    (0x6875, "console marker"),
    (0xCAFE, "trace point"),
    (0x1337, "comment"),
    (0x3337, "binary blob"),
    (0x504D, "host command"),
];

/// The convention a NOP payload follows, by the payload's first dword.
pub fn nop_convention(first_body_dword: u32) -> Option<&'static str> {
    let key = (first_body_dword >> 16) as u16;
    NOP_CONVENTIONS.iter().find(|(k, _)| *k == key).map(|(_, name)| *name)
}

/// NOP (0x10): a payload the CP skips; some payloads follow a convention
/// ([`nop_convention`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nop<'a> {
    /// Every body dword.
    pub payload: &'a [u32],
}

impl<'a> Body<'a> for Nop<'a> {
    fn decode_body(_: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        Ok(Nop { payload: body })
    }

    fn opcode(&self) -> Opcode {
        Opcode::NOP
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(self.payload);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        if self.payload.is_empty() {
            return;
        }
        if let Some(name) = self.payload.first().and_then(|&d| nop_convention(d)) {
            out.push(BodyField::new("CONVENTION", V::Quoted(name)));
        }
        out.push(BodyField::new("PAYLOAD_DWORDS", V::Dec(self.payload.len() as u64)));
    }
}

/// A packet whose body layout the reference does not give
/// (WAIT_FOR_WRITE_CONFIRM): its dwords as they are, listed as `BODY`.
///
/// ```
/// use pm4core::packet::body::{Body, Opaque};
/// use pm4core::packet::Opcode;
///
/// let o = Opaque::decode_body(Opcode::WAIT_FOR_WRITE_CONFIRM, &[1, 2])?;
/// assert_eq!(o.to_string(), "BODY=0x1,0x2");
/// # Ok::<(), pm4core::packet::body::BodyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opaque<'a> {
    pub opcode: Opcode,
    /// The body dwords, as they are.
    pub dwords: &'a [u32],
}

impl<'a> Body<'a> for Opaque<'a> {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let _ = Words::new(opcode, body);
        Ok(Opaque { opcode, dwords: body })
    }

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(self.dwords);
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([BodyField::new("BODY", V::HexList(self.dwords))])
    }
}

super::display_from_fields!(Nop<'_>, Opaque<'_>);
