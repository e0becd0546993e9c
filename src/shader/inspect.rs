//! Recognising a shader file by its magic and describing its structure.
//!
//! [`inspect`] never fails and never panics: a file it recognises but cannot
//! decode is [`Inspection::Malformed`] with the reason, anything else is
//! [`Inspection::Unknown`]. The result is plain data (serialisable with the
//! `serde` feature) with a human [`Display`](std::fmt::Display).

use std::fmt::{self, Write as _};

use super::agc::{AgcShader, BarefootTrailer, DirectResourceType, RegisterEntry, Semantic, SharpKind, AGC_MAGIC};
use super::bytes::{self, Bytes};
use super::dvlb::{Dvlb, DVLB_MAGIC};
use super::gnm::{locate_orbshdr, GnmCode, GnmShaderFile, InputUsageSlot, SHDR_MAGIC};
use super::ShaderError;

/// The formats [`inspect`] recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum FileFormat {
    /// Raw AGC `.shader_header` bytes (magic "1234").
    AgcHeader,
    /// An ELF `.sb` envelope with `.shader_header` / `.shader_text`.
    AgcElf,
    /// A PS4 `Shdr` shader binary (possibly behind a 0x24-byte PSSL header).
    GnmShaderFile,
    /// A PS4 code blob ending in an `OrbShdr` block.
    GnmCode,
    /// A 3DS `DVLB` shader binary.
    Dvlb,
}

impl FileFormat {
    /// Human name.
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::AgcHeader => "AGC shader header",
            FileFormat::AgcElf => "AGC shader ELF",
            FileFormat::GnmShaderFile => "GNM Shdr shader binary",
            FileFormat::GnmCode => "GNM code blob with OrbShdr",
            FileFormat::Dvlb => "3DS DVLB shader binary",
        }
    }
}

/// One ELF section header.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ElfSection {
    pub name: String,
    pub kind: u32,
    pub flags: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub align: u64,
    pub entsize: u64,
}

/// One ELF symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ElfSymbol {
    pub name: String,
    pub section: u16,
    pub value: u64,
    pub size: u64,
}

/// An `sl00` block found at the start of a section.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Sl00Block {
    /// Section holding it (or `.shader_text`).
    pub section: String,
    /// Offset inside that section.
    pub offset: u64,
    pub word4: u32,
    /// Block length (u32 at +8).
    pub length: u32,
}

/// An AGC ELF envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AgcElf {
    pub elf_type: u16,
    pub machine: u16,
    pub sections: Vec<ElfSection>,
    pub symbols: Vec<ElfSymbol>,
    /// The decoded `.shader_header`.
    pub header: Option<AgcShader>,
    /// Why `.shader_header` did not decode.
    pub header_error: Option<String>,
    pub header_section_size: u64,
    /// Size of `.shader_text`, if present.
    pub text_size: Option<u64>,
    /// The `barefoot` trailer at the end of `.shader_text`.
    pub trailer: Option<BarefootTrailer>,
    pub sl00_blocks: Vec<Sl00Block>,
    /// Inconsistencies between sections and header fields.
    pub notes: Vec<String>,
}

/// A PS4 `Shdr` file and its code.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GnmFileReport {
    /// File offset of the `Shdr` header (0x24 behind a PSSL header).
    pub offset: u64,
    pub file: GnmShaderFile,
    /// Computed stage-struct + tables size.
    pub calc_size: u64,
    /// `headersizedwords` × 4.
    pub declared_size: u64,
    /// The code's `OrbShdr`, when the code is inside the file.
    pub code: Option<GnmCode>,
    pub code_error: Option<String>,
}

/// What a file is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum Inspection {
    AgcHeader(Box<AgcShader>),
    AgcElf(Box<AgcElf>),
    GnmShaderFile(Box<GnmFileReport>),
    GnmCode(Box<GnmCode>),
    Dvlb(Box<Dvlb>),
    /// Recognised by its magic but not decodable.
    Malformed {
        format: FileFormat,
        error: String,
    },
    /// Not a format this module knows.
    Unknown {
        len: u64,
        head: String,
    },
}

