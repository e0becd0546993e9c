//! Registers: the generated database (names, offsets, bitfields) of each
//! GPU family, the shader stages' register groups ([`stages`]) and the
//! per-processor register file with its typed views, read in a family's
//! layout ([`RegisterFile::view_for`]).

pub mod db;
#[rustfmt::skip]
pub mod generated;
pub mod stages;

pub use db::GpuFamily;
pub use generated::{gfx103, gfx7};
pub use stages::{HardwareStage, ProgramRegister, StageRegisters};

/// Dword index bases of the four packet-writable register spaces.
pub mod space {
    /// SET_CONFIG_REG base.
    pub const CONFIG: u32 = 0x2000;
    /// SET_SH_REG base.
    pub const SH: u32 = 0x2C00;
    /// SET_CONTEXT_REG base.
    pub const CONTEXT: u32 = 0xA000;
    /// SET_UCONFIG_REG base.
    pub const UCONFIG: u32 = 0xC000;
    /// One past the last register index a packet can name.
    pub const END: u32 = 0x1_0000;
    /// Context registers that exist (0xA000..0xA400).
    pub const CONTEXT_SIZE: u32 = 0x400;
    /// SH registers (0x2C00..0x3000).
    pub const SH_SIZE: u32 = 0x400;
    /// Uconfig registers (0xC000..0x10000).
    pub const UCONFIG_SIZE: u32 = 0x4000;
}

/// Pipeline stages a draw can bind a program to (gfx10.3 slots): the
/// SPI_SHADER_PGM_* / COMPUTE_PGM_* register groups. Every family's
/// hardware stages are [`HardwareStage`]; on gfx7 these slots are its PS,
/// VS, ES and LS stages ([`ProgramStage::hardware_stage`]).
///
/// ```
/// use pm4core::regs::{ProgramStage, RegisterFile};
///
/// let mut regs = RegisterFile::new();
/// regs.set(pm4core::regs::gfx103::SPI_SHADER_PGM_LO_PS, 0x1000);
/// assert_eq!(regs.view().program_address(ProgramStage::Ps), 0x10_0000);
/// assert_eq!(ProgramStage::GRAPHICS[0].name(), "ps");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProgramStage {
    /// SPI_SHADER_PGM_*_PS.
    Ps,
    /// SPI_SHADER_PGM_*_VS (legacy, non-NGG pipelines).
    Vs,
    /// SPI_SHADER_PGM_*_ES: merged ES+GS or NGG geometry.
    Es,
    /// SPI_SHADER_PGM_*_LS: merged LS+HS.
    Ls,
    /// COMPUTE_PGM_*.
    Cs,
}

impl ProgramStage {
    /// Graphics stages in a fixed order (index into [`crate::backend::Draw::programs`]).
    pub const GRAPHICS: [ProgramStage; 4] = [Self::Ps, Self::Vs, Self::Es, Self::Ls];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ps => "ps",
            Self::Vs => "vs",
            Self::Es => "es",
            Self::Ls => "ls",
            Self::Cs => "cs",
        }
    }

    /// The hardware stage whose PGM_LO/HI pair binds this slot's program.
    pub const fn hardware_stage(self) -> HardwareStage {
        match self {
            Self::Ps => HardwareStage::Ps,
            Self::Vs => HardwareStage::Vs,
            Self::Es => HardwareStage::Es,
            Self::Ls => HardwareStage::Ls,
            Self::Cs => HardwareStage::Cs,
        }
    }
}

/// A packet-writable register space: where it starts and how many
/// registers a packet may address from its base.
///
/// ```
/// use pm4core::packet::Opcode;
/// use pm4core::regs::RegisterSpace;
///
/// let sh = Opcode::SET_SH_REG.register_space().unwrap();
/// assert_eq!(sh, RegisterSpace::SH);
/// assert_eq!(sh.register(0x8), Some(0x2C08));
/// assert_eq!(sh.register(0x400), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegisterSpace {
    /// Absolute dword index of offset 0.
    pub base: u32,
    /// Registers addressable from the base.
    pub size: u32,
}

