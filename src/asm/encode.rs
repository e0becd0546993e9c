//! Packets and macros: each statement becomes exactly the dwords it names.
//! The number of dwords never depends on a value, only on the statement's
//! shape, so the first pass can lay out memory before labels are known.

use super::expr::{Eval, Expr};
use super::parse::{Items, Keyed, FLAG_WORDS};
use super::{AsmError, AsmErrorKind};
use crate::packet::body::DmaData;
use crate::packet::{Opcode, COUNT_ONE_DWORD, TYPE2_FILLER};
use crate::regs::db::event_name;
use crate::regs::db::{self, GpuFamily, RegisterSpace};
use crate::regs::space;

/// Largest body a type-3 header can count (COUNT 0x3FFF means one dword).
const MAX_BODY: usize = COUNT_ONE_DWORD as usize;

fn err(line: usize, col: usize, kind: AsmErrorKind) -> AsmError {
    AsmError::new(line, col, kind)
}

/// The operands of one statement, consumed by an encoder; keys nobody asks
/// for are an error.
struct Args<'a, 'e> {
    ev: &'a Eval<'e>,
    items: &'a Items,
    used: Vec<bool>,
    mnemonic: &'a str,
    col: usize,
}

impl<'a, 'e> Args<'a, 'e> {
    fn new(ev: &'a Eval<'e>, items: &'a Items, mnemonic: &'a str, col: usize) -> Self {
        Args { ev, items, used: vec![false; items.keyed.len()], mnemonic, col }
    }

    fn err(&self, col: usize, kind: AsmErrorKind) -> AsmError {
        err(self.ev.line, col, kind)
    }

    fn key(&mut self, names: &[&str]) -> Option<&'a Keyed> {
        let items: &'a Items = self.items;
        let (i, k) = items.keyed.iter().enumerate().find(|(_, k)| names.contains(&k.key.as_str()))?;
        if let Some(u) = self.used.get_mut(i) {
            *u = true;
        }
        Some(k)
    }

    fn present(&self, names: &[&str]) -> bool {
        self.items.keyed.iter().any(|k| names.contains(&k.key.as_str()))
    }

    /// The single value of a key.
    fn single(&mut self, names: &[&str]) -> Result<Option<&'a Expr>, AsmError> {
        let Some(k) = self.key(names) else { return Ok(None) };
        match k.values.as_slice() {
            [one] => Ok(Some(one)),
            [] => Err(self.err(k.col, AsmErrorKind::KeyNeedsValue { key: k.key.clone() })),
            _ => Err(self.err(k.col, AsmErrorKind::KeyTakesOneValue { key: k.key.clone() })),
        }
    }

    /// A number that must fit in `bits` bits.
    fn num(&mut self, names: &[&str], bits: u32, default: u64) -> Result<u64, AsmError> {
        let Some(e) = self.single(names)? else { return Ok(default) };
        let v = self.ev.eval(e)?;
        self.check(v, bits, e.col, names)
    }

    fn check(&self, v: u64, bits: u32, col: usize, names: &[&str]) -> Result<u64, AsmError> {
        if bits < 64 && v >> bits != 0 {
            let name = names.first().copied().unwrap_or("value");
            return Err(self.err(col, AsmErrorKind::FieldTooWide { field: name.to_owned(), value: v, bits }));
        }
        Ok(v)
    }

    /// A name from `table` (case-insensitive) or a number of `bits` bits.
    fn choice(&mut self, names: &[&str], table: &[(&str, u32)], bits: u32, default: u32) -> Result<u32, AsmError> {
        let Some(e) = self.single(names)? else { return Ok(default) };
        if let Some(word) = e.ident() {
            if let Some(&(_, v)) = table.iter().find(|(n, _)| n.eq_ignore_ascii_case(word)) {
                return Ok(v);
            }
        }
        let v = self.ev.eval(e)?;
        Ok(self.check(v, bits, e.col, names)? as u32)
    }

    /// An event: a VGT_EVENT_TYPE name or a number below 64.
    fn event(&mut self, names: &[&str], default: u32) -> Result<u32, AsmError> {
        let Some(e) = self.single(names)? else { return Ok(default) };
        if let Some(word) = e.ident() {
            let by_name = db::register_by_name(self.ev.family, "VGT_EVENT_INITIATOR")
                .and_then(|r| r.field("EVENT_TYPE"))
                .and_then(|f| f.value_by_name(&word.to_ascii_uppercase()));
            if let Some(v) = by_name {
                return Ok(v);
            }
        }
        let v = self.ev.eval(e)?;
        Ok(self.check(v, 6, e.col, names)? as u32)
    }

    fn list(&mut self, names: &[&str]) -> Result<Vec<u32>, AsmError> {
        let Some(k) = self.key(names) else { return Ok(Vec::new()) };
        k.values.iter().map(|e| self.ev.dword(e)).collect()
    }

    /// Header flag bits: `predicate` (bit 0), `compute` (bit 1), `cam` (bit 2).
    fn flags(&mut self) -> Result<u32, AsmError> {
        let mut flags = 0;
        for (i, k) in self.items.keyed.iter().enumerate() {
            let bit = match k.key.as_str() {
                "predicate" => 1,
                "compute" | "shader_type" => 2,
                "cam" | "reset_filter_cam" => 4,
                _ => continue,
            };
            if let Some(u) = self.used.get_mut(i) {
                *u = true;
            }
            let on = match k.values.as_slice() {
                [] => true,
                [one] => self.ev.eval(one)? != 0,
                _ => return Err(self.err(k.col, AsmErrorKind::KeyTakesOneValue { key: k.key.clone() })),
            };
            if on {
                flags |= bit;
            }
        }
        Ok(flags)
    }

    /// `hdr_count=N` forces the header's COUNT field.
    fn header_count(&mut self) -> Result<Option<u32>, AsmError> {
        let Some(e) = self.single(&["hdr_count"])? else { return Ok(None) };
        let v = self.ev.eval(e)?;
        Ok(Some(self.check(v, 14, e.col, &["hdr_count"])? as u32))
    }

    /// True when any key other than flags and `hdr_count` is given.
    fn has_fields(&self) -> bool {
        self.items.keyed.iter().any(|k| !is_header_key(&k.key))
    }

    fn positional(&self) -> &'a [Expr] {
        let items: &'a Items = self.items;
        &items.positional
    }

    fn dwords(&self, exprs: &[Expr]) -> Result<Vec<u32>, AsmError> {
        exprs.iter().map(|e| self.ev.dword(e)).collect()
    }

    fn finish(&self) -> Result<(), AsmError> {
        for (i, (k, used)) in self.items.keyed.iter().zip(&self.used).enumerate() {
            if !used {
                let twice = self.items.keyed.iter().take(i).any(|earlier| earlier.key == k.key);
                let kind = if twice {
                    AsmErrorKind::KeyTwice { key: k.key.clone() }
                } else {
                    AsmErrorKind::NoSuchField { mnemonic: self.mnemonic.to_owned(), key: k.key.clone() }
                };
                return Err(self.err(k.col, kind));
            }
        }
        Ok(())
    }

    fn no_positional(&self) -> Result<(), AsmError> {
        match self.items.positional.first() {
            Some(e) => Err(self.err(e.col, AsmErrorKind::FieldsAndDwords { mnemonic: self.mnemonic.to_owned() })),
            None => Ok(()),
        }
    }
}