impl Inspection {
    /// The recognised format, if any.
    pub fn format(&self) -> Option<FileFormat> {
        match self {
            Inspection::AgcHeader(_) => Some(FileFormat::AgcHeader),
            Inspection::AgcElf(_) => Some(FileFormat::AgcElf),
            Inspection::GnmShaderFile(_) => Some(FileFormat::GnmShaderFile),
            Inspection::GnmCode(_) => Some(FileFormat::GnmCode),
            Inspection::Dvlb(_) => Some(FileFormat::Dvlb),
            Inspection::Malformed { format, .. } => Some(*format),
            Inspection::Unknown { .. } => None,
        }
    }
}

/// Offset of `Shdr` behind a PSSL binary header (shader-containers.md §2.1).
const PSSL_HEADER_LEN: u64 = 0x24;

/// Which format `bytes` claims to be, from magic numbers alone (an ELF
/// counts only if it has a `.shader_header` section; a code blob only if its
/// `OrbShdr` block can be located).
pub fn detect(data: &[u8]) -> Option<FileFormat> {
    let magic = bytes::u32_at(data, 0);
    if magic == Some(AGC_MAGIC) {
        return Some(FileFormat::AgcHeader);
    }
    if bytes::sub(data, 0, 4) == Some(&b"\x7FELF"[..]) {
        let elf = Elf::parse(data).ok()?;
        return elf.find(".shader_header").map(|_| FileFormat::AgcElf);
    }
    if magic == Some(SHDR_MAGIC) || bytes::u32_at(data, PSSL_HEADER_LEN) == Some(SHDR_MAGIC) {
        return Some(FileFormat::GnmShaderFile);
    }
    if bytes::sub(data, 0, 4) == Some(&DVLB_MAGIC[..]) {
        return Some(FileFormat::Dvlb);
    }
    if locate_orbshdr(data).is_ok() {
        return Some(FileFormat::GnmCode);
    }
    None
}

/// Recognises and describes a file.
pub fn inspect(data: &[u8]) -> Inspection {
    let Some(format) = detect(data) else {
        let head: String = data.iter().take(8).map(|b| format!("{b:02x}")).collect();
        return Inspection::Unknown { len: data.len() as u64, head };
    };
    let malformed = |e: ShaderError| Inspection::Malformed { format, error: e.to_string() };
    match format {
        FileFormat::AgcHeader => match AgcShader::parse(data, 0) {
            Ok(s) => Inspection::AgcHeader(Box::new(s)),
            Err(e) => malformed(e),
        },
        FileFormat::AgcElf => match inspect_elf(data) {
            Ok(e) => Inspection::AgcElf(Box::new(e)),
            Err(e) => malformed(e),
        },
        FileFormat::GnmShaderFile => {
            let offset = if bytes::u32_at(data, 0) == Some(SHDR_MAGIC) { 0 } else { PSSL_HEADER_LEN };
            let file_bytes = bytes::sub(data, offset, (data.len() as u64).saturating_sub(offset));
            match GnmShaderFile::parse(file_bytes.unwrap_or(&[])) {
                Ok(file) => {
                    let (code, code_error) = match file.decode_code(file_bytes.unwrap_or(&[])) {
                        Some(Ok(c)) => (Some(c), None),
                        Some(Err(e)) => (None, Some(e.to_string())),
                        None => (None, None),
                    };
                    Inspection::GnmShaderFile(Box::new(GnmFileReport {
                        offset,
                        calc_size: file.stage.calc_size(),
                        declared_size: u64::from(file.header.header_size_dwords) * 4,
                        file,
                        code,
                        code_error,
                    }))
                }
                Err(e) => malformed(e),
            }
        }
        FileFormat::GnmCode => match GnmCode::decode(data) {
            Ok(c) => Inspection::GnmCode(Box::new(c)),
            Err(e) => malformed(e),
        },
        FileFormat::Dvlb => match Dvlb::parse(data) {
            Ok(d) => Inspection::Dvlb(Box::new(d)),
            Err(e) => malformed(e),
        },
    }
}

// ---------------------------------------------------------------------------
// ELF
// ---------------------------------------------------------------------------