impl RegisterSpace {
    /// SET_CONFIG_REG / LOAD_CONFIG_REG.
    pub const CONFIG: RegisterSpace = RegisterSpace { base: space::CONFIG, size: space::SH - space::CONFIG };
    /// SET_SH_REG and its forms.
    pub const SH: RegisterSpace = RegisterSpace { base: space::SH, size: space::SH_SIZE };
    /// SET_CONTEXT_REG and its forms.
    pub const CONTEXT: RegisterSpace = RegisterSpace { base: space::CONTEXT, size: space::UCONFIG - space::CONTEXT };
    /// SET_UCONFIG_REG and its forms.
    pub const UCONFIG: RegisterSpace = RegisterSpace { base: space::UCONFIG, size: space::UCONFIG_SIZE };

    /// The absolute index of `offset`, if the space holds it.
    pub const fn register(self, offset: u32) -> Option<u32> {
        if offset < self.size {
            Some(self.base + offset)
        } else {
            None
        }
    }

    /// The offset of absolute register `index` in this space, if it is in it.
    pub const fn offset_of(self, index: u32) -> Option<u32> {
        if index >= self.base && index - self.base < self.size {
            Some(index - self.base)
        } else {
            None
        }
    }
}

/// Number of dwords in a register file: every index a packet can name.
pub const REGISTER_FILE_DWORDS: usize = space::END as usize;

/// Registers per page of a [`RegisterFile`].
pub const REGISTER_PAGE: usize = 256;

const PAGES: usize = REGISTER_FILE_DWORDS / REGISTER_PAGE;

static ZERO_PAGE: [u32; REGISTER_PAGE] = [0; REGISTER_PAGE];

/// The full register file of one processor: every write lands here, whether
/// or not a handler adds behaviour. Indexed by absolute dword register index
/// (0..0x10000). Stored in 256-register pages allocated on first write, so
/// a queue pays only for the register ranges it uses; unwritten registers
/// read as 0.
#[derive(Clone)]
pub struct RegisterFile {
    /// The page table, inline: a register is one load from its page.
    pages: [Option<Box<[u32; REGISTER_PAGE]>>; PAGES],
}

impl Default for RegisterFile {
    fn default() -> Self {
        Self { pages: [const { None }; PAGES] }
    }
}

impl std::fmt::Debug for RegisterFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nonzero = self.iter_nonzero().count();
        write!(f, "RegisterFile({nonzero} non-zero registers)")
    }
}

impl RegisterFile {
    /// All registers zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of register `index` (absolute dword index; indices past the
    /// file read as 0).
    #[inline]
    pub fn get(&self, index: u32) -> u32 {
        let i = index as usize;
        match self.pages.get(i / REGISTER_PAGE) {
            Some(Some(page)) => page.get(i % REGISTER_PAGE).copied().unwrap_or(0),
            _ => 0,
        }
    }

    #[inline]
    fn page_mut(&mut self, page: usize) -> Option<&mut [u32; REGISTER_PAGE]> {
        if !matches!(self.pages.get(page), Some(Some(_))) {
            return self.first_page_use(page);
        }
        match self.pages.get_mut(page) {
            Some(Some(p)) => Some(p),
            _ => None,
        }
    }

    /// A page's first write: the page is allocated.
    #[cold]
    #[inline(never)]
    fn first_page_use(&mut self, page: usize) -> Option<&mut [u32; REGISTER_PAGE]> {
        let slot = self.pages.get_mut(page)?;
        Some(slot.get_or_insert_with(|| Box::new([0; REGISTER_PAGE])))
    }

    /// Stores `value` in register `index`; returns false (and stores nothing)
    /// when the index is past the file.
    #[inline]
    pub fn set(&mut self, index: u32, value: u32) -> bool {
        let i = index as usize;
        match self.page_mut(i / REGISTER_PAGE).and_then(|p| p.get_mut(i % REGISTER_PAGE)) {
            Some(slot) => {
                *slot = value;
                true
            }
            None => false,
        }
    }

    /// A 64-bit value from a LO/HI register pair.
    pub fn get_pair(&self, lo: u32) -> u64 {
        u64::from(self.get(lo)) | (u64::from(self.get(lo.wrapping_add(1))) << 32)
    }