fn is_header_key(key: &str) -> bool {
    FLAG_WORDS.contains(&key) || key == "hdr_count"
}

/// A type-3 packet: header (COUNT from the body, or `hdr_count`) and body.
fn type3(
    op: Opcode,
    flags: u32,
    count: Option<u32>,
    body: Vec<u32>,
    line: usize,
    col: usize,
) -> Result<Vec<u32>, AsmError> {
    if body.len() > MAX_BODY && count.is_none() {
        return Err(err(line, col, AsmErrorKind::BodyTooLong { max: MAX_BODY }));
    }
    let count = count.unwrap_or(if body.is_empty() { COUNT_ONE_DWORD } else { body.len() as u32 - 1 });
    let header = 0xC000_0000 | (count << 16) | (u32::from(op.0) << 8) | flags;
    let mut out = Vec::with_capacity(body.len() + 1);
    out.push(header);
    out.extend(body);
    Ok(out)
}

/// Encodes one packet or macro statement.
pub(crate) fn encode(mnemonic: &str, items: &Items, ev: &Eval<'_>, col: usize) -> Result<Vec<u32>, AsmError> {
    let upper = mnemonic.to_ascii_uppercase();
    let line = ev.line;
    let mut a = Args::new(ev, items, mnemonic, col);
    let out = match upper.as_str() {
        "PKT3" => {
            let flags = a.flags()?;
            let count = a.header_count()?;
            let Some((op_expr, body)) = a.positional().split_first() else {
                return Err(err(line, col, AsmErrorKind::Pkt3Operands));
            };
            let op = match op_expr.ident().and_then(Opcode::from_name) {
                Some(op) => op,
                None => Opcode(a.check(ev.eval(op_expr)?, 8, op_expr.col, &["opcode"])? as u8),
            };
            type3(op, flags, count, a.dwords(body)?, line, col)?
        }
        "TYPE0" => {
            let count = a.header_count()?;
            let Some((reg, values)) = a.positional().split_first() else {
                return Err(err(line, col, AsmErrorKind::Type0Operands));
            };
            let base = match ev.register(reg) {
                Some(r) => u64::from(r.offset),
                None => ev.eval(reg)?,
            };
            let base = a.check(base, 16, reg.col, &["register"])? as u32;
            if values.is_empty() && count.is_none() {
                return Err(err(line, col, AsmErrorKind::Type0Empty));
            }
            if values.len() > 0x4000 && count.is_none() {
                return Err(err(line, col, AsmErrorKind::Type0TooLong));
            }
            let count = count.unwrap_or(values.len().saturating_sub(1) as u32);
            let mut out = vec![(count << 16) | base];
            out.extend(a.dwords(values)?);
            out
        }
        "TYPE2" => match a.positional() {
            [] => vec![TYPE2_FILLER],
            [pad] => vec![TYPE2_FILLER | a.check(ev.eval(pad)?, 30, pad.col, &["pad"])? as u32],
            [_, extra, ..] => return Err(err(line, extra.col, AsmErrorKind::Type2Operands)),
        },
        _ => {
            if let Some(out) = macro_op(&upper, &mut a)? {
                out
            } else if let Some(op) = Opcode::from_name(&upper).filter(|_| !upper.starts_with("0X")) {
                opcode(op, &mut a)?
            } else {
                return Err(err(line, col, AsmErrorKind::UnknownMnemonic(mnemonic.to_owned())));
            }
        }
    };
    a.finish()?;
    Ok(out)
}

