//! Writers for the container formats, so tests can make valid and
//! deliberately broken containers from values instead of binary blobs. Test
//! fixtures only: the library reads containers, it never writes them.
//!
//! [`AgcBuilder`] lays an AGC header out the way the PSSL compiler does
//! (shader-containers.md §1.9): header, specials, input semantics, output
//! semantics, SH table, context table, user data, direct-resource table and
//! the sharp tables, with self-relative pointers as in an unrelocated file.
//! [`corrupt`] pokes single fields. [`OrbShdrBuilder`], [`ShdrBuilder`],
//! [`AgcElfBuilder`] and [`DvlbBuilder`] write the other formats.

use pm4core::shader::agc::{
    offsets, AgcHeader, AgcLayout, AgcShader, BarefootTrailer, DirectResourceType, RegisterEntry, Semantic, ShaderType,
    SharpEntry, SharpKind, SpecialRegisters, UserData, UserDataRange, AGC_MAGIC, AGC_VERSION, DIRECT_RESOURCE_UNUSED,
    HEADER_LEN, SPECIALS_LEN, USER_DATA_LEN,
};

#[cfg(feature = "legacy-shaders")]
mod legacy;
#[cfg(feature = "legacy-shaders")]
#[allow(unused_imports)]
pub use legacy::*;

/// Writes a little-endian value into `out` at `offset` when it fits; returns
/// whether it did.
fn put(out: &mut [u8], offset: usize, value: &[u8]) -> bool {
    match offset.checked_add(value.len()).and_then(|end| out.get_mut(offset..end)) {
        Some(dst) => {
            dst.copy_from_slice(value);
            true
        }
        None => false,
    }
}

/// Rounds `value` up to a multiple of `align` (a power of two), or `None` on
/// overflow.
#[cfg(feature = "legacy-shaders")]
fn align_up(value: u64, align: u64) -> Option<u64> {
    let mask = align.checked_sub(1)?;
    Some(value.checked_add(mask)? & !mask)
}

fn pad_to(out: &mut Vec<u8>, align: usize) {
    while out.len() % align != 0 {
        out.push(0);
    }
}

// ---------------------------------------------------------------------------
// AGC
// ---------------------------------------------------------------------------

/// Builds an unrelocated AGC header blob.
#[derive(Debug, Clone)]
pub struct AgcBuilder {
    magic: u32,
    version: u32,
    raw_type: u8,
    sh: Vec<RegisterEntry>,
    cx: Vec<RegisterEntry>,
    specials: Option<SpecialRegisters>,
    user_data: Option<UserData>,
    inputs: Vec<Semantic>,
    outputs: Vec<Semantic>,
    shader_size: u32,
    ecb_size_dqw: u32,
    target: u32,
    scratch: u16,
    special_sizes_bytes: u16,
}

impl AgcBuilder {
    /// A container of type `ty` laid out like compiler output: the type's
    /// program pair {LO, 0}, {HI, 0} opens the SH table, specials are
    /// present (all zero), and user data holds the 11 direct-resource slots,
    /// all unused. `target` is 6 and `special_sizes_bytes` 0x30, as in both
    /// known samples.
    pub fn new(ty: ShaderType) -> Self {
        let sh = ty
            .program_registers()
            .map(|p| vec![RegisterEntry::new(p.sh_lo(), 0), RegisterEntry::new(p.sh_hi(), 0)])
            .unwrap_or_default();
        Self {
            magic: AGC_MAGIC,
            version: AGC_VERSION,
            raw_type: ty.raw(),
            sh,
            cx: Vec::new(),
            specials: Some(SpecialRegisters::default()),
            user_data: Some(UserData {
                direct_resources: vec![DIRECT_RESOURCE_UNUSED; DirectResourceType::ALL.len()],
                ..UserData::default()
            }),
            inputs: Vec::new(),
            outputs: Vec::new(),
            shader_size: 0x100,
            ecb_size_dqw: 0,
            target: 6,
            scratch: 0,
            special_sizes_bytes: SPECIALS_LEN as u16,
        }
    }

    /// Overrides the type byte (for invalid types).
    pub fn raw_type(mut self, raw: u8) -> Self {
        self.raw_type = raw;
        self
    }

