//! The text listing of [`super::Disassembler::write_text`], written straight
//! from each packet's dwords into one reused byte buffer: hex and decimal
//! digits by hand, names as the database's `&'static str`, no allocation
//! for register writes (most of a stream); other packets' fields from their
//! typed body's `fields()`, each value written into the buffer as
//! [`super::decode_fields`] would show it, without building strings. The
//! text is exactly what [`super::PacketRecord`] printing gives (module docs
//! of [`super`]).

use std::io;

use super::{register_base, Diagnostic, Submission};
use crate::packet::body::{AnyBody, Body, SetRegisters};
use crate::packet::field::{BodyField, FieldValue, Layout};
use crate::packet::{Header, Packet, PacketLocation, PacketType};
use crate::regs::db::{self, FieldInfo, GpuFamily};

/// Bytes gathered before they go to the output.
const FLUSH_AT: usize = 1 << 16;

/// Writes the listing's lines to an output through one buffer.
pub(crate) struct TextWriter<'o> {
    out: &'o mut dyn io::Write,
    buf: Vec<u8>,
    per_line: usize,
    family: GpuFamily,
    error: Option<io::Error>,
    /// The body fields' allocation, reused from packet to packet.
    scratch: Vec<BodyField<'static>>,
}

/// An empty vector of fields of another lifetime, in the same allocation
/// (collecting from a vector's own iterator into elements of the same
/// layout reuses its buffer).
// `filter_map` (not `filter`) is what gives the elements the new lifetime.
#[allow(clippy::unnecessary_filter_map)]
fn recycle<'x>(mut fields: Vec<BodyField<'_>>) -> Vec<BodyField<'x>> {
    fields.clear();
    fields.into_iter().filter_map(|_| None).collect()
}

impl<'o> TextWriter<'o> {
    pub(crate) fn new(out: &'o mut dyn io::Write, per_line: usize, family: GpuFamily) -> Self {
        TextWriter {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            per_line: per_line.max(1),
            family,
            error: None,
            scratch: Vec::with_capacity(32),
        }
    }

    /// Hands the gathered bytes to the output when enough are gathered.
    fn maybe_flush(&mut self) {
        if self.buf.len() >= FLUSH_AT {
            self.flush_buffer();
        }
    }

