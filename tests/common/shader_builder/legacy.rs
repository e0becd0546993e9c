//! Writers for the PS4 (`OrbShdr`, `Shdr`) and 3DS (`DVLB`) formats.

use super::pad_to;
use super::{align_up, put};
use pm4core::shader::dvlb::{DvleConstant, DvleOutput, DVLB_MAGIC, DVLE_LEN, DVLE_MAGIC, DVLP_LEN, DVLP_MAGIC};
use pm4core::shader::gnm::{
    calc_size, orbshdr_crc32, CommonData, GnmShaderType, InputUsageSlot, OrbShdrInfo, PixelInputSemantic,
    ShdrFileHeader, VertexExportSemantic, VertexInputSemantic, SHDR_MAGIC, VCC_HI_MOV_LITERAL,
};

// ---------------------------------------------------------------------------
// PS4: OrbShdr code blobs and Shdr files
// ---------------------------------------------------------------------------

/// Builds a PS4 code blob: code, optional input-usage chunk, `OrbShdr` block
/// with a computed CRC (shader-containers.md §2.6–§2.8).
#[derive(Debug, Clone)]
pub struct OrbShdrBuilder {
    code: Vec<u8>,
    prefix: bool,
    info: OrbShdrInfo,
    slots: Vec<InputUsageSlot>,
    masks: Vec<u32>,
    length: Option<u32>,
    crc: Option<u32>,
}

impl OrbShdrBuilder {
    /// A blob of binary type `binary_type` (see `GnmBinaryType`), compiled
    /// from PSSL, source cached, source type 1, version 7, as the samples.
    pub fn new(binary_type: u8) -> Self {
        Self {
            code: Vec::new(),
            prefix: false,
            info: OrbShdrInfo {
                version: 7,
                is_pssl_cg: true,
                is_source_cached: true,
                binary_type,
                source_type: 1,
                ..OrbShdrInfo::default()
            },
            slots: Vec::new(),
            masks: Vec::new(),
            length: None,
            crc: None,
        }
    }

    /// The complete code, leading `s_mov_b32 vcc_hi` included if wanted.
    pub fn code_dwords(mut self, dwords: &[u32]) -> Self {
        self.code = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
        self.prefix = false;
        self
    }

    /// Program dwords to which `build` prepends `s_mov_b32 vcc_hi, literal`
    /// pointing at the block.
    pub fn program(mut self, dwords: &[u32]) -> Self {
        self.code = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
        self.prefix = true;
        self
    }

    /// Sets hash0 and hash1.
    pub fn hash(mut self, hash0: u32, hash1: u32) -> Self {
        self.info.shader_hash0 = hash0;
        self.info.shader_hash1 = hash1;
        self
    }

    /// Sets the flags byte.
    pub fn flags(mut self, flags: u8) -> Self {
        self.info.flags = flags;
        self
    }

    /// Puts an input-usage chunk (slots then mask dwords) before the block;
    /// `chunkusagebaseoffsetdwords` becomes the number of mask dwords.
    pub fn usage_chunk(mut self, slots: &[InputUsageSlot], masks: &[u32]) -> Self {
        self.slots = slots.to_vec();
        self.masks = masks.to_vec();
        self
    }

    /// Overrides the stored length.
    pub fn length(mut self, length: u32) -> Self {
        self.length = Some(length);
        self
    }

    /// Overrides the stored crc32.
    pub fn crc32(mut self, crc: u32) -> Self {
        self.crc = Some(crc);
        self
    }