    /// Registers `start..start + len`, clamped to the end of `start`'s
    /// 256-register page (every per-stage range a renderer reads, such as
    /// a stage's user data, lies inside one page).
    pub fn range(&self, start: u32, len: u32) -> &[u32] {
        let i = start as usize;
        let at = i % REGISTER_PAGE;
        let end = at.saturating_add(len as usize).min(REGISTER_PAGE);
        let page: &[u32; REGISTER_PAGE] = match self.pages.get(i / REGISTER_PAGE) {
            Some(Some(page)) => page,
            Some(None) | None if i < REGISTER_FILE_DWORDS => &ZERO_PAGE,
            _ => return &[],
        };
        page.get(at..end).unwrap_or(&[])
    }

    /// Mutable registers `start..start + len`, clamped to the end of
    /// `start`'s page (allocating it); empty past the file.
    #[inline]
    pub fn range_mut(&mut self, start: u32, len: u32) -> &mut [u32] {
        let i = start as usize;
        let at = i % REGISTER_PAGE;
        let end = at.saturating_add(len as usize).min(REGISTER_PAGE);
        match self.page_mut(i / REGISTER_PAGE) {
            Some(page) => page.get_mut(at..end).unwrap_or(&mut []),
            None => &mut [],
        }
    }

    /// Registers `start..start + len` when they lie in one page that is
    /// already allocated; `None` otherwise (nothing is allocated).
    #[inline]
    pub(crate) fn allocated_range_mut(&mut self, start: u32, len: u32) -> Option<&mut [u32]> {
        let i = start as usize;
        let at = i % REGISTER_PAGE;
        let end = at.checked_add(len as usize).filter(|&end| end <= REGISTER_PAGE)?;
        match self.pages.get_mut(i / REGISTER_PAGE) {
            Some(Some(page)) => page.get_mut(at..end),
            _ => None,
        }
    }

    /// Copies registers `start..start + out.len()` into `out` (0 past the file).
    pub fn read_into(&self, start: u32, out: &mut [u32]) {
        for (i, slot) in out.iter_mut().enumerate() {
            *slot = self.get(start.wrapping_add(i as u32));
        }
    }

    /// Every non-zero register as `(index, value)`, in index order.
    pub fn iter_nonzero(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.pages.iter().enumerate().flat_map(|(p, page)| {
            page.iter().flat_map(move |page| {
                page.iter()
                    .enumerate()
                    .filter(|(_, v)| **v != 0)
                    .map(move |(i, v)| ((p * REGISTER_PAGE + i) as u32, *v))
            })
        })
    }

    /// Bytes of register pages allocated.
    pub fn allocated_bytes(&self) -> usize {
        self.pages.iter().flatten().count() * REGISTER_PAGE * 4 + std::mem::size_of_val(&self.pages)
    }

    /// Views for what a renderer reads, in the gfx10.3 layout.
    pub fn view(&self) -> RegisterView<'_> {
        self.view_for(GpuFamily::Gfx103)
    }

    /// Views for what a renderer reads, in `family`'s register layout.
    ///
    /// ```
    /// use pm4core::regs::{gfx7, HardwareStage, ProgramStage, RegisterFile};
    /// use pm4core::GpuFamily;
    ///
    /// let mut regs = RegisterFile::new();
    /// regs.set(gfx7::SPI_SHADER_PGM_LO_GS, 0x1000);
    /// regs.set(gfx7::SPI_SHADER_USER_DATA_ES_0, 7);
    /// regs.set(gfx7::CB_COLOR0_BASE, 0x40);
    /// let view = regs.view_for(GpuFamily::Gfx7);
    /// assert_eq!(view.stage_program_address(HardwareStage::Gs), 0x10_0000);
    /// // gfx7's ES stage has user data of its own, 16 registers.
    /// assert_eq!(view.user_data(ProgramStage::Es).len(), 16);
    /// assert_eq!(view.user_data(ProgramStage::Es)[0], 7);
    /// assert_eq!(view.render_target(0).unwrap().address, 0x4000);
    /// ```
    pub fn view_for(&self, family: GpuFamily) -> RegisterView<'_> {
        let map = match family {
            GpuFamily::Gfx103 => &GFX103_VIEW,
            GpuFamily::Gfx7 => &GFX7_VIEW,
        };
        RegisterView { regs: self, map }
    }
}

