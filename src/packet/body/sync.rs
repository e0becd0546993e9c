//! Waiting and predication: WAIT_REG_MEM(64), MEM_SEMAPHORE, REWIND,
//! SET_PREDICATION, COND_EXEC, PRED_EXEC.

use super::{addr_hi, bit, bits, engine_name, hi32, lo32, put, qword, Body, BodyError, CompareFunction, Words};
use crate::memory::address_from_dwords;
use crate::packet::field::{BodyField, FieldValue as V};
use crate::packet::Opcode;
use crate::regs::db::GpuFamily;

/// Where WAIT_REG_MEM polls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollTarget {
    /// A memory address.
    Memory(u64),
    /// An absolute dword register index.
    Register(u32),
}

/// WAIT_REG_MEM (0x3C) and WAIT_REG_MEM64 (0x93).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitRegMem {
    pub function: CompareFunction,
    pub target: PollTarget,
    /// OPERATION: 0 wait, 1 write-wait-write (PFP, registers), 3 preemptable wait.
    pub operation: u32,
    pub engine: u32,
    pub reference: u64,
    pub mask: u64,
    pub poll_interval: u32,
    pub is_64: bool,
    /// Second register of OPERATION 1 (REG_WRITE_ADDR2); 0 for a memory poll.
    pub write_register2: u32,
}

impl WaitRegMem {
    /// Waits until `(*address & mask) function reference` (32-bit).
    pub fn memory(address: u64, function: CompareFunction, reference: u32, mask: u32) -> Self {
        WaitRegMem {
            function,
            target: PollTarget::Memory(address),
            operation: 0,
            engine: 0,
            reference: reference.into(),
            mask: mask.into(),
            poll_interval: 4,
            is_64: false,
            write_register2: bits(hi32(address), 0, 17),
        }
    }
}

impl<'a> Body<'a> for WaitRegMem {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let d0 = w.dw(0)?;
        let is_64 = opcode == Opcode::WAIT_REG_MEM64;
        let memory = bits(d0, 4, 5) != 0;
        let target = if memory {
            PollTarget::Memory(address_from_dwords(w.dw(1)?, w.dw(2)?, if is_64 { 3 } else { 2 }))
        } else {
            PollTarget::Register(bits(w.dw(1)?, 0, 17))
        };
        let (reference, mask, poll) = if is_64 {
            (qword(w.dw(3)?, w.dw(4)?), qword(w.dw(5)?, w.dw(6)?), w.dw(7)?)
        } else {
            (u64::from(w.dw(3)?), u64::from(w.dw(4)?), w.dw(5)?)
        };
        Ok(Self {
            function: CompareFunction::from_bits(d0),
            target,
            operation: bits(d0, 6, 7),
            engine: bits(d0, 8, 9),
            reference,
            mask,
            poll_interval: bits(poll, 0, 15),
            is_64,
            write_register2: if memory { 0 } else { bits(w.dw(2)?, 0, 17) },
        })
    }

    fn opcode(&self) -> Opcode {
        if self.is_64 {
            Opcode::WAIT_REG_MEM64
        } else {
            Opcode::WAIT_REG_MEM
        }
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        let (space, lo, hi) = match self.target {
            PollTarget::Memory(a) => (1, lo32(a), addr_hi(a)),
            PollTarget::Register(r) => (0, r, self.write_register2),
        };
        out.extend_from_slice(&[
            self.function.to_bits() | put(space, 4, 5) | put(self.operation, 6, 7) | put(self.engine, 8, 9),
            lo,
            hi,
        ]);
        if self.is_64 {
            out.extend_from_slice(&[lo32(self.reference), hi32(self.reference), lo32(self.mask), hi32(self.mask)]);
        } else {
            out.extend_from_slice(&[lo32(self.reference), lo32(self.mask)]);
        }
        out.push(put(self.poll_interval, 0, 15));
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        match self.target {
            PollTarget::Memory(a) => {
                out.push(BodyField::new("MEM_SPACE", V::Name("memory")));
                out.push(BodyField::new("ADDR", V::Hex(a)));
            }
            PollTarget::Register(r) => {
                out.push(BodyField::new("MEM_SPACE", V::Name("register")));
                out.push(BodyField::new("REG", V::Hex(r.into())));
            }
        }
        out.extend([
            BodyField::new("FUNCTION", V::Name(self.function.name())),
            BodyField::new("REFERENCE", V::Hex(self.reference)),
            BodyField::new("MASK", V::Hex(self.mask)),
            BodyField::new("OPERATION", V::Dec(self.operation.into())),
            BodyField::new("ENGINE", V::Name(engine_name(self.engine))),
            BodyField::new("POLL_INTERVAL", V::Dec(self.poll_interval.into())),
        ]);
        if let PollTarget::Register(r) = self.target {
            out.push(BodyField::new("REG_NAME", V::Register(r)));
        }
    }
}