    /// Overrides the magic.
    pub fn magic(mut self, magic: u32) -> Self {
        self.magic = magic;
        self
    }

    /// Overrides the version.
    pub fn version(mut self, version: u32) -> Self {
        self.version = version;
        self
    }

    /// Appends an SH-register entry (bank-relative offset).
    pub fn sh_register(mut self, offset: u32, value: u32) -> Self {
        self.sh.push(RegisterEntry::new(offset, value));
        self
    }

    /// Appends a context-register entry (bank-relative offset).
    pub fn context_register(mut self, offset: u32, value: u32) -> Self {
        self.cx.push(RegisterEntry::new(offset, value));
        self
    }

    /// Replaces the whole SH table (the automatic program pair included).
    pub fn sh_registers(mut self, entries: impl IntoIterator<Item = RegisterEntry>) -> Self {
        self.sh = entries.into_iter().collect();
        self
    }

    /// Replaces the whole context table.
    pub fn context_registers(mut self, entries: impl IntoIterator<Item = RegisterEntry>) -> Self {
        self.cx = entries.into_iter().collect();
        self
    }

    /// Drops the program pair `new` put first in the SH table.
    pub fn without_program_registers(mut self) -> Self {
        if let Some(pair) = ShaderType::from_raw(self.raw_type).and_then(ShaderType::program_registers) {
            self.sh.retain(|e| e.offset != pair.sh_lo() && e.offset != pair.sh_hi());
        }
        self
    }

    /// Sets the special registers.
    pub fn specials(mut self, specials: SpecialRegisters) -> Self {
        self.specials = Some(specials);
        self
    }

    /// Leaves the specials pointer null.
    pub fn no_specials(mut self) -> Self {
        self.specials = None;
        self
    }

    /// Sets the user-data range in the specials.
    pub fn user_data_range(mut self, start: u16, end: u16) -> Self {
        self.specials.get_or_insert_with(SpecialRegisters::default).user_data_range = UserDataRange { start, end };
        self
    }

    /// Replaces user data.
    pub fn user_data(mut self, user_data: UserData) -> Self {
        self.user_data = Some(user_data);
        self
    }

    /// Leaves the user-data pointer null.
    pub fn no_user_data(mut self) -> Self {
        self.user_data = None;
        self
    }

    fn user_data_mut(&mut self) -> &mut UserData {
        self.user_data.get_or_insert_with(UserData::default)
    }

    /// Binds a direct resource to a user SGPR.
    pub fn direct_resource(mut self, ty: DirectResourceType, sgpr: u16) -> Self {
        let ud = self.user_data_mut();
        let index = ty as usize;
        if ud.direct_resources.len() <= index {
            ud.direct_resources.resize(index + 1, DIRECT_RESOURCE_UNUSED);
        }
        if let Some(slot) = ud.direct_resources.get_mut(index) {
            *slot = sgpr;
        }
        self
    }

    /// Appends a sharp entry of one kind.
    pub fn sharp(mut self, kind: SharpKind, entry: SharpEntry) -> Self {
        if let Some(table) = self.user_data_mut().sharp_resources.get_mut(kind as usize) {
            table.push(entry);
        }
        self
    }

    /// Sets the extended-user-data size.
    pub fn eud_size_dw(mut self, size: u16) -> Self {
        self.user_data_mut().eud_size_dw = size;
        self
    }

    /// Sets the shader-resource-table size.
    pub fn srt_size_dw(mut self, size: u16) -> Self {
        self.user_data_mut().srt_size_dw = size;
        self
    }

    /// Appends an input semantic.
    pub fn input_semantic(mut self, semantic: Semantic) -> Self {
        self.inputs.push(semantic);
        self
    }

    /// Appends an output semantic.
    pub fn output_semantic(mut self, semantic: Semantic) -> Self {
        self.outputs.push(semantic);
        self
    }

    /// Sets `shader_size` (code blob bytes).
    pub fn shader_size(mut self, size: u32) -> Self {
        self.shader_size = size;
        self
    }

    /// Sets the `target` field.
    pub fn target(mut self, target: u32) -> Self {
        self.target = target;
        self
    }