/// A packet by opcode name: a register write, a field form, or raw dwords.
fn opcode(op: Opcode, a: &mut Args<'_, '_>) -> Result<Vec<u32>, AsmError> {
    let (line, col) = (a.ev.line, a.col);
    let flags = a.flags()?;
    let count = a.header_count()?;
    if let Some(space) = op.register_space().filter(|_| op.writes_register_run()) {
        return set_registers(op, space.base, flags, count, a);
    }
    if !a.has_fields() {
        let body = a.dwords(a.positional())?;
        return type3(op, flags, count, body, line, col);
    }
    a.no_positional()?;
    let body = match op {
        Opcode::WAIT_REG_MEM | Opcode::WAIT_REG_MEM64 => wait_reg_mem(op == Opcode::WAIT_REG_MEM64, a)?,
        Opcode::WRITE_DATA => write_data(a)?,
        Opcode::RELEASE_MEM => release_mem(a)?,
        Opcode::EVENT_WRITE_EOP => event_write_eop(a)?,
        Opcode::EVENT_WRITE => {
            let event = a.event(&["event", "event_type"], 0)?;
            let index = a.num(&["index", "event_index"], 4, 0)? as u32;
            let mut body = vec![event | (index << 8)];
            if let Some(e) = a.single(&["addr"])? {
                let addr = a.ev.eval(e)?;
                body.extend([addr as u32, (addr >> 32) as u32]);
            }
            body
        }
        Opcode::INDIRECT_BUFFER | Opcode::INDIRECT_BUFFER_CONST => {
            let addr = a.num(&["addr", "base"], 64, 0)?;
            let size = a.num(&["size", "ib_size"], 20, 0)? as u32;
            let chain = a.num(&["chain"], 1, 0)? as u32;
            let pre_ena = a.num(&["pre_ena"], 1, 0)? as u32;
            let valid = a.num(&["valid"], 1, 0)? as u32;
            let vmid = a.num(&["vmid"], 4, 0)? as u32;
            vec![
                addr as u32,
                (addr >> 32) as u32,
                size | (chain << 20) | (pre_ena << 21) | (valid << 23) | (vmid << 24),
            ]
        }
        Opcode::COPY_DATA => copy_data(a)?,
        Opcode::DMA_DATA => dma_data(a)?,
        Opcode::ACQUIRE_MEM => {
            let cntl = a.num(&["cntl", "coher_cntl"], 31, 0)? as u32;
            let engine = a.choice(&["engine"], &[("pfp", 0), ("me", 1)], 1, 0)?;
            let size = a.num(&["size", "coher_size"], 56, 0xFF_FFFF_FFFF_FFFF)?;
            let base = a.num(&["base", "coher_base"], 56, 0)?;
            let poll = a.num(&["poll", "poll_interval"], 16, 10)? as u32;
            let mut body =
                vec![cntl | (engine << 31), size as u32, (size >> 32) as u32, base as u32, (base >> 32) as u32, poll];
            // gfx7's ACQUIRE_MEM has no GCR_CNTL dword.
            if a.ev.family == GpuFamily::Gfx103 {
                body.push(a.num(&["gcr", "gcr_cntl"], 19, 0)? as u32);
            }
            body
        }
        Opcode::DISPATCH_DIRECT => {
            let x = a.num(&["x", "dim_x"], 32, 1)? as u32;
            let y = a.num(&["y", "dim_y"], 32, 1)? as u32;
            let z = a.num(&["z", "dim_z"], 32, 1)? as u32;
            let initiator = a.num(&["initiator"], 32, 1)? as u32;
            vec![x, y, z, initiator]
        }
        Opcode::DRAW_INDEX_AUTO => {
            let count = a.num(&["count", "index_count"], 32, 0)? as u32;
            let initiator = a.num(&["initiator"], 32, 2)? as u32;
            vec![count, initiator]
        }
        _ => {
            let name = op.name().unwrap_or("this packet");
            return Err(err(line, col, AsmErrorKind::NoFieldForm(name.to_owned())));
        }
    };
    type3(op, flags, count, body, line, col)
}

