//! The two passes: layout (addresses of labels and regions, sizes of every
//! statement) and emission (values, bytes and the trace's chunks).

use super::encode::encode;
use super::expr::{Eval, Expr, Label, Symbols};
use super::parse::{ByteItem, Data, Line, QueueSpec, Stmt};
use super::{AsmError, AsmErrorKind};
use crate::regs::db::GpuFamily;
use crate::trace::{Tag, TraceWriter};

/// Most bytes the blocks of one source may hold in total.
pub(crate) const MAX_BYTES: u64 = 64 << 20;

/// Where the first `.mem` without an address goes.
pub(crate) const DEFAULT_BASE: u64 = 0x10_0000;

/// Alignment of a `.mem` without an address.
const AUTO_ALIGN: u64 = 0x100;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockKind {
    Mem,
    Write,
    Ancillary,
}

struct Block {
    kind: BlockKind,
    line: usize,
    col: usize,
    /// Address of the first byte when known (`.mem` always, `.write` in the
    /// second pass).
    base: Option<u64>,
    len: u64,
    /// Labels inside (name, offset) and on the `.mem` line.
    labels: Vec<(String, u64)>,
    region_labels: Vec<String>,
    bytes: Vec<u8>,
    tag: [u8; 4],
}

impl Block {
    fn new(kind: BlockKind, line: &Line, base: Option<u64>) -> Block {
        Block {
            kind,
            line: line.number,
            col: line.col,
            base,
            len: 0,
            labels: Vec::new(),
            region_labels: Vec::new(),
            bytes: Vec::new(),
            tag: [0; 4],
        }
    }

    fn here(&self) -> Option<u64> {
        self.base.map(|b| b.wrapping_add(self.len))
    }
}

fn err(line: usize, col: usize, kind: AsmErrorKind) -> AsmError {
    AsmError::new(line, col, kind)
}

/// What the first pass learned.
pub(crate) struct Layout {
    pub symbols: Symbols,
    /// Address of each `.mem`, in source order.
    mem_bases: Vec<u64>,
    /// Size of each data statement, in source order.
    sizes: Vec<u64>,
}

/// Family tracking shared by both passes: `.gpu` wins, else the first
/// `.info gpu=` naming a known family, else gfx10.3.
#[derive(Clone, Copy)]
struct FamilyState {
    family: GpuFamily,
    explicit: bool,
    from_info: bool,
}

impl FamilyState {
    fn new() -> Self {
        FamilyState { family: GpuFamily::Gfx103, explicit: false, from_info: false }
    }

    fn apply(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::Gpu(f) => {
                self.family = *f;
                self.explicit = true;
            }
            Stmt::Info { key, value } if key == "gpu" && !self.explicit && !self.from_info => {
                if let Ok(f) = value.trim().parse() {
                    self.family = f;
                    self.from_info = true;
                }
            }
            _ => {}
        }
    }
}

fn define(symbols: &mut Symbols, name: &str, label: Label, line: usize, col: usize) -> Result<(), AsmError> {
    if symbols.defines(name) {
        return Err(err(line, col, AsmErrorKind::AlreadyDefined(name.to_owned())));
    }
    symbols.labels.insert(name.to_owned(), label);
    Ok(())
}

fn outside_block(block: &Option<Block>, line: &Line, what: &'static str) -> Result<(), AsmError> {
    match block {
        Some(b) => Err(err(line.number, line.col, AsmErrorKind::InsideBlock { directive: what, opened_on: b.line })),
        None => Ok(()),
    }
}

fn strict<'s>(symbols: &'s Symbols, family: GpuFamily, line: usize, here: Option<u64>) -> Eval<'s> {
    Eval { symbols, family, here, lenient: false, line }
}