    /// Sets scratch dwords per thread.
    pub fn scratch_size_dw_per_thread(mut self, dw: u16) -> Self {
        self.scratch = dw;
        self
    }

    /// Sets the embedded constant buffer size (16-byte units).
    pub fn embedded_constant_buffer_size_dqw(mut self, dqw: u32) -> Self {
        self.ecb_size_dqw = dqw;
        self
    }

    /// Sets `special_sizes_bytes`.
    pub fn special_sizes_bytes(mut self, size: u16) -> Self {
        self.special_sizes_bytes = size;
        self
    }

    /// The blob.
    pub fn build(&self) -> Vec<u8> {
        self.build_with_layout().0
    }

    /// The blob and where each table went (header-relative offsets).
    pub fn build_with_layout(&self) -> (Vec<u8>, AgcLayout) {
        let mut out = vec![0u8; HEADER_LEN as usize];
        let mut layout = AgcLayout::default();
        let here = |out: &Vec<u8>| out.len() as u32;

        if let Some(sp) = &self.specials {
            layout.specials = Some(here(&out));
            out.extend_from_slice(&sp.to_bytes());
        }
        // The input pointer is set even for an empty table, the output
        // pointer only for a non-empty one: both known samples agree with
        // this (§1.6, §1.9).
        layout.input_semantics = Some(here(&out));
        for s in &self.inputs {
            out.extend_from_slice(&s.0.to_le_bytes());
        }
        if !self.outputs.is_empty() {
            layout.output_semantics = Some(here(&out));
            for s in &self.outputs {
                out.extend_from_slice(&s.0.to_le_bytes());
            }
        }
        for (table, slot) in [(&self.sh, &mut layout.sh_registers), (&self.cx, &mut layout.cx_registers)] {
            if table.is_empty() {
                continue;
            }
            pad_to(&mut out, 8);
            *slot = Some(here(&out));
            for e in table {
                out.extend_from_slice(&e.offset.to_le_bytes());
                out.extend_from_slice(&e.value.to_le_bytes());
            }
        }

        let mut sharp_fixups: Vec<(u32, usize)> = Vec::new();
        if let Some(ud) = &self.user_data {
            pad_to(&mut out, 8);
            let ud_at = here(&out);
            layout.user_data = Some(ud_at);
            out.resize(out.len() + USER_DATA_LEN as usize, 0);
            let direct_count = ud.direct_resources.len().min(usize::from(u16::MAX));
            if direct_count > 0 {
                layout.direct_resources = Some(here(&out));
                for v in ud.direct_resources.iter().take(direct_count) {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                pad_to(&mut out, 8);
            }
            for (kind, table) in ud.sharp_resources.iter().enumerate() {
                if table.is_empty() {
                    sharp_fixups.push((ud_at, kind));
                    continue;
                }
                if let Some(slot) = layout.sharp_resources.get_mut(kind) {
                    *slot = Some(here(&out));
                }
                for e in table.iter().take(usize::from(u16::MAX)) {
                    out.extend_from_slice(&e.0.to_le_bytes());
                }
                // Each per-kind table is padded to 8 bytes as a whole (§1.5).
                pad_to(&mut out, 8);
            }
            // Empty sharp tables point one past the end (observed, §1.5).
            let end = here(&out);
            for &(_, kind) in &sharp_fixups {
                if let Some(slot) = layout.sharp_resources.get_mut(kind) {
                    *slot = Some(end);
                }
            }
            let ud_field = |o: u32| (ud_at + o) as usize;
            use offsets::user_data as uo;
            let pointers = std::iter::once((uo::DIRECT_RESOURCES, layout.direct_resources))
                .chain(uo::SHARP_RESOURCES.into_iter().zip(layout.sharp_resources));
            for (field, target) in pointers {
                if let Some(t) = target {
                    let at = ud_at + field;
                    put(&mut out, ud_field(field), &u64::from(t - at).to_le_bytes());
                }
            }
            put(&mut out, ud_field(uo::EUD_SIZE_DW), &ud.eud_size_dw.to_le_bytes());
            put(&mut out, ud_field(uo::SRT_SIZE_DW), &ud.srt_size_dw.to_le_bytes());
            put(&mut out, ud_field(uo::DIRECT_RESOURCE_COUNT), &(direct_count as u16).to_le_bytes());
            for (kind, table) in ud.sharp_resources.iter().enumerate() {
                let n = table.len().min(usize::from(u16::MAX)) as u16;
                put(&mut out, ud_field(uo::SHARP_RESOURCE_COUNTS + 2 * kind as u32), &n.to_le_bytes());
            }
        }

        let header_size = here(&out);
        let rel = |field: u32, target: Option<u32>| target.map(|t| u64::from(t - field)).unwrap_or(0);
        let header = AgcHeader {
            magic: self.magic,
            version: self.version,
            user_data: rel(offsets::USER_DATA, layout.user_data),
            code: 0,
            cx_registers: rel(offsets::CX_REGISTERS, layout.cx_registers),
            sh_registers: rel(offsets::SH_REGISTERS, layout.sh_registers),
            specials: rel(offsets::SPECIALS, layout.specials),
            input_semantics: rel(offsets::INPUT_SEMANTICS, layout.input_semantics),
            output_semantics: rel(offsets::OUTPUT_SEMANTICS, layout.output_semantics),
            header_size,
            shader_size: self.shader_size,
            embedded_constant_buffer_size_dqw: self.ecb_size_dqw,
            target: self.target,
            num_input_semantics: self.inputs.len() as u32,
            scratch_size_dw_per_thread: self.scratch,
            num_output_semantics: self.outputs.len().min(usize::from(u16::MAX)) as u16,
            special_sizes_bytes: self.special_sizes_bytes,
            shader_type: self.raw_type,
            num_cx_registers: self.cx.len().min(255) as u8,
            num_sh_registers: self.sh.len().min(255) as u8,
            padding: [0; 3],
        };
        put(&mut out, 0, &header.to_bytes());
        (out, layout)
    }

    /// Builds and decodes (for tests that want both).
    pub fn build_decoded(&self) -> (Vec<u8>, Result<AgcShader, pm4core::shader::ShaderError>) {
        let bytes = self.build();
        let decoded = AgcShader::parse(&bytes, 0);
        (bytes, decoded)
    }
}

/// Single-field edits on a built blob, to make broken containers. Each
/// returns `false` when the field is outside the blob.
pub mod corrupt {
    use super::put;
    use pm4core::shader::agc::offsets;