/// SET_*_REG: `REGISTER_NAME, values...` (or a raw first dword), `index=N`.
fn set_registers(
    op: Opcode,
    base: u32,
    flags: u32,
    count: Option<u32>,
    a: &mut Args<'_, '_>,
) -> Result<Vec<u32>, AsmError> {
    let (line, col) = (a.ev.line, a.col);
    let index = a.num(&["index"], 4, 0)? as u32;
    let Some((first, values)) = a.positional().split_first() else {
        return type3(op, flags, count, Vec::new(), line, col);
    };
    let dw0 = match a.ev.register(first) {
        Some(reg) => {
            let want = RegisterSpace::of(base);
            if reg.space() != want {
                return Err(err(
                    line,
                    first.col,
                    AsmErrorKind::WrongRegisterSpace {
                        register: reg.name.to_owned(),
                        space: reg.space(),
                        opcode: op,
                        wanted: want,
                    },
                ));
            }
            reg.offset - base
        }
        None => a.ev.dword(first)?,
    };
    let mut body = vec![dw0 | (index << 28)];
    body.extend(a.dwords(values)?);
    type3(op, flags, count, body, line, col)
}

const ENGINES: [(&str, u32); 3] = [("me", 0), ("pfp", 1), ("ce", 2)];

/// An address (`addr=`) or a register (`reg=`): the two dwords it takes.
fn target(a: &mut Args<'_, '_>) -> Result<(bool, u32, u32), AsmError> {
    let has_reg = a.present(&["reg"]);
    if has_reg && a.present(&["addr"]) {
        return Err(a.err(a.col, AsmErrorKind::AddrAndReg));
    }
    if has_reg {
        let reg = a.num(&["reg"], 18, 0)? as u32;
        let reg2 = a.num(&["reg2"], 18, 0)? as u32;
        Ok((true, reg, reg2))
    } else {
        let addr = a.num(&["addr"], 64, 0)?;
        Ok((false, addr as u32, (addr >> 32) as u32))
    }
}

fn wait_reg_mem(is_64: bool, a: &mut Args<'_, '_>) -> Result<Vec<u32>, AsmError> {
    const FUNCTIONS: [(&str, u32); 10] = [
        ("always", 0),
        ("lt", 1),
        ("le", 2),
        ("eq", 3),
        ("ne", 4),
        ("ge", 5),
        ("gt", 6),
        ("less", 1),
        ("equal", 3),
        ("greater", 6),
    ];
    const SPACES: [(&str, u32); 4] = [("reg", 0), ("register", 0), ("mem", 1), ("memory", 1)];
    let function = a.choice(&["function", "func"], &FUNCTIONS, 3, 3)?;
    let (is_reg, d1, d2) = target(a)?;
    let space = a.choice(&["mem", "mem_space", "space"], &SPACES, 2, u32::from(!is_reg))?;
    let operation = a.choice(&["operation", "op"], &[("wait", 0), ("write_wait_write", 1)], 2, 0)?;
    let engine = a.choice(&["engine"], &ENGINES, 2, 0)?;
    let dw0 = function | (space << 4) | (operation << 6) | (engine << 8);
    if is_64 {
        let reference = a.num(&["ref", "reference"], 64, 0)?;
        let mask = a.num(&["mask"], 64, u64::MAX)?;
        let poll = a.num(&["poll", "poll_interval"], 16, 10)? as u32;
        Ok(vec![dw0, d1, d2, reference as u32, (reference >> 32) as u32, mask as u32, (mask >> 32) as u32, poll])
    } else {
        let reference = a.num(&["ref", "reference"], 32, 0)? as u32;
        let mask = a.num(&["mask"], 32, 0xFFFF_FFFF)? as u32;
        let poll = a.num(&["poll", "poll_interval"], 16, 10)? as u32;
        Ok(vec![dw0, d1, d2, reference, mask, poll])
    }
}

