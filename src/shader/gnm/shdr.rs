//! The PS4 `Shdr` shader-binary file: header, stage structs, input-usage
//! slots and semantics (shader-containers.md §2).

use super::*;

/// `GnmShaderType` of the file header (shader-containers.md §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(u8)]
pub enum GnmShaderType {
    /// Vertex (and domain, which reuses the VS struct).
    Vertex = 1,
    Pixel = 2,
    Geometry = 3,
    Compute = 4,
    /// Export (ES).
    Export = 5,
    /// Local (LS).
    Local = 6,
    Hull = 7,
}

/// Register names of each stage's register block (shader-containers.md §2.5).
const VS_REGS: [&str; 7] = [
    "SPI_SHADER_PGM_LO_VS",
    "SPI_SHADER_PGM_HI_VS",
    "SPI_SHADER_PGM_RSRC1_VS",
    "SPI_SHADER_PGM_RSRC2_VS",
    "SPI_VS_OUT_CONFIG",
    "SPI_SHADER_POS_FORMAT",
    "PA_CL_VS_OUT_CNTL",
];
const PS_REGS: [&str; 12] = [
    "SPI_SHADER_PGM_LO_PS",
    "SPI_SHADER_PGM_HI_PS",
    "SPI_SHADER_PGM_RSRC1_PS",
    "SPI_SHADER_PGM_RSRC2_PS",
    "SPI_SHADER_Z_FORMAT",
    "SPI_SHADER_COL_FORMAT",
    "SPI_PS_INPUT_ENA",
    "SPI_PS_INPUT_ADDR",
    "SPI_PS_IN_CONTROL",
    "SPI_BARYC_CNTL",
    "DB_SHADER_CONTROL",
    "CB_SHADER_MASK",
];
const CS_REGS: [&str; 7] = [
    "COMPUTE_PGM_LO",
    "COMPUTE_PGM_HI",
    "COMPUTE_PGM_RSRC1",
    "COMPUTE_PGM_RSRC2",
    "COMPUTE_NUM_THREAD_X",
    "COMPUTE_NUM_THREAD_Y",
    "COMPUTE_NUM_THREAD_Z",
];
const GS_REGS: [&str; 7] = [
    "SPI_SHADER_PGM_LO_GS",
    "SPI_SHADER_PGM_HI_GS",
    "SPI_SHADER_PGM_RSRC1_GS",
    "SPI_SHADER_PGM_RSRC2_GS",
    "VGT_STRMOUT_CONFIG",
    "VGT_GS_OUT_PRIM_TYPE",
    "VGT_GS_INSTANCE_CNT",
];
const ES_REGS: [&str; 4] =
    ["SPI_SHADER_PGM_LO_ES", "SPI_SHADER_PGM_HI_ES", "SPI_SHADER_PGM_RSRC1_ES", "SPI_SHADER_PGM_RSRC2_ES"];
const HS_REGS: [&str; 7] = [
    "SPI_SHADER_PGM_LO_HS",
    "SPI_SHADER_PGM_HI_HS",
    "SPI_SHADER_PGM_RSRC1_HS",
    "SPI_SHADER_PGM_RSRC2_HS",
    "VGT_TF_PARAM",
    "VGT_HOS_MAX_TESS_LEVEL",
    "VGT_HOS_MIN_TESS_LEVEL",
];
const LS_REGS: [&str; 4] =
    ["SPI_SHADER_PGM_LO_LS", "SPI_SHADER_PGM_HI_LS", "SPI_SHADER_PGM_RSRC1_LS", "SPI_SHADER_PGM_RSRC2_LS"];

impl GnmShaderType {
    /// The type for the header byte, if it is one this crate decodes.
    pub fn from_raw(raw: u8) -> Option<Self> {
        use GnmShaderType::*;
        match raw {
            1 => Some(Vertex),
            2 => Some(Pixel),
            3 => Some(Geometry),
            4 => Some(Compute),
            5 => Some(Export),
            6 => Some(Local),
            7 => Some(Hull),
            _ => None,
        }
    }