    /// Writes a byte.
    pub fn set_u8(bytes: &mut [u8], offset: u32, value: u8) -> bool {
        put(bytes, offset as usize, &[value])
    }
    /// Writes a u16.
    pub fn set_u16(bytes: &mut [u8], offset: u32, value: u16) -> bool {
        put(bytes, offset as usize, &value.to_le_bytes())
    }
    /// Writes a u32.
    pub fn set_u32(bytes: &mut [u8], offset: u32, value: u32) -> bool {
        put(bytes, offset as usize, &value.to_le_bytes())
    }
    /// Writes a u64.
    pub fn set_u64(bytes: &mut [u8], offset: u32, value: u64) -> bool {
        put(bytes, offset as usize, &value.to_le_bytes())
    }
    /// Sets the magic.
    pub fn magic(bytes: &mut [u8], value: u32) -> bool {
        set_u32(bytes, offsets::MAGIC, value)
    }
    /// Sets the version.
    pub fn version(bytes: &mut [u8], value: u32) -> bool {
        set_u32(bytes, offsets::VERSION, value)
    }
    /// Sets `header_size`.
    pub fn header_size(bytes: &mut [u8], value: u32) -> bool {
        set_u32(bytes, offsets::HEADER_SIZE, value)
    }
    /// Sets the type byte.
    pub fn shader_type(bytes: &mut [u8], value: u8) -> bool {
        set_u8(bytes, offsets::TYPE, value)
    }
    /// Sets a raw pointer field (header offset 0x08, 0x18, …).
    pub fn pointer(bytes: &mut [u8], field: u32, raw: u64) -> bool {
        set_u64(bytes, field, raw)
    }
    /// Sets the context-register count.
    pub fn num_cx_registers(bytes: &mut [u8], value: u8) -> bool {
        set_u8(bytes, offsets::NUM_CX_REGISTERS, value)
    }
    /// Sets the SH-register count.
    pub fn num_sh_registers(bytes: &mut [u8], value: u8) -> bool {
        set_u8(bytes, offsets::NUM_SH_REGISTERS, value)
    }
    /// Sets the input-semantic count.
    pub fn num_input_semantics(bytes: &mut [u8], value: u32) -> bool {
        set_u32(bytes, offsets::NUM_INPUT_SEMANTICS, value)
    }
    /// Sets the output-semantic count.
    pub fn num_output_semantics(bytes: &mut [u8], value: u16) -> bool {
        set_u16(bytes, offsets::NUM_OUTPUT_SEMANTICS, value)
    }
    /// Sets the code field.
    pub fn code(bytes: &mut [u8], value: u64) -> bool {
        set_u64(bytes, offsets::CODE, value)
    }
}

// ---------------------------------------------------------------------------
// `.shader_text` and the ELF envelope
// ---------------------------------------------------------------------------

/// An `sl00` block of `len` bytes (at least 12): "sl00", a word, the length.
pub fn sl00_block(len: u32, word4: u32) -> Vec<u8> {
    let mut out = vec![0u8; len.max(12) as usize];
    put(&mut out, 0, b"sl00");
    put(&mut out, 4, &word4.to_le_bytes());
    put(&mut out, 8, &len.max(12).to_le_bytes());
    out
}

/// A `.shader_text` section: program, zero padding to 16, an `sl00` block of
/// `sl00_len` bytes, padding to 16, then the `barefoot` trailer (§1.8).
/// Returns the bytes and the trailer's offset.
pub fn shader_text(program: &[u8], hash: u32, sl00_len: u32) -> (Vec<u8>, u32) {
    let mut out = program.to_vec();
    pad_to(&mut out, 16);
    let sl00 = sl00_block(sl00_len, 0);
    let sl00_len = sl00.len() as u32;
    out.extend_from_slice(&sl00);
    pad_to(&mut out, 16);
    let trailer_at = out.len() as u32;
    let trailer = BarefootTrailer {
        hash,
        word_10: 1,
        program_length: program.len() as u32,
        sl00_length: sl00_len,
        word_24: 0xC2A8_9EFE,
        ..BarefootTrailer::default()
    };
    out.extend_from_slice(&trailer.to_bytes());
    (out, trailer_at)
}

/// One section of an [`AgcElfBuilder`] file.
#[derive(Debug, Clone)]
struct ElfSectionSpec {
    name: String,
    kind: u32,
    flags: u64,
    align: u64,
    data: Vec<u8>,
}

/// Writes an ELF64 `.sb` envelope like the PSSL compiler's (§1.8):
/// `.shader_text`, `.shader_header`, optional extra sections, `.symtab`,
/// `.strtab` and `.shstrtab`.
#[derive(Debug, Clone)]
pub struct AgcElfBuilder {
    sections: Vec<ElfSectionSpec>,
    symbols: Vec<(String, usize, u64, u64)>,
}

/// `SHT_PROGBITS`.
pub const SHT_PROGBITS: u32 = 1;
/// `SHT_SYMTAB`.
pub const SHT_SYMTAB: u32 = 2;
/// `SHT_STRTAB`.
pub const SHT_STRTAB: u32 = 3;
/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;

impl AgcElfBuilder {
    /// An envelope holding `text` and `header`, with symbols
    /// `Shader::<prefix>_text` and `Shader::<prefix>_header`.
    pub fn new(text: &[u8], header: &[u8], prefix: &str) -> Self {
        let sections = vec![
            ElfSectionSpec {
                name: ".shader_text".into(),
                kind: SHT_PROGBITS,
                flags: 0x6, // AX
                align: 256,
                data: text.to_vec(),
            },
            ElfSectionSpec {
                name: ".shader_header".into(),
                kind: SHT_PROGBITS,
                flags: 0x3, // WA
                align: 8,
                data: header.to_vec(),
            },
        ];
        let symbols = vec![
            (format!("Shader::{prefix}_text"), 1, 0, text.len() as u64),
            (format!("Shader::{prefix}_header"), 2, 0, header.len() as u64),
        ];
        Self { sections, symbols }
    }