fn write_data(a: &mut Args<'_, '_>) -> Result<Vec<u32>, AsmError> {
    const DESTINATIONS: [(&str, u32); 8] = [
        ("reg", 0),
        ("register", 0),
        ("memory_sync", 1),
        ("mem_sync", 1),
        ("tc_l2", 2),
        ("gds", 3),
        ("mem", 5),
        ("memory", 5),
    ];
    let (is_reg, d1, d2) = target(a)?;
    let dst = a.choice(&["dst", "dst_sel"], &DESTINATIONS, 4, if is_reg { 0 } else { 5 })?;
    let one_addr = a.num(&["one_addr", "wr_one_addr"], 1, 0)? as u32;
    let wr_confirm = a.num(&["wr_confirm", "confirm"], 1, 0)? as u32;
    let cache_policy = a.num(&["cache_policy"], 2, 0)? as u32;
    let engine = a.choice(&["engine"], &ENGINES, 2, 0)?;
    let dw0 = (dst << 8) | (one_addr << 16) | (wr_confirm << 20) | (cache_policy << 25) | (engine << 30);
    let mut body = vec![dw0, d1, d2];
    body.extend(a.list(&["data"])?);
    Ok(body)
}

/// DATA_SEL names of the releases.
const DATA_SELECTS: [(&str, u32); 7] =
    [("none", 0), ("data32", 1), ("data64", 2), ("gpu_clock", 3), ("system_clock", 4), ("gds", 5), ("atomic_add32", 7)];

/// What every release form shares: the event and its index, the
/// destination, the interrupt (`int_bits` wide), the data and its select,
/// the address. The data select's default follows `data=`.
struct Release {
    event: u32,
    index: u32,
    dst: u32,
    int_sel: u32,
    data_sel: u32,
    addr: u64,
    data: u64,
}

fn release(a: &mut Args<'_, '_>, int_bits: u32) -> Result<Release, AsmError> {
    let event = a.event(&["event", "event_type"], 0)?;
    let default_index = match event_name(a.ev.family, event) {
        Some(name) if name.ends_with("_TS") || name.ends_with("_TS_EVENT") => 5,
        Some("CS_DONE") | Some("PS_DONE") => 6,
        _ => 0,
    };
    let index = a.num(&["index", "event_index"], 4, default_index)? as u32;
    let dst = a.choice(&["dst", "dst_sel"], &[("mem", 0), ("memory", 0), ("tc_l2", 1)], 2, 0)?;
    let int_sel = a.num(&["int", "int_sel"], int_bits, 0)? as u32;
    let data = a.single(&["data"])?.map(|e| a.ev.eval(e)).transpose()?;
    let default_sel = match data {
        None => 0,
        Some(v) if v > u64::from(u32::MAX) => 2,
        Some(_) => 1,
    };
    let data_sel = a.choice(&["data_sel"], &DATA_SELECTS, 3, default_sel)?;
    let addr = a.num(&["addr"], 64, 0)?;
    Ok(Release { event, index, dst, int_sel, data_sel, addr, data: data.unwrap_or(0) })
}

/// RELEASE_MEM: the gfx10.3 form (COUNT 6, GCR_CNTL, INT_CTXID), or on
/// gfx7 the compute-ring form (COUNT 5: `cache=` the cache-action bits
/// \[27:12\], INT_SEL two bits, no INT_CTXID).
fn release_mem(a: &mut Args<'_, '_>) -> Result<Vec<u32>, AsmError> {
    if a.ev.family == GpuFamily::Gfx7 {
        let cache = a.num(&["cache", "cache_control"], 16, 0)? as u32;
        let r = release(a, 2)?;
        return Ok(vec![
            r.event | (r.index << 8) | (cache << 12),
            (r.dst << 16) | (r.int_sel << 24) | (r.data_sel << 29),
            r.addr as u32,
            (r.addr >> 32) as u32,
            r.data as u32,
            (r.data >> 32) as u32,
        ]);
    }
    let gcr = a.num(&["gcr", "gcr_cntl"], 12, 0)? as u32;
    let cache_policy = a.num(&["cache_policy"], 2, 0)? as u32;
    let execute = a.num(&["execute"], 1, 0)? as u32;
    let r = release(a, 3)?;
    let ctxid = a.num(&["ctxid", "int_ctxid"], 32, 0)? as u32;
    Ok(vec![
        r.event | (r.index << 8) | (gcr << 12) | (cache_policy << 25) | (execute << 28),
        (r.dst << 16) | (r.int_sel << 24) | (r.data_sel << 29),
        r.addr as u32,
        (r.addr >> 32) as u32,
        r.data as u32,
        (r.data >> 32) as u32,
        ctxid,
    ])
}