/// MEM_SEMAPHORE (0x39): gfx10 (COUNT 2) and gfx7 (COUNT 1) forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemSemaphore {
    pub address: u64,
    /// SIGNAL_TYPE: false = increment, true = write 1.
    pub write_one: bool,
    /// SEM_SEL: 6 signal, 7 wait.
    pub sem_sel: u32,
    /// The gfx7 form: address high bits share the control dword.
    pub legacy: bool,
}

impl<'a> Body<'a> for MemSemaphore {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let lo = w.dw(0)?;
        let legacy = w.len() < 3;
        let (hi, control) = if legacy { (bits(w.dw(1)?, 0, 15), w.dw(1)?) } else { (w.dw(1)?, w.dw(2)?) };
        Ok(Self {
            address: address_from_dwords(lo, hi, 3),
            write_one: bit(control, 20),
            sem_sel: bits(control, 29, 31),
            legacy,
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::MEM_SEMAPHORE
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        let control = put(self.write_one.into(), 20, 20) | put(self.sem_sel, 29, 31);
        if self.legacy {
            out.extend_from_slice(&[lo32(self.address), put(hi32(self.address), 0, 15) | control]);
        } else {
            out.extend_from_slice(&[lo32(self.address), addr_hi(self.address), control]);
        }
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let sel = match self.sem_sel {
            6 => "signal",
            7 => "wait",
            _ => "reserved",
        };
        out.extend([
            BodyField::new("ADDR", V::Hex(self.address)),
            BodyField::new("SEM_SEL", V::Name(sel)),
            BodyField::new("SIGNAL_TYPE", V::Flag(self.write_one)),
        ])
    }
}

/// REWIND (0x59): the CP waits until the producer sets VALID in this body
/// dword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rewind {
    /// OFFLOAD_ENABLE, bit 24.
    pub offload_enable: bool,
    /// VALID, bit 31.
    pub valid: bool,
}

impl<'a> Body<'a> for Rewind {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let d0 = Words::new(opcode, body).dw(0)?;
        Ok(Self { offload_enable: bit(d0, 24), valid: bit(d0, 31) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::REWIND
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(put(self.offload_enable.into(), 24, 24) | put(self.valid.into(), 31, 31));
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("OFFLOAD_ENABLE", V::Flag(self.offload_enable)),
            BodyField::new("VALID", V::Flag(self.valid)),
        ])
    }
}

/// SET_PREDICATION (0x20): gfx9+ (COUNT 2) and gfx7 (COUNT 1) forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetPredication {
    /// PRED_BOOL: true = draw if visible / no overflow.
    pub draw_if_visible: bool,
    /// HINT: true = draw if the ZPASS data is not final yet.
    pub draw_if_not_final: bool,
    /// PRED_OP: 0 clear, 1 ZPASS, 2 PRIMCOUNT, 3 bool64, 4 bool32.
    pub op: u32,
    pub continue_bit: bool,
    pub address: u64,
    /// The gfx7 form: address first, flags with the address high bits.
    pub legacy: bool,
}