    /// Adds a PROGBITS section (e.g. `.metadata` holding an `sl00` block).
    pub fn section(mut self, name: &str, data: &[u8]) -> Self {
        self.sections.push(ElfSectionSpec {
            name: name.into(),
            kind: SHT_PROGBITS,
            flags: 0,
            align: 4,
            data: data.to_vec(),
        });
        self
    }

    /// The file.
    pub fn build(&self) -> Vec<u8> {
        // String tables.
        let mut shstrtab = vec![0u8];
        let name_of = |name: &str, table: &mut Vec<u8>| -> u32 {
            let at = table.len() as u32;
            table.extend_from_slice(name.as_bytes());
            table.push(0);
            at
        };
        let mut strtab = vec![0u8];
        let mut symtab = vec![0u8; 24]; // the null symbol
        for (name, shndx, value, size) in &self.symbols {
            let n = name_of(name, &mut strtab);
            let mut sym = [0u8; 24];
            put(&mut sym, 0, &n.to_le_bytes());
            put(&mut sym, 4, &[0x11, 0]); // global object
            put(&mut sym, 6, &(*shndx as u16).to_le_bytes());
            put(&mut sym, 8, &value.to_le_bytes());
            put(&mut sym, 16, &size.to_le_bytes());
            symtab.extend_from_slice(&sym);
        }

        let mut all: Vec<ElfSectionSpec> = self.sections.clone();
        let symtab_index = all.len() + 1;
        all.push(ElfSectionSpec { name: ".symtab".into(), kind: SHT_SYMTAB, flags: 0, align: 8, data: symtab });
        all.push(ElfSectionSpec { name: ".strtab".into(), kind: SHT_STRTAB, flags: 0, align: 1, data: strtab });
        let mut names: Vec<u32> = all.iter().map(|s| name_of(&s.name, &mut shstrtab)).collect();
        names.push(name_of(".shstrtab", &mut shstrtab));
        all.push(ElfSectionSpec { name: ".shstrtab".into(), kind: SHT_STRTAB, flags: 0, align: 1, data: shstrtab });

        let mut out = vec![0u8; 0x40];
        let mut placed = Vec::new();
        for s in &all {
            pad_to(&mut out, s.align.max(1) as usize);
            placed.push(out.len() as u64);
            out.extend_from_slice(&s.data);
        }
        pad_to(&mut out, 8);
        let shoff = out.len() as u64;
        out.extend_from_slice(&[0u8; 0x40]); // null section
        for (i, s) in all.iter().enumerate() {
            let mut sh = [0u8; 0x40];
            put(&mut sh, 0, &names.get(i).copied().unwrap_or(0).to_le_bytes());
            put(&mut sh, 4, &s.kind.to_le_bytes());
            put(&mut sh, 8, &s.flags.to_le_bytes());
            put(&mut sh, 0x18, &placed.get(i).copied().unwrap_or(0).to_le_bytes());
            put(&mut sh, 0x20, &(s.data.len() as u64).to_le_bytes());
            if s.kind == SHT_SYMTAB {
                put(&mut sh, 0x28, &((symtab_index + 1) as u32).to_le_bytes()); // link: .strtab
                put(&mut sh, 0x2C, &1u32.to_le_bytes());
                put(&mut sh, 0x38, &24u64.to_le_bytes());
            }
            put(&mut sh, 0x30, &s.align.to_le_bytes());
            out.extend_from_slice(&sh);
        }
        let shnum = (all.len() + 1) as u16;
        put(&mut out, 0, &[0x7F, b'E', b'L', b'F', 2, 1, 1]);
        put(&mut out, 0x10, &2u16.to_le_bytes()); // ET_EXEC
        put(&mut out, 0x12, &EM_AMDGPU.to_le_bytes());
        put(&mut out, 0x14, &1u32.to_le_bytes());
        put(&mut out, 0x28, &shoff.to_le_bytes());
        put(&mut out, 0x34, &0x40u16.to_le_bytes()); // e_ehsize
        put(&mut out, 0x3A, &0x40u16.to_le_bytes()); // e_shentsize
        put(&mut out, 0x3C, &shnum.to_le_bytes());
        put(&mut out, 0x3E, &(shnum - 1).to_le_bytes()); // .shstrtab is last
        out
    }
}