/// EVENT_WRITE_EOP (the same on both families): `cache=` the cache-action
/// bits \[27:12\] (`gcr=` too, as gfx10.3 names them), INT_SEL two bits,
/// ADDRESS_HI \[15:0\] sharing its dword with DST_SEL, INT_SEL and DATA_SEL.
fn event_write_eop(a: &mut Args<'_, '_>) -> Result<Vec<u32>, AsmError> {
    let cache = a.num(&["cache", "cache_control", "gcr"], 16, 0)? as u32;
    let r = release(a, 2)?;
    let hi = ((r.addr >> 32) as u32) & 0xFFFF;
    Ok(vec![
        r.event | (r.index << 8) | (cache << 12),
        r.addr as u32,
        hi | (r.dst << 16) | (r.int_sel << 24) | (r.data_sel << 29),
        r.data as u32,
        (r.data >> 32) as u32,
    ])
}

fn copy_data(a: &mut Args<'_, '_>) -> Result<Vec<u32>, AsmError> {
    const SOURCES: [(&str, u32); 11] = [
        ("reg", 0),
        ("register", 0),
        ("mem", 1),
        ("memory", 1),
        ("tc_l2", 2),
        ("gds", 3),
        ("perf", 4),
        ("imm", 5),
        ("immediate", 5),
        ("gpu_clock", 9),
        ("system_clock", 10),
    ];
    const DESTINATIONS: [(&str, u32); 8] = [
        ("reg", 0),
        ("register", 0),
        ("memory_sync", 1),
        ("mem_sync", 1),
        ("tc_l2", 2),
        ("gds", 3),
        ("perf", 4),
        ("mem", 5),
    ];
    let src_sel = a.choice(&["src_sel"], &SOURCES, 4, 1)?;
    let dst_sel = a.choice(&["dst_sel"], &DESTINATIONS, 4, 5)?;
    let src = a.num(&["src"], 64, 0)?;
    let dst = a.num(&["dst"], 64, 0)?;
    let count_64 = match a.single(&["count_sel"])? {
        None => 0,
        Some(e) => match a.ev.eval(e)? {
            32 => 0,
            64 => 1,
            _ => return Err(a.err(e.col, AsmErrorKind::CountSel)),
        },
    };
    let wr_confirm = a.num(&["wr_confirm", "confirm"], 1, 0)? as u32;
    let engine = a.choice(&["engine"], &ENGINES, 2, 0)?;
    let dw0 = src_sel | (dst_sel << 8) | (count_64 << 16) | (wr_confirm << 20) | (engine << 30);
    Ok(vec![dw0, src as u32, (src >> 32) as u32, dst as u32, (dst >> 32) as u32])
}