    /// Name.
    pub fn name(self) -> &'static str {
        match self {
            GnmShaderType::Vertex => "vertex",
            GnmShaderType::Pixel => "pixel",
            GnmShaderType::Geometry => "geometry",
            GnmShaderType::Compute => "compute",
            GnmShaderType::Export => "export",
            GnmShaderType::Local => "local",
            GnmShaderType::Hull => "hull",
        }
    }

    /// Names of the register block's dwords, in order.
    pub fn register_names(self) -> &'static [&'static str] {
        match self {
            GnmShaderType::Vertex => &VS_REGS,
            GnmShaderType::Pixel => &PS_REGS,
            GnmShaderType::Geometry => &GS_REGS,
            GnmShaderType::Compute => &CS_REGS,
            GnmShaderType::Export => &ES_REGS,
            GnmShaderType::Local => &LS_REGS,
            GnmShaderType::Hull => &HS_REGS,
        }
    }

    /// Size of the stage struct (common data + registers + trailing bytes).
    pub fn struct_size(self) -> u32 {
        match self {
            GnmShaderType::Vertex | GnmShaderType::Geometry | GnmShaderType::Hull => 0x28,
            GnmShaderType::Pixel => 0x3C,
            GnmShaderType::Compute => 0x24,
            GnmShaderType::Export | GnmShaderType::Local => 0x1C,
        }
    }
}

/// `GnmShaderFileHeader` (shader-containers.md §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ShdrFileHeader {
    pub magic: u32,
    pub version_major: u16,
    pub version_minor: u16,
    pub shader_type: u8,
    /// Dwords from the stage struct to the code.
    pub header_size_dwords: u8,
    pub aux_data: u8,
    /// 0 unspecified, 1 base, 2 NEO.
    pub target_gpu_modes: u8,
    pub unused: u32,
}

impl ShdrFileHeader {
    fn decode(b: &Bytes<'_>) -> Result<Self, ShaderError> {
        b.sub("Shdr file header", 0, u64::from(SHDR_HEADER_LEN))?;
        Ok(Self {
            magic: b.u32("Shdr magic", 0)?,
            version_major: b.u16("Shdr vermajor", 4)?,
            version_minor: b.u16("Shdr verminor", 6)?,
            shader_type: b.u8("Shdr type", 8)?,
            header_size_dwords: b.u8("Shdr headersizedwords", 9)?,
            aux_data: b.u8("Shdr auxdata", 0xA)?,
            target_gpu_modes: b.u8("Shdr targetgpumodes", 0xB)?,
            unused: b.u32("Shdr unused", 0xC)?,
        })
    }

    /// The 0x10 header bytes.
    pub fn to_bytes(&self) -> [u8; SHDR_HEADER_LEN as usize] {
        let mut out = [0u8; SHDR_HEADER_LEN as usize];
        bytes::put(&mut out, 0, &self.magic.to_le_bytes());
        bytes::put(&mut out, 4, &self.version_major.to_le_bytes());
        bytes::put(&mut out, 6, &self.version_minor.to_le_bytes());
        bytes::put(&mut out, 8, &[self.shader_type, self.header_size_dwords, self.aux_data, self.target_gpu_modes]);
        bytes::put(&mut out, 0xC, &self.unused.to_le_bytes());
        out
    }
}

/// `GnmShaderCommonData`, the first 8 bytes of every stage struct
/// (shader-containers.md §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CommonData {
    /// Code size in bytes, the trailing `OrbShdr` block included (bits 0..22).
    pub shader_size: u32,
    /// Bit 23.
    pub is_using_srt: bool,
    /// Bits 24..31.
    pub num_input_usage_slots: u8,
    /// In 16-byte units.
    pub embedded_constant_buffer_dqwords: u16,
    pub scratch_size_per_thread_dwords: u16,
}

impl CommonData {
    fn decode(b: &[u8]) -> Self {
        let d0 = bytes::u32_at(b, 0).unwrap_or(0);
        Self {
            shader_size: d0 & 0x7F_FFFF,
            is_using_srt: d0 & (1 << 23) != 0,
            num_input_usage_slots: (d0 >> 24) as u8,
            embedded_constant_buffer_dqwords: bytes::u16_at(b, 4).unwrap_or(0),
            scratch_size_per_thread_dwords: bytes::u16_at(b, 6).unwrap_or(0),
        }
    }

    /// The 8 bytes.
    pub fn to_bytes(&self) -> [u8; 8] {
        let d0 = (self.shader_size & 0x7F_FFFF)
            | (u32::from(self.is_using_srt) << 23)
            | (u32::from(self.num_input_usage_slots) << 24);
        let mut out = [0u8; 8];
        bytes::put(&mut out, 0, &d0.to_le_bytes());
        bytes::put(&mut out, 4, &self.embedded_constant_buffer_dqwords.to_le_bytes());
        bytes::put(&mut out, 6, &self.scratch_size_per_thread_dwords.to_le_bytes());
        out
    }

    /// `sceGnmShaderCommonCodeSize`: shader size plus the embedded constant
    /// buffer.
    pub fn code_size(&self) -> u64 {
        u64::from(self.shader_size) + 16 * u64::from(self.embedded_constant_buffer_dqwords)
    }
}