    /// The blob, and the block's offset in it.
    pub fn build(&self) -> (Vec<u8>, u64) {
        let chunk_len = 4 * (self.slots.len() + self.masks.len());
        let mut code = Vec::new();
        if self.prefix {
            let body = 8 + self.code.len();
            let info_at = align_up((body + chunk_len) as u64, 8).unwrap_or(0);
            let literal = (info_at / 8).saturating_sub(1) as u32;
            code.extend_from_slice(&VCC_HI_MOV_LITERAL.to_le_bytes());
            code.extend_from_slice(&literal.to_le_bytes());
        }
        code.extend_from_slice(&self.code);
        let length = code.len() as u32;
        let info_at = align_up((code.len() + chunk_len) as u64, 8).unwrap_or(0) as usize;
        let mut out = code;
        out.resize(info_at.saturating_sub(chunk_len), 0);
        for s in &self.slots {
            out.extend_from_slice(&s.to_bytes());
        }
        for m in &self.masks {
            out.extend_from_slice(&m.to_le_bytes());
        }
        let mut info = self.info;
        info.length = self.length.unwrap_or(length);
        info.chunk_usage_base_offset_dw = self.masks.len().min(255) as u8;
        info.num_input_usage_slots = self.slots.len().min(255) as u8;
        let prefix = info.to_bytes();
        let crc = orbshdr_crc32(&out, info.length, prefix.get(..0x18).unwrap_or(&[])).unwrap_or(0);
        info.crc32 = self.crc.unwrap_or(crc);
        out.extend_from_slice(&info.to_bytes());
        (out, info_at as u64)
    }
}

/// Builds a PS4 `Shdr` file: header, stage struct, usage slots, semantics,
/// padding, code (shader-containers.md §2.2–§2.5).
#[derive(Debug, Clone)]
pub struct ShdrBuilder {
    kind: GnmShaderType,
    raw_type: Option<u8>,
    registers: Vec<u32>,
    common: CommonData,
    slots: Vec<InputUsageSlot>,
    vertex_inputs: Vec<VertexInputSemantic>,
    vertex_exports: Vec<VertexExportSemantic>,
    pixel_inputs: Vec<PixelInputSemantic>,
    gs_mode: u8,
    fetch_control: u8,
    code: Vec<u8>,
    header_size_dwords: Option<u8>,
    target_gpu_modes: u8,
}

impl ShdrBuilder {
    /// A file for one stage; registers all zero except PGM_LO/HI, which
    /// `build` sets to the code's offset and 0xFFFFFFFF.
    pub fn new(kind: GnmShaderType) -> Self {
        Self {
            kind,
            raw_type: None,
            registers: vec![0; kind.register_names().len()],
            common: CommonData::default(),
            slots: Vec::new(),
            vertex_inputs: Vec::new(),
            vertex_exports: Vec::new(),
            pixel_inputs: Vec::new(),
            gs_mode: 0,
            fetch_control: 0,
            code: Vec::new(),
            header_size_dwords: None,
            target_gpu_modes: 1,
        }
    }

    /// Overrides the type byte.
    pub fn raw_type(mut self, raw: u8) -> Self {
        self.raw_type = Some(raw);
        self
    }

    /// Sets register `index` of the block (index 0 and 1 are overwritten).
    pub fn register(mut self, index: usize, value: u32) -> Self {
        if let Some(r) = self.registers.get_mut(index) {
            *r = value;
        }
        self
    }

    /// Appends an input-usage slot.
    pub fn usage_slot(mut self, slot: InputUsageSlot) -> Self {
        self.slots.push(slot);
        self
    }

    /// Appends a VS input semantic.
    pub fn vertex_input(mut self, s: VertexInputSemantic) -> Self {
        self.vertex_inputs.push(s);
        self
    }

    /// Appends a VS export semantic.
    pub fn vertex_export(mut self, s: VertexExportSemantic) -> Self {
        self.vertex_exports.push(s);
        self
    }

    /// Appends a PS input semantic.
    pub fn pixel_input(mut self, s: PixelInputSemantic) -> Self {
        self.pixel_inputs.push(s);
        self
    }

    /// Sets scratch dwords and embedded-constant-buffer size.
    pub fn common(mut self, scratch_dw: u16, ecb_dqw: u16, uses_srt: bool) -> Self {
        self.common.scratch_size_per_thread_dwords = scratch_dw;
        self.common.embedded_constant_buffer_dqwords = ecb_dqw;
        self.common.is_using_srt = uses_srt;
        self
    }