fn dma_data(a: &mut Args<'_, '_>) -> Result<Vec<u32>, AsmError> {
    let data = a.single(&["data"])?.map(|e| a.ev.dword(e)).transpose()?;
    let src_sel = a.choice(
        &["src_sel"],
        &[("addr", 0), ("gds", 1), ("data", 2), ("addr_l2", 3)],
        2,
        if data.is_some() { 2 } else { 0 },
    )?;
    let dst_sel = a.choice(&["dst_sel"], &[("addr", 0), ("gds", 1), ("nowhere", 2), ("addr_l2", 3)], 2, 0)?;
    let engine = a.choice(&["engine"], &[("me", 0), ("pfp", 1)], 1, 0)?;
    let cp_sync = a.num(&["cp_sync"], 1, 0)? as u32;
    let src_cache = a.num(&["src_cache_policy"], 2, 0)? as u32;
    let dst_cache = a.num(&["dst_cache_policy"], 2, 0)? as u32;
    let src = match data {
        Some(d) => u64::from(d),
        None => a.num(&["src"], 64, 0)?,
    };
    let dst = a.num(&["dst"], 64, 0)?;
    // The COMMAND word is the family's (BYTE_COUNT 26 bits on gfx10.3, 21 on gfx7).
    let family = a.ev.family;
    let size_bits = DmaData::max_byte_count(family).count_ones();
    let size = a.num(&["size", "byte_count", "bytes"], size_bits, 0)? as u32;
    let mut flag = |name: &str| -> Result<bool, AsmError> { Ok(a.num(&[name], 1, 0)? != 0) };
    let (sas, das, saic, daic, raw_wait, dis_wc) =
        (flag("sas")?, flag("das")?, flag("saic")?, flag("daic")?, flag("raw_wait")?, flag("dis_wc")?);
    let swaps = match family {
        GpuFamily::Gfx7 => (a.num(&["src_swap"], 2, 0)? as u32, a.num(&["dst_swap"], 2, 0)? as u32),
        GpuFamily::Gfx103 => (0, 0),
    };
    let body = DmaData {
        engine,
        src_sel,
        dst_sel,
        cp_sync: cp_sync != 0,
        cache_policies: (src_cache, dst_cache),
        src,
        dst,
        byte_count: size,
        src_is_register: sas,
        dst_is_register: das,
        src_no_increment: saic,
        dst_no_increment: daic,
        raw_wait,
        disable_write_confirm: dis_wc,
        swaps,
    };
    // The address dwords as written (a 64-bit value's high half as given).
    Ok(vec![body.word0(), src as u32, (src >> 32) as u32, dst as u32, (dst >> 32) as u32, body.command(family)])
}

/// The register named `name`, or an error at `col`.
fn named_register(a: &Args<'_, '_>, name: &str, col: usize) -> Result<u32, AsmError> {
    super::names::register(a.ev.family, name).map(|r| r.offset).ok_or_else(|| {
        let kind = match super::names::nearest_register(a.ev.family, name) {
            Some(register) => AsmErrorKind::UndefinedNameNearRegister { name: name.to_owned(), register },
            None => AsmErrorKind::UnknownRegister { family: a.ev.family, name: name.to_owned() },
        };
        a.err(col, kind)
    })
}

/// A register's offset from the SH space base.
fn sh_offset(a: &Args<'_, '_>, reg: u32, col: usize) -> Result<u32, AsmError> {
    reg.checked_sub(space::SH).filter(|&o| o < space::SH_SIZE).ok_or_else(|| a.err(col, AsmErrorKind::NotShRegister))
}

/// A shader stage word of a macro (`ps`, `vs`, `gs`, `es`, `hs`, `ls`, `cs`).
fn stage(a: &Args<'_, '_>, e: Option<&Expr>) -> Result<(String, usize), AsmError> {
    let Some(e) = e else { return Err(a.err(a.col, AsmErrorKind::StageMissing { mnemonic: a.mnemonic.to_owned() })) };
    match e.ident().map(|s| s.to_ascii_lowercase()) {
        Some(s) if ["ps", "vs", "gs", "es", "hs", "ls", "cs"].contains(&s.as_str()) => Ok((s, e.col)),
        _ => Err(a.err(e.col, AsmErrorKind::UnknownStage)),
    }
}

fn arg<'x>(a: &Args<'_, '_>, args: &'x [Expr], i: usize, what: &'static str) -> Result<&'x Expr, AsmError> {
    args.get(i).ok_or_else(|| a.err(a.col, AsmErrorKind::MacroOperandMissing { mnemonic: a.mnemonic.to_owned(), what }))
}

fn macro_arity(a: &Args<'_, '_>, args: &[Expr], n: usize) -> Result<(), AsmError> {
    match args.get(n) {
        Some(extra) => Err(a.err(extra.col, AsmErrorKind::MacroOperands { mnemonic: a.mnemonic.to_owned(), count: n })),
        None => Ok(()),
    }
}