const SHT_SYMTAB: u32 = 2;
const SHT_NOBITS: u32 = 8;
const MAX_SYMBOLS: u64 = 4096;
const MAX_NAME: usize = 256;

struct Elf<'a> {
    data: &'a [u8],
    elf_type: u16,
    machine: u16,
    sections: Vec<ElfSection>,
}

fn bad_elf(what: &'static str, offset: u64) -> ShaderError {
    ShaderError::BadElf { what, offset }
}

fn c_string(table: &[u8], offset: u64) -> String {
    let rest = usize::try_from(offset).ok().and_then(|o| table.get(o..)).unwrap_or(&[]);
    let end = rest.iter().take(MAX_NAME).position(|&c| c == 0).unwrap_or(rest.len().min(MAX_NAME));
    String::from_utf8_lossy(rest.get(..end).unwrap_or(&[])).into_owned()
}

impl<'a> Elf<'a> {
    fn parse(data: &'a [u8]) -> Result<Self, ShaderError> {
        let b = Bytes::new(data);
        let ident = b.sub("ELF header", 0, 0x40)?;
        if ident.get(4) != Some(&2) {
            return Err(bad_elf("not a 64-bit ELF", 4));
        }
        if ident.get(5) != Some(&1) {
            return Err(bad_elf("not a little-endian ELF", 5));
        }
        let elf_type = b.u16("ELF e_type", 0x10)?;
        let machine = b.u16("ELF e_machine", 0x12)?;
        let shoff = b.u64("ELF e_shoff", 0x28)?;
        let shentsize = b.u16("ELF e_shentsize", 0x3A)?;
        let shnum = b.u16("ELF e_shnum", 0x3C)?;
        let shstrndx = b.u16("ELF e_shstrndx", 0x3E)?;
        if shnum != 0 && shentsize != 0x40 {
            return Err(bad_elf("section header size is not 0x40", 0x3A));
        }
        let table_len = u64::from(shnum) * 0x40;
        b.sub("ELF section header table", shoff, table_len)?;
        let mut raw = Vec::with_capacity(usize::from(shnum));
        for i in 0..u64::from(shnum) {
            let at = shoff + i * 0x40;
            let h = b.sub("ELF section header", at, 0x40)?;
            let w = |o: u64| bytes::u32_at(h, o).unwrap_or(0);
            let q = |o: u64| bytes::u64_at(h, o).unwrap_or(0);
            raw.push((
                w(0),
                ElfSection {
                    name: String::new(),
                    kind: w(4),
                    flags: q(8),
                    offset: q(0x18),
                    size: q(0x20),
                    link: w(0x28),
                    align: q(0x30),
                    entsize: q(0x38),
                },
            ));
        }
        let names = raw.get(usize::from(shstrndx)).and_then(|(_, s)| bytes::sub(data, s.offset, s.size)).unwrap_or(&[]);
        let sections = raw
            .into_iter()
            .map(|(name_off, mut s)| {
                s.name = c_string(names, u64::from(name_off));
                s
            })
            .collect();
        Ok(Self { data, elf_type, machine, sections })
    }

    fn find(&self, name: &str) -> Option<&ElfSection> {
        self.sections.iter().find(|s| s.name == name)
    }

    fn section_data(&self, s: &ElfSection) -> Option<&'a [u8]> {
        if s.kind == SHT_NOBITS {
            return None;
        }
        bytes::sub(self.data, s.offset, s.size)
    }

    fn symbols(&self) -> Vec<ElfSymbol> {
        let mut out = Vec::new();
        for s in self.sections.iter().filter(|s| s.kind == SHT_SYMTAB) {
            let Some(table) = self.section_data(s) else {
                continue;
            };
            let names = self.sections.get(s.link as usize).and_then(|t| self.section_data(t)).unwrap_or(&[]);
            let count = (table.len() as u64 / 24).min(MAX_SYMBOLS);
            for i in 1..count {
                let Some(e) = bytes::sub(table, i * 24, 24) else {
                    break;
                };
                out.push(ElfSymbol {
                    name: c_string(names, u64::from(bytes::u32_at(e, 0).unwrap_or(0))),
                    section: bytes::u16_at(e, 6).unwrap_or(0),
                    value: bytes::u64_at(e, 8).unwrap_or(0),
                    size: bytes::u64_at(e, 16).unwrap_or(0),
                });
            }
        }
        out
    }
}