/// The registers the typed views read, in one family's layout (`None`
/// where the family has no such register).
#[derive(Debug)]
struct ViewRegisters {
    family: GpuFamily,
    compute_dim_x: u32,
    compute_start_x: u32,
    compute_num_thread_x: u32,
    pa_cl_vport_xscale: u32,
    pa_sc_vport_zmin_0: u32,
    pa_sc_vport_scissor_0_tl: u32,
    pa_sc_vport_scissor_0_br: u32,
    cb_color0_base: u32,
    cb_color0_base_ext: Option<u32>,
    cb_color0_pitch: u32,
    cb_color0_slice: u32,
    cb_color0_view: u32,
    cb_color0_info: u32,
    cb_color0_attrib: u32,
    cb_color0_attrib2: Option<u32>,
    cb_color0_attrib3: Option<u32>,
    db_z_read_base: u32,
    db_z_read_base_hi: Option<u32>,
    db_z_info: u32,
    /// DB_DEPTH_SIZE_XY on gfx10.3, DB_DEPTH_SIZE (pitch and height tile
    /// counts) on gfx7.
    db_depth_size: u32,
    vgt_primitive_type: u32,
    vgt_index_type: u32,
    vgt_num_instances: u32,
}

static GFX103_VIEW: ViewRegisters = ViewRegisters {
    family: GpuFamily::Gfx103,
    compute_dim_x: gfx103::COMPUTE_DIM_X,
    compute_start_x: gfx103::COMPUTE_START_X,
    compute_num_thread_x: gfx103::COMPUTE_NUM_THREAD_X,
    pa_cl_vport_xscale: gfx103::PA_CL_VPORT_XSCALE,
    pa_sc_vport_zmin_0: gfx103::PA_SC_VPORT_ZMIN_0,
    pa_sc_vport_scissor_0_tl: gfx103::PA_SC_VPORT_SCISSOR_0_TL,
    pa_sc_vport_scissor_0_br: gfx103::PA_SC_VPORT_SCISSOR_0_BR,
    cb_color0_base: gfx103::CB_COLOR0_BASE,
    cb_color0_base_ext: Some(gfx103::CB_COLOR0_BASE_EXT),
    cb_color0_pitch: gfx103::CB_COLOR0_PITCH,
    cb_color0_slice: gfx103::CB_COLOR0_SLICE,
    cb_color0_view: gfx103::CB_COLOR0_VIEW,
    cb_color0_info: gfx103::CB_COLOR0_INFO,
    cb_color0_attrib: gfx103::CB_COLOR0_ATTRIB,
    cb_color0_attrib2: Some(gfx103::CB_COLOR0_ATTRIB2),
    cb_color0_attrib3: Some(gfx103::CB_COLOR0_ATTRIB3),
    db_z_read_base: gfx103::DB_Z_READ_BASE,
    db_z_read_base_hi: Some(gfx103::DB_Z_READ_BASE_HI),
    db_z_info: gfx103::DB_Z_INFO,
    db_depth_size: gfx103::DB_DEPTH_SIZE_XY,
    vgt_primitive_type: gfx103::VGT_PRIMITIVE_TYPE,
    vgt_index_type: gfx103::VGT_INDEX_TYPE,
    vgt_num_instances: gfx103::VGT_NUM_INSTANCES,
};

static GFX7_VIEW: ViewRegisters = ViewRegisters {
    family: GpuFamily::Gfx7,
    compute_dim_x: gfx7::COMPUTE_DIM_X,
    compute_start_x: gfx7::COMPUTE_START_X,
    compute_num_thread_x: gfx7::COMPUTE_NUM_THREAD_X,
    pa_cl_vport_xscale: gfx7::PA_CL_VPORT_XSCALE,
    pa_sc_vport_zmin_0: gfx7::PA_SC_VPORT_ZMIN_0,
    pa_sc_vport_scissor_0_tl: gfx7::PA_SC_VPORT_SCISSOR_0_TL,
    pa_sc_vport_scissor_0_br: gfx7::PA_SC_VPORT_SCISSOR_0_BR,
    cb_color0_base: gfx7::CB_COLOR0_BASE,
    cb_color0_base_ext: None,
    cb_color0_pitch: gfx7::CB_COLOR0_PITCH,
    cb_color0_slice: gfx7::CB_COLOR0_SLICE,
    cb_color0_view: gfx7::CB_COLOR0_VIEW,
    cb_color0_info: gfx7::CB_COLOR0_INFO,
    cb_color0_attrib: gfx7::CB_COLOR0_ATTRIB,
    cb_color0_attrib2: None,
    cb_color0_attrib3: None,
    db_z_read_base: gfx7::DB_Z_READ_BASE,
    db_z_read_base_hi: None,
    db_z_info: gfx7::DB_Z_INFO,
    db_depth_size: gfx7::DB_DEPTH_SIZE,
    vgt_primitive_type: gfx7::VGT_PRIMITIVE_TYPE,
    vgt_index_type: gfx7::VGT_INDEX_TYPE,
    vgt_num_instances: gfx7::VGT_NUM_INSTANCES,
};