    /// The code blob (normally an [`OrbShdrBuilder`] output).
    pub fn code(mut self, code: &[u8]) -> Self {
        self.code = code.to_vec();
        self
    }

    /// Overrides `headersizedwords`.
    pub fn header_size_dwords(mut self, dwords: u8) -> Self {
        self.header_size_dwords = Some(dwords);
        self
    }

    /// The file.
    pub fn build(&self) -> Vec<u8> {
        let kind = self.kind;
        let slots = self.slots.len().min(255) as u8;
        let (num_in, num_exp) = match kind {
            GnmShaderType::Vertex => (self.vertex_inputs.len(), self.vertex_exports.len()),
            GnmShaderType::Pixel => (self.pixel_inputs.len(), 0),
            _ => (0, 0),
        };
        let (num_in, num_exp) = (num_in.min(255) as u8, num_exp.min(255) as u8);
        let size = calc_size(kind, slots, num_in, num_exp);
        let header = ShdrFileHeader {
            magic: SHDR_MAGIC,
            version_major: 7,
            version_minor: 2,
            shader_type: self.raw_type.unwrap_or(kind as u8),
            header_size_dwords: self.header_size_dwords.unwrap_or((size / 4).min(255) as u8),
            aux_data: 0,
            target_gpu_modes: self.target_gpu_modes,
            unused: 0,
        };
        let mut common = self.common;
        common.shader_size = (self.code.len() as u32) & 0x7F_FFFF;
        common.num_input_usage_slots = slots;
        let mut regs = self.registers.clone();
        if let Some(lo) = regs.get_mut(0) {
            *lo = size as u32;
        }
        if let Some(hi) = regs.get_mut(1) {
            *hi = 0xFFFF_FFFF;
        }

        let mut out = header.to_bytes().to_vec();
        out.extend_from_slice(&common.to_bytes());
        for r in &regs {
            out.extend_from_slice(&r.to_le_bytes());
        }
        match kind {
            GnmShaderType::Compute => {}
            GnmShaderType::Pixel | GnmShaderType::Hull => out.extend_from_slice(&[num_in, 0, 0, 0]),
            GnmShaderType::Vertex => out.extend_from_slice(&[num_in, num_exp, self.gs_mode, self.fetch_control]),
            _ => out.extend_from_slice(&[num_in, num_exp, 0, 0]),
        }
        for s in &self.slots {
            out.extend_from_slice(&s.to_bytes());
        }
        for s in &self.vertex_inputs {
            out.extend_from_slice(&[s.semantic, s.vgpr, s.size_in_elements, s.pad]);
        }
        for s in &self.vertex_exports {
            out.extend_from_slice(&[s.semantic, s.packed]);
        }
        for s in &self.pixel_inputs {
            out.extend_from_slice(&s.0.to_le_bytes());
        }
        pad_to(&mut out, 4);
        out.extend_from_slice(&self.code);
        out
    }
}

// ---------------------------------------------------------------------------
// DVLB
// ---------------------------------------------------------------------------

/// One DVLE for [`DvlbBuilder`].
#[derive(Debug, Clone, Default)]
pub struct DvleSpec {
    pub shader_type: u8,
    pub main_offset_words: u32,
    pub endmain_offset_words: u32,
    pub constants: Vec<DvleConstant>,
    /// (id, location in words, size in words, name)
    pub labels: Vec<(u16, u32, u32, String)>,
    pub outputs: Vec<DvleOutput>,
    /// (name, start register, end register)
    pub uniforms: Vec<(String, u16, u16)>,
}

/// Builds a 3DS `DVLB` file.
#[derive(Debug, Clone, Default)]
pub struct DvlbBuilder {
    code: Vec<u32>,
    opdescs: Vec<u64>,
    dvles: Vec<DvleSpec>,
}

impl DvlbBuilder {
    /// An empty file.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the code blob.
    pub fn code(mut self, words: &[u32]) -> Self {
        self.code = words.to_vec();
        self
    }

    /// Sets the operand descriptors.
    pub fn operand_descriptors(mut self, descs: &[u64]) -> Self {
        self.opdescs = descs.to_vec();
        self
    }

