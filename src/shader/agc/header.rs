//! The raw 0x60-byte header and the layout of the tables it points to.

use super::*;

/// The raw 0x60-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AgcHeader {
    pub magic: u32,
    pub version: u32,
    /// Raw pointer fields as stored: self-relative offsets before creation,
    /// absolute addresses after.
    pub user_data: u64,
    /// 0 in the file; the code address after creation.
    pub code: u64,
    pub cx_registers: u64,
    pub sh_registers: u64,
    pub specials: u64,
    pub input_semantics: u64,
    pub output_semantics: u64,
    pub header_size: u32,
    pub shader_size: u32,
    pub embedded_constant_buffer_size_dqw: u32,
    pub target: u32,
    pub num_input_semantics: u32,
    pub scratch_size_dw_per_thread: u16,
    /// A u16: reading a u32 here also picks up `special_sizes_bytes`
    /// (shader-containers.md §1.12).
    pub num_output_semantics: u16,
    pub special_sizes_bytes: u16,
    pub shader_type: u8,
    pub num_cx_registers: u8,
    pub num_sh_registers: u8,
    pub padding: [u8; 3],
}

impl AgcHeader {
    /// Decodes the first 0x60 bytes of `bytes` (no validation besides length).
    pub fn decode(bytes: &[u8]) -> Result<Self, ShaderError> {
        let b = Bytes::new(bytes);
        let head = b.sub("AGC header", 0, u64::from(HEADER_LEN))?;
        let u16_ = |o: u32| bytes::u16_at(head, u64::from(o)).unwrap_or(0);
        let u32_ = |o: u32| bytes::u32_at(head, u64::from(o)).unwrap_or(0);
        let u64_ = |o: u32| bytes::u64_at(head, u64::from(o)).unwrap_or(0);
        let u8_ = |o: u32| bytes::u8_at(head, u64::from(o)).unwrap_or(0);
        Ok(Self {
            magic: u32_(offsets::MAGIC),
            version: u32_(offsets::VERSION),
            user_data: u64_(offsets::USER_DATA),
            code: u64_(offsets::CODE),
            cx_registers: u64_(offsets::CX_REGISTERS),
            sh_registers: u64_(offsets::SH_REGISTERS),
            specials: u64_(offsets::SPECIALS),
            input_semantics: u64_(offsets::INPUT_SEMANTICS),
            output_semantics: u64_(offsets::OUTPUT_SEMANTICS),
            header_size: u32_(offsets::HEADER_SIZE),
            shader_size: u32_(offsets::SHADER_SIZE),
            embedded_constant_buffer_size_dqw: u32_(offsets::EMBEDDED_CONSTANT_BUFFER_SIZE_DQW),
            target: u32_(offsets::TARGET),
            num_input_semantics: u32_(offsets::NUM_INPUT_SEMANTICS),
            scratch_size_dw_per_thread: u16_(offsets::SCRATCH_SIZE_DW_PER_THREAD),
            num_output_semantics: u16_(offsets::NUM_OUTPUT_SEMANTICS),
            special_sizes_bytes: u16_(offsets::SPECIAL_SIZES_BYTES),
            shader_type: u8_(offsets::TYPE),
            num_cx_registers: u8_(offsets::NUM_CX_REGISTERS),
            num_sh_registers: u8_(offsets::NUM_SH_REGISTERS),
            padding: [u8_(0x5D), u8_(0x5E), u8_(0x5F)],
        })
    }

    /// The 0x60 header bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN as usize] {
        let mut out = [0u8; HEADER_LEN as usize];
        let mut put = |o: u32, v: &[u8]| {
            bytes::put(&mut out, o as usize, v);
        };
        put(offsets::MAGIC, &self.magic.to_le_bytes());
        put(offsets::VERSION, &self.version.to_le_bytes());
        put(offsets::USER_DATA, &self.user_data.to_le_bytes());
        put(offsets::CODE, &self.code.to_le_bytes());
        put(offsets::CX_REGISTERS, &self.cx_registers.to_le_bytes());
        put(offsets::SH_REGISTERS, &self.sh_registers.to_le_bytes());
        put(offsets::SPECIALS, &self.specials.to_le_bytes());
        put(offsets::INPUT_SEMANTICS, &self.input_semantics.to_le_bytes());
        put(offsets::OUTPUT_SEMANTICS, &self.output_semantics.to_le_bytes());
        put(offsets::HEADER_SIZE, &self.header_size.to_le_bytes());
        put(offsets::SHADER_SIZE, &self.shader_size.to_le_bytes());
        put(offsets::EMBEDDED_CONSTANT_BUFFER_SIZE_DQW, &self.embedded_constant_buffer_size_dqw.to_le_bytes());
        put(offsets::TARGET, &self.target.to_le_bytes());
        put(offsets::NUM_INPUT_SEMANTICS, &self.num_input_semantics.to_le_bytes());
        put(offsets::SCRATCH_SIZE_DW_PER_THREAD, &self.scratch_size_dw_per_thread.to_le_bytes());
        put(offsets::NUM_OUTPUT_SEMANTICS, &self.num_output_semantics.to_le_bytes());
        put(offsets::SPECIAL_SIZES_BYTES, &self.special_sizes_bytes.to_le_bytes());
        put(offsets::TYPE, &[self.shader_type]);
        put(offsets::NUM_CX_REGISTERS, &[self.num_cx_registers]);
        put(offsets::NUM_SH_REGISTERS, &[self.num_sh_registers]);
        put(0x5D, &self.padding);
        out
    }

    /// The raw value of the pointer field at header offset `offset`.
    pub fn pointer_field(&self, offset: u32) -> Option<u64> {
        match offset {
            offsets::USER_DATA => Some(self.user_data),
            offsets::CX_REGISTERS => Some(self.cx_registers),
            offsets::SH_REGISTERS => Some(self.sh_registers),
            offsets::SPECIALS => Some(self.specials),
            offsets::INPUT_SEMANTICS => Some(self.input_semantics),
            offsets::OUTPUT_SEMANTICS => Some(self.output_semantics),
            _ => None,
        }
    }
}

/// Where each pointer field resolves, as byte offsets from the header start
/// (`None` for a null pointer). Zero-count tables may resolve to
/// `header_size` (one past the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AgcLayout {
    pub user_data: Option<u32>,
    pub cx_registers: Option<u32>,
    pub sh_registers: Option<u32>,
    pub specials: Option<u32>,
    pub input_semantics: Option<u32>,
    pub output_semantics: Option<u32>,
    /// Inside user data.
    pub direct_resources: Option<u32>,
    /// Inside user data, indexed by [`SharpKind`].
    pub sharp_resources: [Option<u32>; 4],
}

impl AgcLayout {
    /// The resolved target of the top-level pointer at header offset `field`.
    pub fn header_pointer(&self, field: u32) -> Option<u32> {
        match field {
            offsets::USER_DATA => self.user_data,
            offsets::CX_REGISTERS => self.cx_registers,
            offsets::SH_REGISTERS => self.sh_registers,
            offsets::SPECIALS => self.specials,
            offsets::INPUT_SEMANTICS => self.input_semantics,
            offsets::OUTPUT_SEMANTICS => self.output_semantics,
            _ => None,
        }
    }
}

/// How a header's pointer fields are to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PointerMode {
    /// As stored in the file: field address + value.
    SelfRelative,
    /// After creation: absolute guest addresses.
    Absolute,
}