/// Program address from a PGM_LO/PGM_HI pair: `(HI[7:0] << 40) | (LO << 8)`.
#[inline]
pub fn program_address(lo: u32, hi: u32) -> u64 {
    (u64::from(hi & 0xFF) << 40) | (u64::from(lo) << 8)
}

/// One viewport's transform (PA_CL_VPORT_*) and depth range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viewport {
    pub x_scale: f32,
    pub x_offset: f32,
    pub y_scale: f32,
    pub y_offset: f32,
    pub z_scale: f32,
    pub z_offset: f32,
    pub z_min: f32,
    pub z_max: f32,
}

/// A scissor rectangle, top-left inclusive, bottom-right exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scissor {
    pub top_left: (u32, u32),
    pub bottom_right: (u32, u32),
}

/// A colour target's base state (CB_COLORn_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderTarget {
    pub index: u32,
    /// Byte address: (BASE << 8) | (BASE_EXT << 40) (gfx7 has no BASE_EXT:
    /// BASE << 8).
    pub address: u64,
    pub info: u32,
    pub view: u32,
    pub attrib: u32,
    /// CB_COLORn_ATTRIB2 (gfx10.3; 0 on gfx7, which has none).
    pub attrib2: u32,
    /// CB_COLORn_ATTRIB3 (gfx10.3; 0 on gfx7, which has none).
    pub attrib3: u32,
    /// CB_COLORn_PITCH: gfx7's surface pitch (TILE_MAX); not used by gfx10.3.
    pub pitch: u32,
    /// CB_COLORn_SLICE: gfx7's slice size (TILE_MAX); not used by gfx10.3.
    pub slice: u32,
}

/// Read-only typed views of the register file, in one family's register
/// layout ([`RegisterFile::view`] for gfx10.3, [`RegisterFile::view_for`]).
#[derive(Clone, Copy, Debug)]
pub struct RegisterView<'a> {
    regs: &'a RegisterFile,
    map: &'static ViewRegisters,
}