/// `GnmVertexInputSemantic`, 4 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct VertexInputSemantic {
    pub semantic: u8,
    /// Destination VGPR.
    pub vgpr: u8,
    /// 1..4.
    pub size_in_elements: u8,
    pub pad: u8,
}

/// `GnmVertexExportSemantic`, 2 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct VertexExportSemantic {
    pub semantic: u8,
    /// outindex bits 0..4, exportf16 bits 6..7.
    pub packed: u8,
}

impl VertexExportSemantic {
    pub fn out_index(self) -> u8 {
        self.packed & 0x1F
    }
    pub fn export_f16(self) -> u8 {
        self.packed >> 6
    }
}

/// `GnmPixelInputSemantic`, a u16 bitfield.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PixelInputSemantic(pub u16);

impl PixelInputSemantic {
    pub fn semantic(self) -> u8 {
        self.0 as u8
    }
    /// 0 none, 1 = (0,0,0,1), 2 = (1,1,1,0), 3 = (1,1,1,1).
    pub fn default_value(self) -> u8 {
        ((self.0 >> 8) & 3) as u8
    }
    pub fn is_flat_shaded(self) -> bool {
        self.0 & (1 << 10) != 0
    }
    pub fn is_linear(self) -> bool {
        self.0 & (1 << 11) != 0
    }
    pub fn is_custom(self) -> bool {
        self.0 & (1 << 12) != 0
    }
    /// NEO overlay: bits 12..13.
    pub fn default_value_hi(self) -> u8 {
        ((self.0 >> 12) & 3) as u8
    }
    /// NEO overlay: bits 14..15.
    pub fn interp_f16(self) -> u8 {
        (self.0 >> 14) as u8
    }
}

/// A stage struct with its trailing tables (shader-containers.md §2.5).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GnmStage {
    pub kind: GnmShaderType,
    pub common: CommonData,
    /// The register block, in the order of [`GnmShaderType::register_names`].
    pub registers: Vec<u32>,
    /// Input-semantic count (every stage except compute).
    pub num_input_semantics: u8,
    /// Export-semantic count (VS, GS, ES, LS).
    pub num_export_semantics: u8,
    /// VS only: GnmVsShaderGsMode flags or the CS input-semantic count.
    pub gs_mode_or_num_input_semantics_cs: u8,
    /// VS only.
    pub fetch_control: u8,
    pub usage_slots: Vec<InputUsageSlot>,
    /// VS only.
    pub vertex_input_semantics: Vec<VertexInputSemantic>,
    /// VS only.
    pub vertex_export_semantics: Vec<VertexExportSemantic>,
    /// PS only.
    pub pixel_input_semantics: Vec<PixelInputSemantic>,
}

impl GnmStage {
    /// `sce*ShaderCalcSize`: VS align4(0x28 + 4·slots + 4·in + 2·exp), PS
    /// align4(0x3C + 4·slots + 2·in). The other stages' semantic tables are
    /// not documented; for them this is align4(struct + 4·slots).
    pub fn calc_size(&self) -> u64 {
        calc_size(self.kind, self.common.num_input_usage_slots, self.num_input_semantics, self.num_export_semantics)
    }

    /// PGM_LO as stored.
    pub fn pgm_lo(&self) -> u32 {
        self.registers.first().copied().unwrap_or(0)
    }

    /// PGM_HI as stored.
    pub fn pgm_hi(&self) -> u32 {
        self.registers.get(1).copied().unwrap_or(0)
    }
}

/// See [`GnmStage::calc_size`].
pub fn calc_size(kind: GnmShaderType, slots: u8, inputs: u8, exports: u8) -> u64 {
    let base = u64::from(kind.struct_size()) + 4 * u64::from(slots);
    let total = match kind {
        GnmShaderType::Vertex => base + 4 * u64::from(inputs) + 2 * u64::from(exports),
        GnmShaderType::Pixel => base + 2 * u64::from(inputs),
        _ => base,
    };
    bytes::align_up(total, 4).unwrap_or(total)
}

/// A decoded `Shdr` file (without its code; see [`GnmShaderFile::code`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GnmShaderFile {
    pub header: ShdrFileHeader,
    pub stage: GnmStage,
    /// File offset of the code, when PGM_LO still holds the file-relative
    /// offset (PGM_HI = 0xFFFFFFFF) and the code lies inside the file.
    pub code_offset: Option<u64>,
}

/// File offset of the stage struct.
pub const SHDR_STAGE_OFFSET: u64 = SHDR_HEADER_LEN as u64;