/// Pass 1: labels, regions and sizes.
pub(crate) fn layout(lines: &[Line]) -> Result<Layout, AsmError> {
    let mut symbols = Symbols::default();
    let mut family = FamilyState::new();
    let mut block: Option<Block> = None;
    let mut regions_end: u64 = 0;
    let mut total: u64 = 0;
    let mut mem_bases = Vec::new();
    let mut sizes = Vec::new();
    for line in lines {
        let n = line.number;
        if let Some(stmt) = &line.stmt {
            family.apply(stmt);
        }
        let on_region_line = matches!(line.stmt, Some(Stmt::Mem(_)) | Some(Stmt::Zero { .. }));
        if !on_region_line {
            for (name, col) in &line.labels {
                let Some(b) = block.as_mut().filter(|b| b.kind == BlockKind::Mem) else {
                    return Err(err(n, *col, AsmErrorKind::LabelOutsideRegion));
                };
                let address = b.here().unwrap_or(0);
                define(&mut symbols, name, Label { address, size: None }, n, *col)?;
                b.labels.push((name.clone(), b.len));
            }
        }
        let Some(stmt) = &line.stmt else { continue };
        let fam = family.family;
        match stmt {
            Stmt::Gpu(_) => {}
            Stmt::Info { .. } | Stmt::Submit { .. } | Stmt::Shader { .. } | Stmt::Note(_) => {
                outside_block(&block, line, "this directive")?;
            }
            Stmt::Equ { name, expr } => {
                if symbols.defines(name) {
                    return Err(err(n, line.col, AsmErrorKind::AlreadyDefined(name.to_owned())));
                }
                symbols.consts.insert(name.clone(), (expr.clone(), n));
            }
            Stmt::Mem(address) => {
                outside_block(&block, line, ".mem")?;
                let base = match address {
                    Some(e) => strict(&symbols, fam, n, None).eval(e)?,
                    None if regions_end == 0 => DEFAULT_BASE,
                    None => regions_end.div_ceil(AUTO_ALIGN).saturating_mul(AUTO_ALIGN),
                };
                mem_bases.push(base);
                let mut b = Block::new(BlockKind::Mem, line, Some(base));
                for (name, col) in &line.labels {
                    define(&mut symbols, name, Label { address: base, size: None }, n, *col)?;
                    b.region_labels.push(name.clone());
                }
                block = Some(b);
            }
            Stmt::Write(_) => {
                outside_block(&block, line, ".write")?;
                block = Some(Block::new(BlockKind::Write, line, None));
            }
            Stmt::Ancillary(_) => {
                outside_block(&block, line, ".ancillary")?;
                block = Some(Block::new(BlockKind::Ancillary, line, None));
            }
            Stmt::End => {
                let Some(b) = block.take() else {
                    return Err(err(n, line.col, AsmErrorKind::EndWithoutBlock));
                };
                if b.kind == BlockKind::Mem {
                    let base = b.base.unwrap_or(0);
                    regions_end = regions_end.max(base.saturating_add(b.len));
                    set_sizes(&mut symbols, &b);
                }
            }
            Stmt::Zero { address, len } => {
                outside_block(&block, line, ".zero")?;
                let address = strict(&symbols, fam, n, None).eval(address)?;
                let len = strict(&symbols, fam, n, None).eval(len)?;
                regions_end = regions_end.max(address.saturating_add(len));
                for (name, col) in &line.labels {
                    define(&mut symbols, name, Label { address, size: Some(len) }, n, *col)?;
                }
            }
            Stmt::Data(data) => {
                let Some(b) = block.as_mut() else {
                    return Err(err(n, line.col, AsmErrorKind::OutsideBlock));
                };
                let offset = if b.kind == BlockKind::Mem { b.here().unwrap_or(b.len) } else { b.len };
                let size = match data {
                    Data::Dw(list) => list.len() as u64 * 4,
                    Data::Dq(list) => list.len() as u64 * 8,
                    Data::Db(items) => items
                        .iter()
                        .map(|i| match i {
                            ByteItem::Value(_) => 1,
                            ByteItem::Bytes(b) => b.len() as u64,
                        })
                        .sum(),
                    Data::Fill { count, .. } => strict(&symbols, fam, n, None).eval(count)?.saturating_mul(4),
                    Data::Align(to) => align_pad(&strict(&symbols, fam, n, None), to, offset)?,
                    Data::Space(bytes) => strict(&symbols, fam, n, None).eval(bytes)?,
                    Data::Op { mnemonic, items } => {
                        let lenient =
                            Eval { symbols: &symbols, family: family.family, here: b.here(), lenient: true, line: n };
                        encode(mnemonic, items, &lenient, line.col)?.len() as u64 * 4
                    }
                };
                total = total.saturating_add(size);
                if total > MAX_BYTES {
                    return Err(err(n, line.col, AsmErrorKind::TooManyBytes { max: MAX_BYTES }));
                }
                b.len += size;
                sizes.push(size);
            }
        }
    }
    if let Some(b) = block {
        return Err(err(b.line, b.col, AsmErrorKind::UnclosedBlock));
    }
    Ok(Layout { symbols, mem_bases, sizes })
}