/// The macros: common sequences spelled out as their packets.
fn macro_op(upper: &str, a: &mut Args<'_, '_>) -> Result<Option<Vec<u32>>, AsmError> {
    let (line, col) = (a.ev.line, a.col);
    let args = a.positional();
    let out = match upper {
        "SET_PROGRAM" => {
            macro_arity(a, args, 2)?;
            let (stage, stage_col) = stage(a, args.first())?;
            let name = if stage == "cs" {
                "COMPUTE_PGM_LO".to_owned()
            } else {
                format!("SPI_SHADER_PGM_LO_{}", stage.to_ascii_uppercase())
            };
            let reg = named_register(a, &name, stage_col)?;
            let addr = a.ev.eval(arg(a, args, 1, "an address")?)?;
            let flags = a.flags()?;
            let offset = sh_offset(a, reg, stage_col)?;
            let body = vec![offset, (addr >> 8) as u32, ((addr >> 40) & 0xFF) as u32];
            type3(Opcode::SET_SH_REG, flags, None, body, line, col)?
        }
        "SET_USER_DATA" => {
            let (stage, stage_col) = stage(a, args.first())?;
            let name = if stage == "cs" {
                "COMPUTE_USER_DATA_0".to_owned()
            } else {
                format!("SPI_SHADER_USER_DATA_{}_0", stage.to_ascii_uppercase())
            };
            let reg = named_register(a, &name, stage_col)?;
            let index_expr = arg(a, args, 1, "a user-data index")?;
            let index = a.check(a.ev.eval(index_expr)?, 5, index_expr.col, &["index"])? as u32;
            let values = a.dwords(args.get(2..).unwrap_or(&[]))?;
            if values.is_empty() {
                return Err(a.err(col, AsmErrorKind::UserDataEmpty));
            }
            let flags = a.flags()?;
            let mut body = vec![sh_offset(a, reg, stage_col)? + index];
            body.extend(values);
            type3(Opcode::SET_SH_REG, flags, None, body, line, col)?
        }
        "WRITE_WAIT" => {
            macro_arity(a, args, 2)?;
            let addr = a.ev.eval(arg(a, args, 0, "an address")?)?;
            let value = a.ev.dword(arg(a, args, 1, "a value")?)?;
            let (lo, hi) = (addr as u32, (addr >> 32) as u32);
            let mut out = type3(Opcode::WRITE_DATA, 0, None, vec![(5 << 8) | (1 << 20), lo, hi, value], line, col)?;
            out.extend(type3(
                Opcode::WAIT_REG_MEM,
                0,
                None,
                vec![3 | (1 << 4), lo, hi, value, 0xFFFF_FFFF, 10],
                line,
                col,
            )?);
            out
        }
        "FENCE" => {
            macro_arity(a, args, 2)?;
            let addr = a.ev.eval(arg(a, args, 0, "an address")?)?;
            let value = a.ev.dword(arg(a, args, 1, "a value")?)?;
            let event = db::register_by_name(a.ev.family, "VGT_EVENT_INITIATOR")
                .and_then(|r| r.field("EVENT_TYPE"))
                .and_then(|f| f.value_by_name("BOTTOM_OF_PIPE_TS"))
                .unwrap_or(40);
            match a.ev.family {
                GpuFamily::Gfx103 => {
                    let body = vec![event | (5 << 8), 1 << 29, addr as u32, (addr >> 32) as u32, value, 0, 0];
                    type3(Opcode::RELEASE_MEM, 0, None, body, line, col)?
                }
                // gfx7's graphics ring has no RELEASE_MEM: its fence is EVENT_WRITE_EOP.
                GpuFamily::Gfx7 => {
                    let hi = ((addr >> 32) as u32 & 0xFFFF) | (1 << 29);
                    let body = vec![event | (5 << 8), addr as u32, hi, value, 0];
                    type3(Opcode::EVENT_WRITE_EOP, 0, None, body, line, col)?
                }
            }
        }
        "IB" | "CHAIN" => {
            macro_arity(a, args, 2)?;
            let addr = a.ev.eval(arg(a, args, 0, "an address")?)?;
            let size_expr = arg(a, args, 1, "a size in dwords")?;
            let size = a.check(a.ev.eval(size_expr)?, 20, size_expr.col, &["size"])? as u32;
            let chain = u32::from(upper == "CHAIN");
            let body = vec![addr as u32, (addr >> 32) as u32, size | (chain << 20) | (1 << 23)];
            type3(Opcode::INDIRECT_BUFFER, 0, None, body, line, col)?
        }
        "DISPATCH" => {
            macro_arity(a, args, 3)?;
            let mut body = Vec::with_capacity(4);
            for i in 0..3 {
                body.push(a.ev.dword(arg(a, args, i, "three dimensions")?)?);
            }
            body.push(1);
            type3(Opcode::DISPATCH_DIRECT, 2, None, body, line, col)?
        }
        "DRAW" => {
            macro_arity(a, args, 1)?;
            let count = a.ev.dword(arg(a, args, 0, "an index count")?)?;
            type3(Opcode::DRAW_INDEX_AUTO, 0, None, vec![count, 2], line, col)?
        }
        _ => return Ok(None),
    };
    Ok(Some(out))
}