impl GnmShaderFile {
    /// Decodes a `Shdr` binary starting at `bytes[0]`.
    pub fn parse(bytes: &[u8]) -> Result<Self, ShaderError> {
        let b = Bytes::new(bytes);
        let header = ShdrFileHeader::decode(&b)?;
        if header.magic != SHDR_MAGIC {
            return Err(ShaderError::BadMagic {
                what: "Shdr file header",
                offset: 0,
                found: header.magic,
                expected: SHDR_MAGIC,
            });
        }
        let kind = GnmShaderType::from_raw(header.shader_type)
            .ok_or(ShaderError::BadShdrType { offset: 8, found: header.shader_type })?;
        let at = SHDR_STAGE_OFFSET;
        let st = b.sub("Shdr stage struct", at, u64::from(kind.struct_size()))?;
        let common = CommonData::decode(st);
        let nregs = kind.register_names().len();
        let registers: Vec<u32> = (0..nregs).map(|i| bytes::u32_at(st, 8 + 4 * i as u64).unwrap_or(0)).collect();
        let after_regs = 8 + 4 * nregs as u64;
        let byte = |o: u64| bytes::u8_at(st, o).unwrap_or(0);
        let (num_in, num_exp, gs_mode, fetch) = match kind {
            GnmShaderType::Compute => (0, 0, 0, 0),
            GnmShaderType::Pixel | GnmShaderType::Hull => (byte(after_regs), 0, 0, 0),
            GnmShaderType::Vertex => {
                (byte(after_regs), byte(after_regs + 1), byte(after_regs + 2), byte(after_regs + 3))
            }
            _ => (byte(after_regs), byte(after_regs + 1), 0, 0),
        };

        let needed = calc_size(kind, common.num_input_usage_slots, num_in, num_exp);
        let declared = u64::from(header.header_size_dwords) * 4;
        if needed > declared {
            return Err(ShaderError::ShdrSizeMismatch { offset: 9, needed, declared });
        }
        b.sub("Shdr stage tables", at, needed)?;

        let mut cursor = at + u64::from(kind.struct_size());
        let mut take = |what: &'static str, count: u64, size: u64| -> Result<&[u8], ShaderError> {
            let t = b.sub(what, cursor, count * size)?;
            cursor += count * size;
            Ok(t)
        };
        let slots = take("Shdr input-usage slots", u64::from(common.num_input_usage_slots), 4)?;
        let usage_slots = slots.chunks_exact(4).map(InputUsageSlot::decode).collect();
        let mut stage = GnmStage {
            kind,
            common,
            registers,
            num_input_semantics: num_in,
            num_export_semantics: num_exp,
            gs_mode_or_num_input_semantics_cs: gs_mode,
            fetch_control: fetch,
            usage_slots,
            vertex_input_semantics: Vec::new(),
            vertex_export_semantics: Vec::new(),
            pixel_input_semantics: Vec::new(),
        };
        match kind {
            GnmShaderType::Vertex => {
                let ins = take("Shdr vertex input semantics", u64::from(num_in), 4)?;
                stage.vertex_input_semantics = ins
                    .chunks_exact(4)
                    .map(|c| VertexInputSemantic { semantic: c[0], vgpr: c[1], size_in_elements: c[2], pad: c[3] })
                    .collect();
                let exps = take("Shdr vertex export semantics", u64::from(num_exp), 2)?;
                stage.vertex_export_semantics =
                    exps.chunks_exact(2).map(|c| VertexExportSemantic { semantic: c[0], packed: c[1] }).collect();
            }
            GnmShaderType::Pixel => {
                let ins = take("Shdr pixel input semantics", u64::from(num_in), 2)?;
                stage.pixel_input_semantics =
                    ins.chunks_exact(2).map(|c| PixelInputSemantic(u16::from_le_bytes([c[0], c[1]]))).collect();
            }
            _ => {}
        }

        // In the file PGM_LO is the code's offset from the stage struct and
        // PGM_HI is 0xFFFFFFFF (shader-containers.md §2.5).
        let code_offset = if stage.pgm_hi() == 0xFFFF_FFFF {
            at.checked_add(u64::from(stage.pgm_lo()))
                .filter(|&o| o.checked_add(common.code_size()).is_some_and(|end| end <= b.len()))
        } else {
            None
        };
        Ok(Self { header, stage, code_offset })
    }

    /// The code bytes (`shadersize` + embedded constants) inside `file`.
    pub fn code<'a>(&self, file: &'a [u8]) -> Option<&'a [u8]> {
        bytes::sub(file, self.code_offset?, self.stage.common.code_size())
    }

    /// Decodes the `OrbShdr` block of the code inside `file`.
    pub fn decode_code(&self, file: &[u8]) -> Option<Result<GnmCode, ShaderError>> {
        self.code(file).map(GnmCode::decode)
    }
}