impl<'a> Body<'a> for SetPredication {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let legacy = w.len() < 3;
        let (flags, address) = if legacy {
            let d1 = w.dw(1)?;
            (d1, address_from_dwords(w.dw(0)?, bits(d1, 0, 7), 2))
        } else {
            (w.dw(0)?, address_from_dwords(w.dw(1)?, w.dw(2)?, 2))
        };
        Ok(Self {
            draw_if_visible: bit(flags, 8),
            draw_if_not_final: bit(flags, 12),
            op: bits(flags, 16, 18),
            continue_bit: bit(flags, 31),
            address,
            legacy,
        })
    }

    fn opcode(&self) -> Opcode {
        Opcode::SET_PREDICATION
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        let flags = put(self.draw_if_visible.into(), 8, 8)
            | put(self.draw_if_not_final.into(), 12, 12)
            | put(self.op, 16, 18)
            | put(self.continue_bit.into(), 31, 31);
        if self.legacy {
            out.extend_from_slice(&[lo32(self.address), flags | put(hi32(self.address), 0, 7)]);
        } else {
            out.extend_from_slice(&[flags, lo32(self.address), addr_hi(self.address)]);
        }
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        let op = match self.op {
            0 => "clear",
            1 => "zpass",
            2 => "primcount",
            3 => "bool64",
            4 => "bool32",
            _ => "reserved",
        };
        out.extend([
            BodyField::new("PRED_OP", V::Name(op)),
            BodyField::new(
                "PRED_BOOL",
                V::Name(if self.draw_if_visible { "draw_visible" } else { "draw_not_visible" }),
            ),
            BodyField::new("HINT", V::Flag(self.draw_if_not_final)),
            BodyField::new("CONTINUE", V::Flag(self.continue_bit)),
            BodyField::new("ADDR", V::Hex(self.address)),
        ])
    }
}

/// COND_EXEC (0x22): CIK+ (COUNT 3) and gfx6 (COUNT 2) forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CondExec {
    pub address: u64,
    pub exec_count: u32,
    /// The gfx6 form (EXEC_COUNT in dword 2).
    pub legacy: bool,
    /// Body dword 2 of the CIK+ form, kept as it is: gfx7's CONTROL
    /// \[31:28\] (0 = discard the skipped dwords), reserved on gfx10.3
    /// (CACHE_POLICY \[26:25\] on compute rings). 0 in the gfx6 form.
    pub control: u32,
}

impl CondExec {
    /// Skips `exec_count` dwords when the 32-bit value at `address` is 0.
    pub fn new(address: u64, exec_count: u32) -> Self {
        CondExec { address, exec_count, legacy: false, control: 0 }
    }
}

impl<'a> Body<'a> for CondExec {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let w = Words::new(opcode, body);
        let address = address_from_dwords(w.dw(0)?, bits(w.dw(1)?, 0, 15), 2);
        let legacy = w.len() < 4;
        let (control, exec_count) = if legacy { (0, w.dw(2)?) } else { (w.dw(2)?, w.dw(3)?) };
        Ok(Self { address, exec_count: bits(exec_count, 0, 13), legacy, control })
    }

    fn opcode(&self) -> Opcode {
        Opcode::COND_EXEC
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&[lo32(self.address), put(hi32(self.address), 0, 15)]);
        if !self.legacy {
            out.push(self.control);
        }
        out.push(put(self.exec_count, 0, 13));
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("ADDR", V::Hex(self.address)),
            BodyField::new("EXEC_COUNT", V::Dec(self.exec_count.into())),
        ])
    }

    /// gfx7 also lists CONTROL (dw2 \[31:28\]).
    fn fields_into_for(&self, family: GpuFamily, out: &mut Vec<BodyField<'a>>) {
        self.fields_into(out);
        if family == GpuFamily::Gfx7 && !self.legacy {
            out.push(BodyField::new("CONTROL", V::Dec(bits(self.control, 28, 31).into())));
        }
    }
}

/// PRED_EXEC (0x23): the next EXEC_COUNT dwords run only on the devices
/// DEVICE_SELECT names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PredExec {
    /// DEVICE_SELECT, dw0 \[31:24\].
    pub device_select: u32,
    /// EXEC_COUNT, dw0 \[13:0\].
    pub exec_count: u32,
}

impl<'a> Body<'a> for PredExec {
    fn decode_body(opcode: Opcode, body: &'a [u32]) -> Result<Self, BodyError> {
        let d0 = Words::new(opcode, body).dw(0)?;
        Ok(Self { device_select: bits(d0, 24, 31), exec_count: bits(d0, 0, 13) })
    }

    fn opcode(&self) -> Opcode {
        Opcode::PRED_EXEC
    }

    fn encode_body(&self, out: &mut Vec<u32>) {
        out.push(put(self.exec_count, 0, 13) | put(self.device_select, 24, 31));
    }

    fn fields_into(&self, out: &mut Vec<BodyField<'a>>) {
        out.extend([
            BodyField::new("DEVICE_SELECT", V::Hex(self.device_select.into())),
            BodyField::new("EXEC_COUNT", V::Dec(self.exec_count.into())),
        ])
    }
}

super::display_from_fields!(WaitRegMem, MemSemaphore, Rewind, SetPredication, CondExec, PredExec);
