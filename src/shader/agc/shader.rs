//! [`AgcShader`]: a container decoded and validated, from bytes or from
//! guest memory.

use super::*;

/// A decoded AGC shader container.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AgcShader {
    pub(super) header_address: u64,
    pub(super) relocated: bool,
    pub(super) header: AgcHeader,
    pub(super) shader_type: ShaderType,
    pub(super) layout: AgcLayout,
    pub(super) context_registers: Vec<RegisterEntry>,
    pub(super) sh_registers: Vec<RegisterEntry>,
    pub(super) specials: Option<SpecialRegisters>,
    pub(super) user_data: Option<UserData>,
    pub(super) input_semantics: Vec<Semantic>,
    pub(super) output_semantics: Vec<Semantic>,
    /// Index of the program LO entry in `sh_registers`.
    pub(super) program_index: Option<u32>,
}

/// Validates one pointer field and returns its target as a header offset.
pub(super) struct Resolver {
    base_address: u64,
    header_size: u32,
    mode: PointerMode,
}

impl Resolver {
    fn resolve(&self, field: &'static str, field_offset: u64, raw: u64) -> Result<Option<u64>, ShaderError> {
        if raw == 0 {
            return Ok(None);
        }
        let target = match self.mode {
            PointerMode::SelfRelative => field_offset.checked_add(raw),
            PointerMode::Absolute => raw.checked_sub(self.base_address),
        };
        match target {
            Some(t) if t <= u64::from(self.header_size) => Ok(Some(t)),
            _ => {
                Err(ShaderError::PointerOutOfBounds { field, offset: field_offset, raw, header_size: self.header_size })
            }
        }
    }

    /// The bytes of a table of `count` entries of `entry_size`, or `None` when
    /// the count is zero (a zero-count table is never read).
    fn table<'a>(
        &self,
        blob: &'a [u8],
        field: &'static str,
        field_offset: u64,
        target: Option<u64>,
        count: u64,
        entry_size: u64,
    ) -> Result<Option<&'a [u8]>, ShaderError> {
        if count == 0 {
            return Ok(None);
        }
        let Some(target) = target else {
            return Err(ShaderError::NullTable { field, offset: field_offset, count });
        };
        let out_of_bounds = ShaderError::TableOutOfBounds {
            field,
            offset: field_offset,
            target,
            count,
            entry_size,
            header_size: self.header_size,
        };
        let len = count.checked_mul(entry_size).ok_or(out_of_bounds)?;
        match target.checked_add(len) {
            Some(end) if end <= u64::from(self.header_size) => {}
            _ => return Err(out_of_bounds),
        }
        bytes::sub(blob, target, len).map(Some).ok_or(out_of_bounds)
    }
}

pub(super) fn u16_entries(table: Option<&[u8]>) -> Vec<u16> {
    table.map(|t| t.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()).unwrap_or_default()
}

pub(super) fn u32_entries(table: Option<&[u8]>) -> Vec<u32> {
    table.map(|t| t.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()).unwrap_or_default()
}

pub(super) fn register_entries(table: Option<&[u8]>) -> Vec<RegisterEntry> {
    table
        .map(|t| t.chunks_exact(REGISTER_ENTRY_LEN as usize).map(|c| RegisterEntry::decode(c, 0)).collect())
        .unwrap_or_default()
}

pub(super) fn to_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Checks magic, version, the 0x60-byte minimum and `header_size` against
/// `available` bytes; returns the header.
pub(super) fn check_header(bytes: &[u8], available: u64) -> Result<AgcHeader, ShaderError> {
    let header = AgcHeader::decode(bytes)?;
    if header.magic != AGC_MAGIC {
        return Err(ShaderError::BadMagic {
            what: "AGC header",
            offset: u64::from(offsets::MAGIC),
            found: header.magic,
            expected: AGC_MAGIC,
        });
    }
    if header.version != AGC_VERSION {
        return Err(ShaderError::BadVersion {
            offset: u64::from(offsets::VERSION),
            found: header.version,
            expected: AGC_VERSION,
        });
    }
    let offset = u64::from(offsets::HEADER_SIZE);
    if header.header_size < HEADER_LEN {
        return Err(ShaderError::HeaderSizeTooSmall { offset, header_size: header.header_size });
    }
    if header.header_size > MAX_HEADER_SIZE {
        return Err(ShaderError::HeaderSizeTooLarge {
            offset,
            header_size: header.header_size,
            limit: MAX_HEADER_SIZE,
        });
    }
    if u64::from(header.header_size) > available {
        return Err(ShaderError::HeaderSizeExceedsBlob { offset, header_size: header.header_size, available });
    }
    Ok(header)
}