fn align_pad(ev: &Eval<'_>, to: &Expr, offset: u64) -> Result<u64, AsmError> {
    let a = ev.eval(to)?;
    if a == 0 || !a.is_power_of_two() {
        return Err(err(ev.line, to.col, AsmErrorKind::AlignNotPowerOfTwo(a)));
    }
    Ok(offset.wrapping_neg() & (a - 1))
}

/// Sizes of a closed region's labels: up to the next label, or the end.
fn set_sizes(symbols: &mut Symbols, b: &Block) {
    let mut offsets: Vec<u64> = b.labels.iter().map(|(_, o)| *o).collect();
    offsets.sort_unstable();
    offsets.dedup();
    for (name, offset) in &b.labels {
        let next = offsets.iter().copied().find(|&o| o > *offset).unwrap_or(b.len);
        if let Some(label) = symbols.labels.get_mut(name) {
            label.size = Some(next - offset);
        }
    }
    for name in &b.region_labels {
        if let Some(label) = symbols.labels.get_mut(name) {
            label.size = Some(b.len);
        }
    }
}

/// Pass 2: values, bytes and the trace.
pub(crate) fn emit(lines: &[Line], layout: &Layout) -> Result<Vec<u8>, AsmError> {
    let symbols = &layout.symbols;
    let mut writer = TraceWriter::new();
    let mut family = FamilyState::new();
    let mut block: Option<Block> = None;
    let mut mem_bases = layout.mem_bases.iter().copied();
    let mut sizes = layout.sizes.iter().copied();
    for line in lines {
        let Some(stmt) = &line.stmt else { continue };
        family.apply(stmt);
        let n = line.number;
        let ev = |here| strict(symbols, family.family, n, here);
        let trace_err = |e: crate::trace::TraceError| err(n, line.col, AsmErrorKind::Trace(e));
        match stmt {
            Stmt::Info { key, value } => writer.info(key, value).map_err(trace_err)?,
            Stmt::Gpu(_) | Stmt::Equ { .. } => {}
            Stmt::Mem(_) => {
                let base = mem_bases.next().unwrap_or(0);
                block = Some(Block::new(BlockKind::Mem, line, Some(base)));
            }
            Stmt::Write(address) => {
                let address = ev(None).eval(address)?;
                block = Some(Block::new(BlockKind::Write, line, Some(address)));
            }
            Stmt::Ancillary(tag) => {
                let mut b = Block::new(BlockKind::Ancillary, line, None);
                b.tag = *tag;
                block = Some(b);
            }
            Stmt::End => {
                let Some(b) = block.take() else {
                    return Err(err(n, line.col, AsmErrorKind::EndWithoutBlock));
                };
                let at = |e: crate::trace::TraceError| err(b.line, b.col, AsmErrorKind::Trace(e));
                let base = b.base.unwrap_or(0);
                match b.kind {
                    BlockKind::Mem => writer.mem(base, &b.bytes).map_err(at)?,
                    BlockKind::Write => writer.host_write(base, &b.bytes).map_err(at)?,
                    BlockKind::Ancillary => writer.ancillary(Tag(b.tag), &b.bytes).map_err(at)?,
                }
            }
            Stmt::Zero { address, len } => {
                let (address, len) = (ev(None).eval(address)?, ev(None).eval(len)?);
                writer.zero(address, len).map_err(trace_err)?;
            }
            Stmt::Submit { queue, address, size } => {
                let queue = match queue {
                    QueueSpec::Index(q) => *q,
                    QueueSpec::Expr(e) => {
                        u32::try_from(ev(None).eval(e)?).map_err(|_| err(n, e.col, AsmErrorKind::QueueOutOfRange))?
                    }
                };
                let size_dw = match size {
                    Some(e) => ev(None).dword(e)?,
                    None => {
                        let bytes = address
                            .ident()
                            .and_then(|name| symbols.labels.get(name))
                            .and_then(|l| l.size)
                            .ok_or_else(|| err(n, address.col, AsmErrorKind::SubmitNeedsSize))?;
                        u32::try_from(bytes / 4).map_err(|_| err(n, address.col, AsmErrorKind::SubmissionTooLarge))?
                    }
                };
                let address = ev(None).eval(address)?;
                writer.submit(queue, address, size_dw).map_err(trace_err)?;
            }
            Stmt::Shader { header, code, relocated } => {
                let (header, code) = (ev(None).eval(header)?, ev(None).eval(code)?);
                writer.shader(header, code, *relocated).map_err(trace_err)?;
            }
            Stmt::Note(text) => writer.note(text).map_err(trace_err)?,
            Stmt::Data(data) => {
                let Some(b) = block.as_mut() else {
                    return Err(err(n, line.col, AsmErrorKind::DataOutsideBlock));
                };
                let start = b.bytes.len();
                let here = b.here();
                let offset = if b.kind == BlockKind::Mem { here.unwrap_or(b.len) } else { b.len };
                let ev = ev(here);
                match data {
                    Data::Dw(list) => {
                        for e in list {
                            b.bytes.extend_from_slice(&ev.dword(e)?.to_le_bytes());
                        }
                    }
                    Data::Dq(list) => {
                        for e in list {
                            b.bytes.extend_from_slice(&ev.eval(e)?.to_le_bytes());
                        }
                    }
                    Data::Db(items) => {
                        for item in items {
                            match item {
                                ByteItem::Bytes(bytes) => b.bytes.extend_from_slice(bytes),
                                ByteItem::Value(e) => {
                                    let v = ev.eval(e)?;
                                    if v > 0xFF && v < 0xFFFF_FFFF_FFFF_FF80 {
                                        return Err(err(n, e.col, AsmErrorKind::ByteOverflow(v)));
                                    }
                                    b.bytes.push(v as u8);
                                }
                            }
                        }
                    }
                    Data::Fill { count, value } => {
                        let count = ev.eval(count)?;
                        let value = match value {
                            Some(v) => ev.dword(v)?,
                            None => 0,
                        };
                        let word = value.to_le_bytes();
                        for _ in 0..count {
                            b.bytes.extend_from_slice(&word);
                        }
                    }
                    Data::Align(to) => {
                        let pad = align_pad(&ev, to, offset)?;
                        b.bytes.resize(b.bytes.len() + pad as usize, 0);
                    }
                    Data::Space(bytes) => {
                        let bytes = ev.eval(bytes)?;
                        b.bytes.resize(b.bytes.len() + bytes as usize, 0);
                    }
                    Data::Op { mnemonic, items } => {
                        for dword in encode(mnemonic, items, &ev, line.col)? {
                            b.bytes.extend_from_slice(&dword.to_le_bytes());
                        }
                    }
                }
                let size = (b.bytes.len() - start) as u64;
                if sizes.next() != Some(size) {
                    return Err(err(n, line.col, AsmErrorKind::SizeChanged));
                }
                b.len += size;
            }
        }
    }
    Ok(writer.finish())
}