fn sl00_at(section: &str, data: &[u8], offset: u64) -> Option<Sl00Block> {
    if bytes::sub(data, offset, 4)? != b"sl00" {
        return None;
    }
    Some(Sl00Block {
        section: section.to_string(),
        offset,
        word4: bytes::u32_at(data, offset + 4)?,
        length: bytes::u32_at(data, offset + 8)?,
    })
}

fn inspect_elf(data: &[u8]) -> Result<AgcElf, ShaderError> {
    let elf = Elf::parse(data)?;
    let header_section = elf.find(".shader_header").ok_or(bad_elf("no .shader_header section", 0))?;
    let header_bytes = elf
        .section_data(header_section)
        .ok_or(bad_elf(".shader_header lies outside the file", header_section.offset))?;
    let (header, header_error) = match AgcShader::parse(header_bytes, 0) {
        Ok(h) => (Some(h), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut notes = Vec::new();
    let mut sl00_blocks = Vec::new();
    let text = elf.find(".shader_text");
    let text_bytes = text.and_then(|t| elf.section_data(t));
    let trailer = text_bytes.and_then(BarefootTrailer::from_text);
    if let (Some(t), Some(text_bytes)) = (&trailer, text_bytes) {
        // The sl00 block follows the program, 16-byte aligned (§1.8).
        if let Some(at) = bytes::align_up(u64::from(t.program_length), 16) {
            sl00_blocks.extend(sl00_at(".shader_text", text_bytes, at));
        }
    }
    for s in &elf.sections {
        if s.name != ".shader_text" {
            if let Some(block) = elf.section_data(s).and_then(|d| sl00_at(&s.name, d, 0)) {
                sl00_blocks.push(block);
            }
        }
    }
    if let Some(h) = &header {
        if u64::from(h.header_size()) != header_section.size {
            notes.push(format!(
                "header_size {:#x} differs from .shader_header size {:#x}",
                h.header_size(),
                header_section.size
            ));
        }
        match text {
            Some(t) if u64::from(h.code_length()) != t.size => {
                notes.push(format!("shader_size {:#x} differs from .shader_text size {:#x}", h.code_length(), t.size))
            }
            None => notes.push("no .shader_text section".to_string()),
            _ => {}
        }
    }
    if text_bytes.is_some() && trailer.is_none() {
        notes.push(".shader_text does not end in a barefoot trailer".to_string());
    }
    Ok(AgcElf {
        elf_type: elf.elf_type,
        machine: elf.machine,
        symbols: elf.symbols(),
        header_section_size: header_section.size,
        text_size: text.map(|t| t.size),
        sections: elf.sections.clone(),
        header,
        header_error,
        trailer,
        sl00_blocks,
        notes,
    })
}

// ---------------------------------------------------------------------------
// Display
// ---------------------------------------------------------------------------

fn opt_off(o: Option<u32>) -> String {
    o.map(|o| format!("+{o:#x}")).unwrap_or_else(|| "null".to_string())
}

fn write_registers(out: &mut String, title: &str, at: Option<u32>, regs: &[RegisterEntry]) {
    let _ = writeln!(out, "  {title} ({}) at {}", regs.len(), opt_off(at));
    for (i, r) in regs.iter().enumerate() {
        let _ = writeln!(out, "    [{i:2}] {:#05x} = {:#010x}", r.offset, r.value);
    }
}

fn write_semantics(out: &mut String, title: &str, at: Option<u32>, sems: &[Semantic]) {
    let _ = writeln!(out, "  {title} ({}) at {}", sems.len(), opt_off(at));
    for (i, s) in sems.iter().enumerate() {
        let _ = writeln!(
            out,
            "    [{i:2}] {:#010x}: semantic {} hw_mapping {} size {} f16 {} flat {} linear {} custom {} default {}",
            s.0,
            s.semantic(),
            s.hardware_mapping(),
            s.size_in_elements(),
            s.is_f16(),
            u8::from(s.is_flat_shaded()),
            u8::from(s.is_linear()),
            u8::from(s.is_custom()),
            s.default_value()
        );
    }
}

fn write_agc(out: &mut String, s: &AgcShader) {
    let h = s.header();
    let _ = writeln!(
        out,
        "AGC shader container: type {} ({}), version {:#x}",
        s.shader_type().name(),
        h.shader_type,
        h.version
    );
    match (s.stage(), s.program_registers()) {
        (Some(stage), Some(p)) => {
            let _ = writeln!(
                out,
                "  program stage {} (registers {:#06x}/{:#06x}), pair at SH entry {}",
                stage.name(),
                p.lo,
                p.hi,
                s.program_register_index().map(|i| i.to_string()).unwrap_or_default()
            );
        }
        _ => {
            let _ = writeln!(out, "  no program-address registers for this type");
        }
    }
    let _ = writeln!(
        out,
        "  header_size {:#x}, shader_size {:#x}, target {}, scratch {} dw/thread, ecb {} dqw, special_sizes {:#x}",
        h.header_size,
        h.shader_size,
        h.target,
        h.scratch_size_dw_per_thread,
        h.embedded_constant_buffer_size_dqw,
        h.special_sizes_bytes
    );
    match s.code_address() {
        Some(code) => {
            let _ = writeln!(out, "  relocated, code address {code:#x}");
        }
        None => {
            let _ = writeln!(out, "  not relocated (self-relative pointers, no code address)");
        }
    }
    let layout = s.layout();
    match s.specials() {
        Some(sp) => {
            let _ = writeln!(out, "  specials at {}", opt_off(layout.specials));
            for (name, r) in [
                ("GE_CNTL", sp.ge_cntl),
                ("VGT_SHADER_STAGES_EN", sp.vgt_shader_stages_en),
                ("VGT_GS_OUT_PRIM_TYPE", sp.vgt_gs_out_prim_type),
                ("GE_USER_VGPR_EN", sp.ge_user_vgpr_en),
            ] {
                let _ = writeln!(out, "    {name}: {:#05x} = {:#010x}", r.offset, r.value);
            }
            let _ = writeln!(
                out,
                "    dispatch_modifier {:#x}, user data {}..{}, draw_modifier {:#018x}",
                sp.dispatch_modifier, sp.user_data_range.start, sp.user_data_range.end, sp.draw_modifier.0
            );
        }
        None => {
            let _ = writeln!(out, "  specials: null");
        }
    }
    write_semantics(out, "input semantics", layout.input_semantics, s.input_semantics());
    write_semantics(out, "output semantics", layout.output_semantics, s.output_semantics());
    write_registers(out, "SH registers", layout.sh_registers, s.sh_registers());
    write_registers(out, "context registers", layout.cx_registers, s.context_registers());
    match s.user_data() {
        Some(ud) => {
            let _ = writeln!(
                out,
                "  user data at {}: eud {} dw, srt {} dw",
                opt_off(layout.user_data),
                ud.eud_size_dw,
                ud.srt_size_dw
            );
            let _ = writeln!(
                out,
                "    direct resources ({}) at {}",
                ud.direct_resources.len(),
                opt_off(layout.direct_resources)
            );
            for (i, &v) in ud.direct_resources.iter().enumerate() {
                let name = DirectResourceType::from_index(i).map(|t| t.name()).unwrap_or("?");
                if v == 0xFFFF {
                    let _ = writeln!(out, "      [{i:2}] {name}: unused");
                } else {
                    let _ = writeln!(out, "      [{i:2}] {name}: s{v}");
                }
            }
            for kind in SharpKind::ALL {
                let table = ud.sharps(kind);
                let at = layout.sharp_resources.get(kind as usize).copied().flatten();
                let _ = writeln!(out, "    {} sharps ({}) at {}", kind.name(), table.len(), opt_off(at));
                for e in table {
                    if e.is_empty() {
                        let _ = writeln!(out, "      {:#06x}: empty", e.0);
                    } else {
                        let _ = writeln!(out, "      {:#06x}: dword {}, {} dwords", e.0, e.offset_dw(), e.size_dw());
                    }
                }
            }
        }
        None => {
            let _ = writeln!(out, "  user data: null");
        }
    }
}

fn write_slots(out: &mut String, indent: &str, slots: &[InputUsageSlot]) {
    for (i, s) in slots.iter().enumerate() {
        let _ = writeln!(
            out,
            "{indent}[{i:2}] {} (type {:#04x}) api slot {} start s{} flags {:#04x}",
            s.usage_type_name().unwrap_or("unknown"),
            s.usage_type,
            s.api_slot,
            s.start_register,
            s.flags
        );
    }
}

fn write_gnm_code(out: &mut String, c: &GnmCode) {
    let i = &c.info;
    let _ = writeln!(
        out,
        "OrbShdr block at +{:#x} (found by {:?}), version {}",
        c.location.offset, c.location.method, i.version
    );
    let _ = writeln!(
        out,
        "  type {} ({}), length {:#x}, pssl {} cached {} source type {}",
        i.binary_type().map(|t| t.name()).unwrap_or("unknown"),
        i.binary_type,
        i.length,
        u8::from(i.is_pssl_cg),
        u8::from(i.is_source_cached),
        i.source_type
    );
    let _ = writeln!(
        out,
        "  usage chunk {} dwords, {} usage slots, flags {:#04x}, hash {:#018x}",
        i.chunk_usage_base_offset_dw,
        i.num_input_usage_slots,
        i.flags,
        i.shader_hash()
    );
    let verdict = if c.crc_matches() { "ok" } else { "MISMATCH" };
    let _ = writeln!(out, "  crc32 {:#010x}, computed {:#010x}: {verdict}", i.crc32, c.computed_crc32);
    if let Some(chunk) = &c.usage_chunk {
        let _ = writeln!(out, "  usage chunk at +{:#x}", chunk.offset);
        write_slots(out, "    ", &chunk.slots);
        for m in &chunk.masks {
            let _ = writeln!(out, "    mask {m:#010x}");
        }
    }
}

fn write_gnm_file(out: &mut String, r: &GnmFileReport) {
    let h = &r.file.header;
    let st = &r.file.stage;
    let _ = writeln!(
        out,
        "GNM Shdr shader binary at +{:#x}: {} shader, version {}.{}, target gpu modes {}",
        r.offset,
        st.kind.name(),
        h.version_major,
        h.version_minor,
        h.target_gpu_modes
    );
    let _ = writeln!(
        out,
        "  header size {:#x} (calculated {:#x}), shader size {:#x}, srt {}, ecb {} dqw, scratch {} dw",
        r.declared_size,
        r.calc_size,
        st.common.shader_size,
        u8::from(st.common.is_using_srt),
        st.common.embedded_constant_buffer_dqwords,
        st.common.scratch_size_per_thread_dwords
    );
    for (name, v) in st.kind.register_names().iter().zip(&st.registers) {
        let _ = writeln!(out, "  {name:<24} {v:#010x}");
    }
    let _ = writeln!(out, "  input-usage slots ({})", st.usage_slots.len());
    write_slots(out, "    ", &st.usage_slots);
    for (i, s) in st.vertex_input_semantics.iter().enumerate() {
        let _ = writeln!(out, "  vertex input [{i}] semantic {} v{} size {}", s.semantic, s.vgpr, s.size_in_elements);
    }
    for (i, s) in st.vertex_export_semantics.iter().enumerate() {
        let _ = writeln!(
            out,
            "  vertex export [{i}] semantic {} out index {} f16 {}",
            s.semantic,
            s.out_index(),
            s.export_f16()
        );
    }
    for (i, s) in st.pixel_input_semantics.iter().enumerate() {
        let _ = writeln!(
            out,
            "  pixel input [{i}] semantic {} default {} flat {} linear {} custom {}",
            s.semantic(),
            s.default_value(),
            u8::from(s.is_flat_shaded()),
            u8::from(s.is_linear()),
            u8::from(s.is_custom())
        );
    }
    match (&r.file.code_offset, &r.code, &r.code_error) {
        (Some(at), Some(code), _) => {
            let _ = writeln!(out, "  code at file offset {at:#x}:");
            let mut sub = String::new();
            write_gnm_code(&mut sub, code);
            for line in sub.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
        (Some(at), None, Some(err)) => {
            let _ = writeln!(out, "  code at file offset {at:#x}: {err}");
        }
        _ => {
            let _ = writeln!(out, "  code not inside the file");
        }
    }
}

fn write_elf(out: &mut String, e: &AgcElf) {
    let _ = writeln!(out, "AGC shader ELF: type {}, machine {}", e.elf_type, e.machine);
    for s in &e.sections {
        let _ = writeln!(
            out,
            "  section {:<16} type {:2} flags {:#x} offset {:#07x} size {:#07x} align {}",
            s.name, s.kind, s.flags, s.offset, s.size, s.align
        );
    }
    for s in &e.symbols {
        let _ = writeln!(out, "  symbol {} (section {}, value {:#x}, size {:#x})", s.name, s.section, s.value, s.size);
    }
    if let Some(t) = &e.trailer {
        let _ = writeln!(
            out,
            "  barefoot trailer: hash {:#010x}, program {:#x} bytes, sl00 {:#x} bytes",
            t.hash, t.program_length, t.sl00_length
        );
    }
    for b in &e.sl00_blocks {
        let _ = writeln!(out, "  sl00 block in {} at +{:#x}, {:#x} bytes", b.section, b.offset, b.length);
    }
    for n in &e.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    match (&e.header, &e.header_error) {
        (Some(h), _) => {
            let mut sub = String::new();
            write_agc(&mut sub, h);
            for line in sub.lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
        (None, Some(err)) => {
            let _ = writeln!(out, "  .shader_header: {err}");
        }
        _ => {}
    }
}

fn write_dvlb(out: &mut String, d: &Dvlb) {
    let p = &d.dvlp;
    let _ = writeln!(out, "3DS DVLB shader binary: {} executable(s)", d.dvles.len());
    let _ = writeln!(
        out,
        "  DVLP at {:#x}: version {:#x}, code {} words at +{:#x}, {} operand descriptors at +{:#x}",
        p.offset, p.version, p.blob_words, p.blob_offset, p.opdesc_count, p.opdesc_offset
    );
    for (i, e) in d.dvles.iter().enumerate() {
        let kind = if e.shader_type == 0 { "vertex" } else { "geometry" };
        let _ = writeln!(
            out,
            "  DVLE {i} at {:#x}: {kind} shader, main {:#x}..{:#x} (words), inputs {:#06x}, outputs {:#06x}",
            e.offset, e.main_offset_words, e.endmain_offset_words, e.used_input_mask, e.used_output_mask
        );
        for c in &e.constants {
            let _ = writeln!(out, "    constant type {} register {} value {:08x?}", c.kind, c.register, c.value);
        }
        for l in &e.labels {
            let _ = writeln!(
                out,
                "    label {} {} at {:#x} ({} words)",
                l.id,
                l.name.as_deref().unwrap_or("?"),
                l.location_words,
                l.size_words
            );
        }
        for o in &e.outputs {
            let _ = writeln!(out, "    output type {} o{} mask {:#x}", o.kind, o.register, o.mask);
        }
        for u in &e.uniforms {
            let _ = writeln!(
                out,
                "    uniform {} registers {:#x}..{:#x}",
                u.name.as_deref().unwrap_or("?"),
                u.start_register,
                u.end_register
            );
        }
    }
}

impl fmt::Display for Inspection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        match self {
            Inspection::AgcHeader(s) => write_agc(&mut out, s),
            Inspection::AgcElf(e) => write_elf(&mut out, e),
            Inspection::GnmShaderFile(r) => write_gnm_file(&mut out, r),
            Inspection::GnmCode(c) => write_gnm_code(&mut out, c),
            Inspection::Dvlb(d) => write_dvlb(&mut out, d),
            Inspection::Malformed { format, error } => {
                let _ = writeln!(out, "{} (malformed): {error}", format.name());
            }
            Inspection::Unknown { len, head } => {
                let _ = writeln!(out, "unknown file ({len} bytes, starts {head})");
            }
        }
        f.write_str(&out)
    }
}