impl AgcShader {
    /// Decodes a header blob (the `.shader_header` section, or header bytes
    /// copied from guest memory) that starts at guest address `base_address`.
    ///
    /// A header whose code field is 0 is read as the file stores it
    /// (self-relative pointers); one with a code address as created
    /// (absolute pointers, which must point into `[base_address,
    /// base_address + header_size]`). Bytes past `header_size` are ignored.
    pub fn parse(bytes: &[u8], base_address: u64) -> Result<Self, ShaderError> {
        let mode = match bytes::u64_at(bytes, u64::from(offsets::CODE)) {
            Some(code) if code != 0 => PointerMode::Absolute,
            _ => PointerMode::SelfRelative,
        };
        Self::decode(bytes, base_address, mode)
    }

    /// Decodes the container whose header is at `header_address` in guest
    /// memory, reading only the `header_size` bytes it declares.
    pub fn read(mem: &dyn GuestMemory, header_address: u64) -> Result<Self, ShaderError> {
        let blob = read_header_blob(mem, header_address)?;
        Self::parse(&blob, header_address)
    }

    pub(crate) fn decode(bytes: &[u8], base_address: u64, mode: PointerMode) -> Result<Self, ShaderError> {
        let header = check_header(bytes, bytes.len() as u64)?;
        let shader_type = ShaderType::from_raw(header.shader_type)
            .ok_or(ShaderError::BadType { offset: u64::from(offsets::TYPE), found: header.shader_type })?;
        let blob = bytes::sub(bytes, 0, u64::from(header.header_size)).unwrap_or(&[]);
        let r = Resolver { base_address, header_size: header.header_size, mode };

        let field = |name: &'static str, off: u32| -> Result<Option<u64>, ShaderError> {
            r.resolve(name, u64::from(off), header.pointer_field(off).unwrap_or(0))
        };
        let user_data_at = field("user_data", offsets::USER_DATA)?;
        let cx_at = field("cx_registers", offsets::CX_REGISTERS)?;
        let sh_at = field("sh_registers", offsets::SH_REGISTERS)?;
        let specials_at = field("specials", offsets::SPECIALS)?;
        let inputs_at = field("input_semantics", offsets::INPUT_SEMANTICS)?;
        let outputs_at = field("output_semantics", offsets::OUTPUT_SEMANTICS)?;

        let reg = u64::from(REGISTER_ENTRY_LEN);
        let cx = r.table(
            blob,
            "cx_registers",
            u64::from(offsets::CX_REGISTERS),
            cx_at,
            u64::from(header.num_cx_registers),
            reg,
        )?;
        let sh = r.table(
            blob,
            "sh_registers",
            u64::from(offsets::SH_REGISTERS),
            sh_at,
            u64::from(header.num_sh_registers),
            reg,
        )?;
        let sem = u64::from(SEMANTIC_LEN);
        let inputs = r.table(
            blob,
            "input_semantics",
            u64::from(offsets::INPUT_SEMANTICS),
            inputs_at,
            u64::from(header.num_input_semantics),
            sem,
        )?;
        let outputs = r.table(
            blob,
            "output_semantics",
            u64::from(offsets::OUTPUT_SEMANTICS),
            outputs_at,
            u64::from(header.num_output_semantics),
            sem,
        )?;
        // Fixed-size structures: one entry when the pointer is set.
        let specials = r
            .table(
                blob,
                "specials",
                u64::from(offsets::SPECIALS),
                specials_at,
                u64::from(specials_at.is_some()),
                u64::from(SPECIALS_LEN),
            )?
            .map(SpecialRegisters::decode);
        let user_data_bytes = r.table(
            blob,
            "user_data",
            u64::from(offsets::USER_DATA),
            user_data_at,
            u64::from(user_data_at.is_some()),
            u64::from(USER_DATA_LEN),
        )?;

        let mut layout = AgcLayout {
            user_data: user_data_at.map(to_u32),
            cx_registers: cx_at.map(to_u32),
            sh_registers: sh_at.map(to_u32),
            specials: specials_at.map(to_u32),
            input_semantics: inputs_at.map(to_u32),
            output_semantics: outputs_at.map(to_u32),
            ..AgcLayout::default()
        };

        let user_data = match (user_data_bytes, user_data_at) {
            (Some(ud), Some(ud_at)) => Some(decode_user_data(blob, ud, ud_at, &r, &mut layout)?),
            _ => None,
        };