    fn flush_buffer(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(&self.buf) {
                self.error = Some(e);
            }
        }
        self.buf.clear();
    }

    /// Writes what is left; the first output error, if any.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.flush_buffer();
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// `; submission N: queue Q (name) 0xADDR, N dwords`
    pub(crate) fn submission(&mut self, s: &Submission) {
        self.put(b"; submission ");
        self.decimal(s.index as u64);
        self.put(b": queue ");
        self.decimal(u64::from(s.queue));
        self.put(b" (");
        self.put(super::queue_name(s.queue).as_bytes());
        self.put(b") ");
        self.hex_prefixed(s.address, 1);
        self.put(b", ");
        self.put(crate::counted(u64::from(s.size_dw), "dword", "dwords").as_bytes());
        self.put(b"\n");
        self.maybe_flush();
    }

    /// `PAD! 0xADDRESS: message`
    pub(crate) fn diagnostic(&mut self, d: &Diagnostic) {
        self.indent(d.depth);
        self.put(b"! ");
        self.hex_prefixed(d.address, 12);
        self.put(b": ");
        self.put(d.message.to_string().as_bytes());
        self.put(b"\n");
        self.maybe_flush();
    }

    /// One packet: its line, continuation lines of raw dwords, a line per
    /// register written or bitfield decoded, and its problem. A private
    /// packet is named `private` and its body is not decoded.
    pub(crate) fn packet(
        &mut self,
        address: u64,
        depth: u32,
        dwords: &[u32],
        location: PacketLocation,
        problem: Option<&str>,
        private: Option<&str>,
    ) {
        let header = Header(dwords.first().copied().unwrap_or(0));
        let body = dwords.get(1..).unwrap_or(&[]);
        let packet = Packet { header, body, location };
        let per_line = self.per_line;
        let (first, rest) = dwords.split_at(dwords.len().min(per_line));

        // The packet line.
        let line_start = self.buf.len();
        self.indent(depth);
        self.hex_prefixed(address, 12);
        self.put(b"  ");
        let raw_start = self.buf.len();
        for &w in first {
            self.hex8(w);
            self.buf.push(b' ');
        }
        let raw_end = raw_start + per_line * 9;
        if self.buf.len() < raw_end {
            self.buf.resize(raw_end, b' ');
        }
        let type3 = header.packet_type() == PacketType::Type3;
        match header.packet_type() {
            PacketType::Type0 => self.put(b"TYPE0"),
            PacketType::Type1 => self.put(b"TYPE1"),
            PacketType::Type2 => self.put(b"TYPE2"),
            PacketType::Type3 => match private.or(header.opcode().name_on(self.family)) {
                Some(name) => self.put(name.as_bytes()),
                None => {
                    self.put(b"UNKNOWN_");
                    self.hex_prefixed(u64::from(header.opcode().0), 2);
                }
            },
        }
        if type3 && header.predicate() {
            self.put(b" predicate");
        }
        if type3 && header.shader_type_compute() {
            self.put(b" compute");
        }

        // Fields: register writes straight from the dwords, the rest from
        // the typed body's fields, written straight into the buffer.
        let mut registers: Option<(u32, &[u32])> = None;
        let mut fields: Vec<BodyField<'_>> = recycle(std::mem::take(&mut self.scratch));
        let mut decode_problem: Option<String> = None;
        if problem.is_none() && private.is_none() {
            match header.packet_type() {
                PacketType::Type0 => registers = Some((header.type0_base(), body)),
                PacketType::Type1 | PacketType::Type2 => {}
                PacketType::Type3 if header.length_dw() == Some(1) => {}
                // A register writer the family lacks has no fields, as decode_fields says.
                PacketType::Type3 => {
                    match register_base(header.opcode()).filter(|_| header.opcode().exists_on(self.family)) {
                        Some(base) => match SetRegisters::decode(&packet) {
                            Ok(set) => {
                                if set.index != 0 {
                                    self.put(b" INDEX=");
                                    self.decimal(u64::from(set.index));
                                }
                                registers = Some((base.wrapping_add(set.offset), set.values));
                            }
                            Err(e) => decode_problem = Some(e.to_string()),
                        },
                        None => match AnyBody::decode_for(self.family, header.opcode(), body) {
                            Ok(Some(decoded)) => decoded.fields_into_for(self.family, &mut fields),
                            Ok(None) => {}
                            Err(e) => decode_problem = Some(e.to_string()),
                        },
                    }
                }
            }
        }
        for f in &fields {
            self.line_field(f);
        }
        self.trim_line_end(line_start);
        self.buf.push(b'\n');

        // Continuation lines.
        let mut at = address.wrapping_add(first.len() as u64 * 4);
        for chunk in rest.chunks(per_line) {
            self.indent(depth);
            self.hex_prefixed(at, 12);
            self.put(b"  ");
            for (i, &w) in chunk.iter().enumerate() {
                if i > 0 {
                    self.buf.push(b' ');
                }
                self.hex8(w);
            }
            self.buf.push(b'\n');
            at = at.wrapping_add(chunk.len() as u64 * 4);
        }

        // Detail lines.
        if let Some((first_register, values)) = registers {
            for (i, &value) in values.iter().enumerate() {
                self.register_line(depth, first_register.wrapping_add(i as u32), value);
            }
        }
        for f in &fields {
            self.detail_field(depth, f);
        }
        self.scratch = recycle(fields);
        if let Some(problem) = problem.or(decode_problem.as_deref()) {
            self.detail_indent(depth);
            self.put(b"! ");
            self.put(problem.as_bytes());
            self.buf.push(b'\n');
        }
        self.maybe_flush();
    }

    /// ` NAME=VALUE` on the packet line for a body field the database can
    /// show (what [`super::decode_fields`] keeps, register writes aside).
    fn line_field(&mut self, f: &BodyField<'_>) {
        match f.value {
            FieldValue::RegisterWrite { .. } => {}
            FieldValue::Register(r) => {
                self.field_name(f.name);
                self.register_name(r);
            }
            FieldValue::Event(e) => {
                if let Some(name) = db::event_name(self.family, e) {
                    self.field_name(f.name);
                    self.put(name.as_bytes());
                }
            }
            FieldValue::Raw(v) => {
                if self.layout_fields(f.layout).is_some() {
                    self.field_name(f.name);
                    self.hex_prefixed(u64::from(v), 8);
                }
            }
            ref value => {
                self.field_name(f.name);
                self.field_value(value);
            }
        }
    }

    /// ` NAME=`
    fn field_name(&mut self, name: &str) {
        self.buf.push(b' ');
        self.put(name.as_bytes());
        self.buf.push(b'=');
    }

    /// A register's name from the database, `REG_0x%04x` without one.
    fn register_name(&mut self, register: u32) {
        match db::register(self.family, register) {
            Some(info) => self.put(info.name.as_bytes()),
            None => {
                self.put(b"REG_");
                self.hex_prefixed(u64::from(register), 4);
            }
        }
    }

    /// A field value as its `Display` writes it.
    fn field_value(&mut self, value: &FieldValue<'_>) {
        match *value {
            FieldValue::Dec(v) => self.decimal(v),
            FieldValue::Hex(v) => self.hex_prefixed(v, 1),
            FieldValue::Flag(v) => self.buf.push(if v { b'1' } else { b'0' }),
            FieldValue::Name(n) => self.put(n.as_bytes()),
            FieldValue::Selector(v, n) => {
                self.decimal(u64::from(v));
                self.buf.push(b'(');
                self.put(n.as_bytes());
                self.buf.push(b')');
            }
            FieldValue::Raw(v) | FieldValue::RegisterWrite { value: v, .. } => self.hex_prefixed(u64::from(v), 8),
            FieldValue::HexList(values) => {
                for (i, &v) in values.iter().take(8).enumerate() {
                    if i > 0 {
                        self.buf.push(b',');
                    }
                    self.hex_prefixed(u64::from(v), 1);
                }
                if values.len() > 8 {
                    self.put(b",...");
                }
            }
            ref other => {
                // Writing to a Vec cannot fail.
                let _ = io::Write::write_fmt(&mut self.buf, format_args!("{other}"));
            }
        }
    }

    /// The bitfields that describe a field's layout on this family, if the
    /// database has any.
    fn layout_fields(&self, layout: Option<Layout>) -> Option<&'static [FieldInfo]> {
        let fields = match layout? {
            Layout::PacketType(t) => db::packet_field_type(t, self.family)?.fields,
            Layout::Register(r) => db::register_by_name(self.family, r)?.fields,
        };
        (!fields.is_empty()).then_some(fields)
    }

    /// A body field's detail line: a register write with its bitfields, or
    /// a layout dword's bitfields.
    fn detail_field(&mut self, depth: u32, f: &BodyField<'_>) {
        if let FieldValue::RegisterWrite { register, value } = f.value {
            self.register_line(depth, register, value);
            return;
        }
        let value = match f.value {
            FieldValue::Dec(v) | FieldValue::Hex(v) => v as u32,
            FieldValue::Raw(v) | FieldValue::Selector(v, _) | FieldValue::Flags(v, _) => v,
            _ => return,
        };
        let Some(bitfields) = self.layout_fields(f.layout) else { return };
        self.detail_indent(depth);
        self.put(f.name.as_bytes());
        self.put(b": ");
        self.bitfields(bitfields, value);
        self.buf.push(b'\n');
    }

    /// `DETAIL NAME (0xREG) <- 0xVALUE: FIELD = X, ...`
    fn register_line(&mut self, depth: u32, register: u32, value: u32) {
        self.detail_indent(depth);
        let info = db::register(self.family, register);
        match info {
            Some(info) => self.put(info.name.as_bytes()),
            None => {
                self.put(b"REG_");
                self.hex_prefixed(u64::from(register), 4);
            }
        }
        self.put(b" (");
        self.hex_prefixed(u64::from(register), 4);
        self.put(b") <- ");
        self.hex_prefixed(u64::from(value), 8);
        if let Some(info) = info.filter(|r| !r.fields.is_empty()) {
            self.put(b": ");
            self.bitfields(info.fields, value);
        }
        self.buf.push(b'\n');
    }

    /// What [`db::format_fields`] gives, for a non-empty field list.
    fn bitfields(&mut self, fields: &[FieldInfo], value: u32) {
        let mut covered = 0u32;
        for (i, field) in fields.iter().enumerate() {
            covered |= field.mask();
            if i > 0 {
                self.put(b", ");
            }
            self.put(field.name.as_bytes());
            self.put(b" = ");
            let v = field.extract(value);
            match field.value_name(v) {
                Some(name) => self.put(name.as_bytes()),
                None => self.decimal(u64::from(v)),
            }
        }
        let other = value & !covered;
        if other != 0 {
            self.put(b" (other bits 0x");
            self.hex_digits(u64::from(other), 1, b"0123456789ABCDEF");
            self.buf.push(b')');
        }
    }

    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    fn indent(&mut self, depth: u32) {
        for _ in 0..depth.min(64) {
            self.put(b"    ");
        }
    }

    fn detail_indent(&mut self, depth: u32) {
        self.indent(depth);
        self.put(b"                    ");
    }

    /// Removes trailing whitespace from the line that starts at `start`
    /// (as `str::trim_end` does).
    fn trim_line_end(&mut self, start: usize) {
        while let Some(&last) = self.buf.last() {
            if self.buf.len() <= start {
                break;
            }
            if last.is_ascii_whitespace() {
                self.buf.pop();
            } else if last >= 0x80 {
                // A multi-byte character: let `str` decide.
                let keep = std::str::from_utf8(self.buf.get(start..).unwrap_or(&[]))
                    .map_or(self.buf.len() - start, |line| line.trim_end().len());
                self.buf.truncate(start + keep);
                break;
            } else {
                break;
            }
        }
    }

    /// Eight lowercase hex digits.
    #[inline]
    fn hex8(&mut self, value: u32) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 8];
        for (i, slot) in out.iter_mut().enumerate() {
            let nibble = (value >> (28 - 4 * i)) & 0xF;
            *slot = DIGITS.get(nibble as usize).copied().unwrap_or(b'0');
        }
        self.put(&out);
    }

    /// `0x` and at least `min_digits` lowercase hex digits (`{:#0Nx}` with
    /// N = `min_digits` + 2).
    fn hex_prefixed(&mut self, value: u64, min_digits: usize) {
        self.put(b"0x");
        self.hex_digits(value, min_digits, b"0123456789abcdef");
    }

    fn hex_digits(&mut self, value: u64, min_digits: usize, digits: &[u8; 16]) {
        let significant = (64 - value.leading_zeros() as usize).div_ceil(4);
        let n = significant.max(min_digits).min(16);
        for i in (0..n).rev() {
            let nibble = (value >> (4 * i)) & 0xF;
            self.buf.push(digits.get(nibble as usize).copied().unwrap_or(b'0'));
        }
    }

    fn decimal(&mut self, mut value: u64) {
        let mut out = [0u8; 20];
        let mut at = out.len();
        loop {
            at -= 1;
            if let Some(slot) = out.get_mut(at) {
                *slot = b'0' + (value % 10) as u8;
            }
            value /= 10;
            if value == 0 || at == 0 {
                break;
            }
        }
        self.put(out.get(at..).unwrap_or(&[]));
    }
}