    /// Adds an executable.
    pub fn dvle(mut self, spec: DvleSpec) -> Self {
        self.dvles.push(spec);
        self
    }

    /// The file.
    pub fn build(&self) -> Vec<u8> {
        let n = self.dvles.len();
        let dvlp_at = 8 + 4 * n;
        let mut out = vec![0u8; dvlp_at];
        put(&mut out, 0, &DVLB_MAGIC);
        put(&mut out, 4, &(n as u32).to_le_bytes());

        // DVLP, code, operand descriptors.
        out.resize(dvlp_at + DVLP_LEN as usize, 0);
        let blob_rel = (out.len() - dvlp_at) as u32;
        for w in &self.code {
            out.extend_from_slice(&w.to_le_bytes());
        }
        let opdesc_rel = (out.len() - dvlp_at) as u32;
        for d in &self.opdescs {
            out.extend_from_slice(&d.to_le_bytes());
        }
        let symtab_rel = (out.len() - dvlp_at) as u32;
        put(&mut out, dvlp_at, &DVLP_MAGIC);
        for (o, v) in [
            (4, 0u32),
            (8, blob_rel),
            (0xC, self.code.len() as u32),
            (0x10, opdesc_rel),
            (0x14, self.opdescs.len() as u32),
            (0x18, symtab_rel),
            (0x1C, 0),
        ] {
            put(&mut out, dvlp_at + o, &v.to_le_bytes());
        }

        for (i, spec) in self.dvles.iter().enumerate() {
            pad_to(&mut out, 4);
            let at = out.len();
            put(&mut out, 8 + 4 * i, &(at as u32).to_le_bytes());
            out.resize(at + DVLE_LEN as usize, 0);
            let rel = |out: &Vec<u8>| (out.len() - at) as u32;

            let mut symtab = Vec::new();
            let mut intern = |name: &str| {
                let o = symtab.len() as u32;
                symtab.extend_from_slice(name.as_bytes());
                symtab.push(0);
                o
            };
            let const_at = rel(&out);
            for c in &spec.constants {
                out.extend_from_slice(&c.kind.to_le_bytes());
                out.extend_from_slice(&c.register.to_le_bytes());
                for v in c.value {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            let label_at = rel(&out);
            for (id, loc, size, name) in &spec.labels {
                let sym = intern(name);
                out.extend_from_slice(&id.to_le_bytes());
                out.extend_from_slice(&0u16.to_le_bytes());
                out.extend_from_slice(&loc.to_le_bytes());
                out.extend_from_slice(&size.to_le_bytes());
                out.extend_from_slice(&sym.to_le_bytes());
            }
            let output_at = rel(&out);
            for o in &spec.outputs {
                for v in [o.kind, o.register, o.mask, o.unknown] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            let uniform_at = rel(&out);
            for (name, start, end) in &spec.uniforms {
                let sym = intern(name);
                out.extend_from_slice(&sym.to_le_bytes());
                out.extend_from_slice(&start.to_le_bytes());
                out.extend_from_slice(&end.to_le_bytes());
            }
            let symtab_at = rel(&out);
            let symtab_len = symtab.len() as u32;
            out.extend_from_slice(&symtab);

            put(&mut out, at, &DVLE_MAGIC);
            put(&mut out, at + 4, &0x1002u16.to_le_bytes());
            put(&mut out, at + 6, &[spec.shader_type, 0]);
            for (o, v) in [
                (0x08, spec.main_offset_words),
                (0x0C, spec.endmain_offset_words),
                (0x18, const_at),
                (0x1C, spec.constants.len() as u32),
                (0x20, label_at),
                (0x24, spec.labels.len() as u32),
                (0x28, output_at),
                (0x2C, spec.outputs.len() as u32),
                (0x30, uniform_at),
                (0x34, spec.uniforms.len() as u32),
                (0x38, symtab_at),
                (0x3C, symtab_len),
            ] {
                put(&mut out, at + o, &v.to_le_bytes());
            }
        }
        out
    }
}