        let sh_registers = register_entries(sh);
        let program_index = match shader_type.program_registers() {
            Some(pair) => Some(find_program_pair(&sh_registers, shader_type, pair)?),
            None => None,
        };

        Ok(Self {
            header_address: base_address,
            relocated: mode == PointerMode::Absolute,
            header,
            shader_type,
            layout,
            context_registers: register_entries(cx),
            sh_registers,
            specials,
            user_data,
            input_semantics: u32_entries(inputs).into_iter().map(Semantic).collect(),
            output_semantics: u32_entries(outputs).into_iter().map(Semantic).collect(),
            program_index,
        })
    }

    /// Guest address of the header (the `base_address` given to [`parse`](Self::parse)).
    pub fn header_address(&self) -> u64 {
        self.header_address
    }

    /// True when the pointers were read as absolute addresses (the header
    /// has been through creation).
    pub fn is_relocated(&self) -> bool {
        self.relocated
    }

    /// The raw header fields.
    pub fn header(&self) -> &AgcHeader {
        &self.header
    }

    /// Resolved table positions.
    pub fn layout(&self) -> &AgcLayout {
        &self.layout
    }

    /// The program type.
    pub fn shader_type(&self) -> ShaderType {
        self.shader_type
    }

    /// The hardware stage whose program registers receive the code address.
    pub fn stage(&self) -> Option<ShaderStage> {
        self.shader_type.program_stage()
    }

    /// The pipeline stage.
    pub fn pipeline_stage(&self) -> PipelineStage {
        self.shader_type.pipeline_stage()
    }

    /// Context-register entries, in table order.
    pub fn context_registers(&self) -> &[RegisterEntry] {
        &self.context_registers
    }

    /// SH-register entries, in table order (the program pair included).
    pub fn sh_registers(&self) -> &[RegisterEntry] {
        &self.sh_registers
    }

    /// `ShaderSpecialRegs`, when the pointer is set.
    pub fn specials(&self) -> Option<&SpecialRegisters> {
        self.specials.as_ref()
    }

    /// User data, when the pointer is set.
    pub fn user_data(&self) -> Option<&UserData> {
        self.user_data.as_ref()
    }

    /// User-data dwords the program uses (from the specials).
    pub fn user_data_range(&self) -> Option<UserDataRange> {
        self.specials.map(|s| s.user_data_range)
    }

    /// Input semantics.
    pub fn input_semantics(&self) -> &[Semantic] {
        &self.input_semantics
    }

    /// Output semantics.
    pub fn output_semantics(&self) -> &[Semantic] {
        &self.output_semantics
    }

    /// The code address stored at creation, `None` before.
    pub fn code_address(&self) -> Option<u64> {
        (self.header.code != 0).then_some(self.header.code)
    }

    /// Byte size of the code blob (`.shader_text`, trailer included).
    pub fn code_length(&self) -> u32 {
        self.header.shader_size
    }

    /// Scratch dwords per thread.
    pub fn scratch_size_dw_per_thread(&self) -> u16 {
        self.header.scratch_size_dw_per_thread
    }

    /// Total size of the header blob.
    pub fn header_size(&self) -> u32 {
        self.header.header_size
    }

    /// Guest range `(start, len)` holding the header and all its tables.
    pub fn extent(&self) -> (u64, u64) {
        (self.header_address, u64::from(self.header.header_size))
    }

    /// The program-address register pair for the container's type.
    pub fn program_registers(&self) -> Option<ProgramRegisterPair> {
        self.shader_type.program_registers()
    }

    /// Index of the program LO entry in [`sh_registers`](Self::sh_registers)
    /// (HI is the next one).
    pub fn program_register_index(&self) -> Option<usize> {
        self.program_index.map(|i| i as usize)
    }

    /// The address the SH table's program pair encodes (the code address
    /// once created; 0 in a fresh file).
    pub fn program_address(&self) -> Option<u64> {
        let i = self.program_register_index()?;
        let lo = self.sh_registers.get(i)?;
        let hi = self.sh_registers.get(i.checked_add(1)?)?;
        Some(program_address(lo.value, hi.value))
    }

    /// The guest address of a header offset.
    pub fn address_of(&self, header_offset: u32) -> u64 {
        self.header_address.wrapping_add(u64::from(header_offset))
    }

    /// The `.shader_text` trailer, read from guest memory at the code
    /// address; `None` when the container has no code address or the last
    /// 0x30 bytes of the code blob are not a `barefoot` trailer.
    pub fn read_trailer(&self, mem: &dyn GuestMemory) -> Result<Option<BarefootTrailer>, ShaderError> {
        let Some(code) = self.code_address() else {
            return Ok(None);
        };
        BarefootTrailer::read(mem, code, self.header.shader_size)
    }

    /// Byte length of the program proper: the trailer's program length
    /// when a trailer is present and consistent, otherwise `shader_size`
    /// (shader-containers.md §1.13).
    pub fn program_length(&self, trailer: Option<&BarefootTrailer>) -> u32 {
        let limit = self.header.shader_size.saturating_sub(TRAILER_LEN);
        match trailer {
            Some(t) if t.program_length <= limit => t.program_length,
            _ => self.header.shader_size,
        }
    }
}