impl RegisterView<'_> {
    /// The family whose layout this view reads.
    pub fn family(&self) -> GpuFamily {
        self.map.family
    }

    /// Program address of a graphics or compute stage (its hardware
    /// stage's PGM_LO/HI pair, [`ProgramStage::hardware_stage`]).
    pub fn program_address(&self, stage: ProgramStage) -> u64 {
        self.stage_program_address(stage.hardware_stage())
    }

    /// Program address of a hardware stage; 0 when the family has no such
    /// stage.
    pub fn stage_program_address(&self, stage: HardwareStage) -> u64 {
        match stages::stage_registers(self.map.family, stage) {
            Some(s) => program_address(self.regs.get(s.pgm_lo), self.regs.get(s.pgm_hi)),
            None => 0,
        }
    }

    /// User-data registers of a stage. gfx10.3: 32 for graphics stages
    /// (the merged ES and LS stages read GS's and HS's), 16 for compute;
    /// gfx7: each stage's own 16.
    pub fn user_data(&self, stage: ProgramStage) -> &[u32] {
        let hardware = match (self.map.family, stage) {
            (GpuFamily::Gfx103, ProgramStage::Es) => HardwareStage::Gs,
            (GpuFamily::Gfx103, ProgramStage::Ls) => HardwareStage::Hs,
            (_, stage) => stage.hardware_stage(),
        };
        self.stage_user_data(hardware)
    }

    /// The user-data registers of a hardware stage (empty when it has none
    /// of its own on the family).
    pub fn stage_user_data(&self, stage: HardwareStage) -> &[u32] {
        match stages::stage_registers(self.map.family, stage).and_then(|s| Some((s.user_data?, s.user_data_count))) {
            Some((base, len)) => self.regs.range(base, len),
            None => &[],
        }
    }

    /// COMPUTE_DIM_X/Y/Z.
    pub fn compute_dims(&self) -> [u32; 3] {
        let x = self.map.compute_dim_x;
        [x, x + 1, x + 2].map(|r| self.regs.get(r))
    }

    /// COMPUTE_START_X/Y/Z.
    pub fn compute_start(&self) -> [u32; 3] {
        let x = self.map.compute_start_x;
        [x, x + 1, x + 2].map(|r| self.regs.get(r))
    }

    /// Threads per group (NUM_THREAD_FULL of COMPUTE_NUM_THREAD_X/Y/Z).
    pub fn threads_per_group(&self) -> [u32; 3] {
        let x = self.map.compute_num_thread_x;
        [x, x + 1, x + 2].map(|r| self.regs.get(r) & 0xFFFF)
    }

    /// Viewport `i` (0..16).
    pub fn viewport(&self, i: u32) -> Option<Viewport> {
        if i >= 16 {
            return None;
        }
        let t = self.map.pa_cl_vport_xscale + i * 6;
        let z = self.map.pa_sc_vport_zmin_0 + i * 2;
        let f = |r: u32| f32::from_bits(self.regs.get(r));
        Some(Viewport {
            x_scale: f(t),
            x_offset: f(t + 1),
            y_scale: f(t + 2),
            y_offset: f(t + 3),
            z_scale: f(t + 4),
            z_offset: f(t + 5),
            z_min: f(z),
            z_max: f(z + 1),
        })
    }

    /// Viewport scissor `i` (0..16).
    pub fn scissor(&self, i: u32) -> Option<Scissor> {
        if i >= 16 {
            return None;
        }
        let tl = self.regs.get(self.map.pa_sc_vport_scissor_0_tl + i * 2);
        let br = self.regs.get(self.map.pa_sc_vport_scissor_0_br + i * 2);
        Some(Scissor { top_left: (tl & 0x7FFF, (tl >> 16) & 0x7FFF), bottom_right: (br & 0x7FFF, (br >> 16) & 0x7FFF) })
    }

    /// A register the family may lack, with a stride per index: 0 without it.
    fn optional(&self, register: Option<u32>, i: u32) -> u32 {
        register.map_or(0, |r| self.regs.get(r + i))
    }

    /// Colour target `i` (0..8).
    pub fn render_target(&self, i: u32) -> Option<RenderTarget> {
        if i >= 8 {
            return None;
        }
        let m = self.map;
        let at = |r: u32| self.regs.get(r + i * 15);
        Some(RenderTarget {
            index: i,
            address: (u64::from(at(m.cb_color0_base)) << 8)
                | (u64::from(self.optional(m.cb_color0_base_ext, i) & 0xFF) << 40),
            view: at(m.cb_color0_view),
            info: at(m.cb_color0_info),
            attrib: at(m.cb_color0_attrib),
            attrib2: self.optional(m.cb_color0_attrib2, i),
            attrib3: self.optional(m.cb_color0_attrib3, i),
            pitch: at(m.cb_color0_pitch),
            slice: at(m.cb_color0_slice),
        })
    }

    /// Depth buffer: (DB_Z_INFO, read base address, depth size): the size
    /// register is DB_DEPTH_SIZE_XY on gfx10.3, DB_DEPTH_SIZE (PITCH_TILE_MAX,
    /// HEIGHT_TILE_MAX) on gfx7, whose base has no _HI register.
    pub fn depth(&self) -> (u32, u64, u32) {
        let m = self.map;
        let base = (u64::from(self.regs.get(m.db_z_read_base)) << 8)
            | (u64::from(self.optional(m.db_z_read_base_hi, 0) & 0xFF) << 40);
        (self.regs.get(m.db_z_info), base, self.regs.get(m.db_depth_size))
    }

    /// VGT_PRIMITIVE_TYPE.
    pub fn primitive_type(&self) -> u32 {
        self.regs.get(self.map.vgt_primitive_type)
    }

    /// VGT_INDEX_TYPE (index size code: 0 16-bit, 1 32-bit, 2 8-bit on gfx10.3).
    pub fn index_type(&self) -> u32 {
        self.regs.get(self.map.vgt_index_type) & 3
    }

    /// VGT_NUM_INSTANCES.
    pub fn num_instances(&self) -> u32 {
        self.regs.get(self.map.vgt_num_instances)
    }
}