pub(super) fn decode_user_data(
    blob: &[u8],
    ud: &[u8],
    ud_at: u64,
    r: &Resolver,
    layout: &mut AgcLayout,
) -> Result<UserData, ShaderError> {
    use offsets::user_data as o;
    let field_offset = |o: u32| ud_at.saturating_add(u64::from(o));
    let raw = |o: u32| bytes::u64_at(ud, u64::from(o)).unwrap_or(0);
    let count = |o: u32| bytes::u16_at(ud, u64::from(o)).unwrap_or(0);

    let direct_at =
        r.resolve("user_data.direct_resources", field_offset(o::DIRECT_RESOURCES), raw(o::DIRECT_RESOURCES))?;
    let direct = r.table(
        blob,
        "user_data.direct_resources",
        field_offset(o::DIRECT_RESOURCES),
        direct_at,
        u64::from(count(o::DIRECT_RESOURCE_COUNT)),
        u64::from(RESOURCE_ENTRY_LEN),
    )?;
    layout.direct_resources = direct_at.map(to_u32);

    let mut sharp_resources: [Vec<SharpEntry>; 4] = Default::default();
    for (kind, (&fo, name)) in o::SHARP_RESOURCES.iter().zip(SHARP_FIELD_NAMES).enumerate() {
        let at = r.resolve(name, field_offset(fo), raw(fo))?;
        let n = count(o::SHARP_RESOURCE_COUNTS.saturating_add(2 * kind as u32));
        let table = r.table(blob, name, field_offset(fo), at, u64::from(n), u64::from(RESOURCE_ENTRY_LEN))?;
        if let Some(slot) = layout.sharp_resources.get_mut(kind) {
            *slot = at.map(to_u32);
        }
        if let Some(slot) = sharp_resources.get_mut(kind) {
            *slot = u16_entries(table).into_iter().map(SharpEntry).collect();
        }
    }
    Ok(UserData {
        direct_resources: u16_entries(direct),
        sharp_resources,
        eud_size_dw: count(o::EUD_SIZE_DW),
        srt_size_dw: count(o::SRT_SIZE_DW),
    })
}

/// The first SH entry holding the type's LO register, which must be directly
/// followed by HI (shader-containers.md §1.11 and §1.13;
/// sh\[0\]/sh\[1\] in every observed container).
pub(super) fn find_program_pair(
    sh: &[RegisterEntry],
    shader_type: ShaderType,
    pair: ProgramRegisterPair,
) -> Result<u32, ShaderError> {
    let index = sh.iter().position(|e| e.offset == pair.sh_lo()).ok_or(ShaderError::MissingProgramRegister {
        shader_type,
        offset: u64::from(offsets::SH_REGISTERS),
        lo: pair.sh_lo(),
    })?;
    let next = index.saturating_add(1);
    let found = sh.get(next).map(|e| e.offset);
    if found != Some(pair.sh_hi()) {
        return Err(ShaderError::ProgramHiNotNext {
            shader_type,
            index: index as u32,
            next: next as u32,
            found,
            hi: pair.sh_hi(),
        });
    }
    Ok(index as u32)
}

/// Reads the `header_size` bytes of the header at `header_address`, after
/// checking magic, version and size from its first 0x60 bytes.
pub(crate) fn read_header_blob(mem: &dyn GuestMemory, header_address: u64) -> Result<Vec<u8>, ShaderError> {
    let mut head = [0u8; HEADER_LEN as usize];
    mem.read_bytes(header_address, &mut head).map_err(|source| ShaderError::Memory {
        what: "AGC header",
        address: header_address,
        source,
    })?;
    let header = check_header(&head, u64::from(MAX_HEADER_SIZE))?;
    let mut blob = vec![0u8; header.header_size as usize];
    mem.read_bytes(header_address, &mut blob).map_err(|source| ShaderError::Memory {
        what: "AGC header tables",
        address: header_address,
        source,
    })?;
    Ok(blob)
}
