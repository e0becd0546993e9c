//! A queue's registers as a callback sees them: one register, a range, and
//! the typed views a renderer reads (bound programs and their user data,
//! render targets, viewports, scissors, the depth target).
//!
//! A `pm4_registers` pointer is handed to a draw or dispatch callback and
//! is valid during that callback only. Each function checks that the
//! pointer is the one of a callback running on the calling thread now (a
//! thread-local mark set around the callback), so a pointer kept and used
//! later is `PM4_STATUS_INVALID_HANDLE`, never a read of a dead frame.

use std::cell::Cell;
use std::ffi::c_char;

use pm4core::regs::db::{self, GpuFamily};
use pm4core::regs::{ProgramStage, RegisterFile, REGISTER_FILE_DWORDS};

use crate::args::{slice_mut, text, Out};
use crate::error::{boundary, pm4_status, Error};

/// A queue's register file during a draw or dispatch callback (opaque).
pub struct pm4_registers {
    file: *const RegisterFile,
}

thread_local! {
    /// The `pm4_registers` of the callback running on this thread.
    static LIVE: Cell<*const pm4_registers> = const { Cell::new(std::ptr::null()) };
}

/// A callback's registers: lives on the trampoline's stack for the call.
pub(crate) struct CallbackRegisters {
    registers: pm4_registers,
}

impl CallbackRegisters {
    #[inline]
    pub(crate) fn new(file: &RegisterFile) -> Self {
        CallbackRegisters { registers: pm4_registers { file } }
    }

    #[inline]
    pub(crate) fn as_ptr(&self) -> *const pm4_registers {
        &self.registers
    }

    /// Runs `call` with these registers marked live on this thread (the
    /// previous mark, of an enclosing callback, is restored after).
    #[inline]
    pub(crate) fn during<R>(&self, call: impl FnOnce() -> R) -> R {
        struct Restore(*const pm4_registers);
        impl Drop for Restore {
            fn drop(&mut self) {
                LIVE.with(|live| live.set(self.0));
            }
        }
        let _restore = Restore(LIVE.with(|live| live.replace(self.as_ptr())));
        call()
    }
}

/// The register file behind `registers`, if it is the live one.
fn live<'a>(registers: *const pm4_registers) -> Result<&'a RegisterFile, Error> {
    if registers.is_null() {
        return Err(Error::null("registers"));
    }
    if LIVE.with(Cell::get) != registers {
        return Err(Error::new(
            pm4_status::PM4_STATUS_INVALID_HANDLE,
            format_args!(
                "registers ({registers:p}) are not those of a draw or dispatch callback running on this thread \
                 (a pm4_registers is valid during its callback only)"
            ),
        ));
    }
    // SAFETY: `registers` is the mark of a callback running on this thread
    // (checked above): it points to that callback's `CallbackRegisters` on
    // the trampoline's stack, whose `file` borrows the queue's register
    // file for the whole call, which has not returned.
    Ok(unsafe { &*(*registers).file })
}

fn check_range(start: u32, count: usize) -> Result<(), Error> {
    let end = (start as usize).checked_add(count);
    if end.is_none_or(|end| end > REGISTER_FILE_DWORDS) {
        return Err(Error::new(
            pm4_status::PM4_STATUS_OUT_OF_RANGE,
            format_args!("registers {start:#x}..+{count} run past the register file (0..{REGISTER_FILE_DWORDS:#x})"),
        ));
    }
    Ok(())
}

/// Reads register `index` (an absolute dword index, 0..0x10000; unwritten
/// registers read 0) into `*value`.
///
/// Threads: inside the draw or dispatch callback that was given `registers`.
///
/// # Safety
///
/// `value` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_registers_get(registers: *const pm4_registers, index: u32, value: *mut u32) -> pm4_status {
    boundary("pm4_registers_get", || {
        let file = live(registers)?;
        let out = Out::new(value, "value")?;
        check_range(index, 1)?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(file.get(index)) };
        Ok(())
    })
}

/// Reads `count` registers from `start` on into `out`.
///
/// Threads: inside the draw or dispatch callback that was given `registers`.
///
/// # Safety
///
/// `out .. out + count` is valid for writes.
#[no_mangle]
pub unsafe extern "C" fn pm4_registers_read(
    registers: *const pm4_registers,
    start: u32,
    out: *mut u32,
    count: usize,
) -> pm4_status {
    boundary("pm4_registers_read", || {
        let file = live(registers)?;
        check_range(start, count)?;
        // SAFETY: the caller's promise for `out[..count]`.
        let out = unsafe { slice_mut(out, count, "out")? };
        file.read_into(start, out);
        Ok(())
    })
}

/// `PM4_STAGE_*`: the pixel shader stage.
pub const PM4_STAGE_PS: u32 = 0;
/// The vertex shader stage (legacy, non-NGG pipelines).
pub const PM4_STAGE_VS: u32 = 1;
/// The ES stage (merged ES+GS, or NGG geometry).
pub const PM4_STAGE_ES: u32 = 2;
/// The LS stage (merged LS+HS).
pub const PM4_STAGE_LS: u32 = 3;
/// The compute stage.
pub const PM4_STAGE_CS: u32 = 4;

/// A program bound to a stage and its user-data registers.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_program {
    /// Code address from PGM_LO/HI (0 = nothing bound).
    pub address: u64,
    /// User-data registers (USER_DATA_0..): 32 for graphics stages, 16 for
    /// compute (`user_data_count`).
    pub user_data: [u32; 32],
    pub user_data_count: u32,
}

fn stage_of(stage: u32) -> Result<ProgramStage, Error> {
    Ok(match stage {
        PM4_STAGE_PS => ProgramStage::Ps,
        PM4_STAGE_VS => ProgramStage::Vs,
        PM4_STAGE_ES => ProgramStage::Es,
        PM4_STAGE_LS => ProgramStage::Ls,
        PM4_STAGE_CS => ProgramStage::Cs,
        other => return Err(Error::invalid(format_args!("stage {other} is not a PM4_STAGE_* value (0..=4)"))),
    })
}

/// The program bound to `stage` (`PM4_STAGE_*`) and its user data.
///
/// Threads: inside the draw or dispatch callback that was given `registers`.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_registers_program(
    registers: *const pm4_registers,
    stage: u32,
    out: *mut pm4_program,
) -> pm4_status {
    boundary("pm4_registers_program", || {
        let file = live(registers)?;
        let out = Out::new(out, "out")?;
        let view = file.view();
        let stage = stage_of(stage)?;
        let data = view.user_data(stage);
        let mut program = pm4_program { address: view.program_address(stage), user_data: [0; 32], user_data_count: 0 };
        let n = data.len().min(32);
        program.user_data[..n].copy_from_slice(&data[..n]);
        program.user_data_count = n as u32;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(program) };
        Ok(())
    })
}

/// A colour target's base state (CB_COLORn_*).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_render_target {
    pub index: u32,
    /// Byte address: (BASE << 8) | (BASE_EXT << 40).
    pub address: u64,
    pub info: u32,
    pub view: u32,
    pub attrib: u32,
    pub attrib2: u32,
    pub attrib3: u32,
}

/// Colour target `index` (0..8).
///
/// Threads: inside the draw or dispatch callback that was given `registers`.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_registers_render_target(
    registers: *const pm4_registers,
    index: u32,
    out: *mut pm4_render_target,
) -> pm4_status {
    boundary("pm4_registers_render_target", || {
        let file = live(registers)?;
        let out = Out::new(out, "out")?;
        let rt = file.view().render_target(index).ok_or_else(|| {
            Error::new(pm4_status::PM4_STATUS_OUT_OF_RANGE, format_args!("render target {index} (there are 8)"))
        })?;
        let target = pm4_render_target {
            index: rt.index,
            address: rt.address,
            info: rt.info,
            view: rt.view,
            attrib: rt.attrib,
            attrib2: rt.attrib2,
            attrib3: rt.attrib3,
        };
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(target) };
        Ok(())
    })
}

/// One viewport's transform and depth range.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_viewport {
    pub x_scale: f32,
    pub x_offset: f32,
    pub y_scale: f32,
    pub y_offset: f32,
    pub z_scale: f32,
    pub z_offset: f32,
    pub z_min: f32,
    pub z_max: f32,
}

/// Viewport `index` (0..16).
///
/// Threads: inside the draw or dispatch callback that was given `registers`.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_registers_viewport(
    registers: *const pm4_registers,
    index: u32,
    out: *mut pm4_viewport,
) -> pm4_status {
    boundary("pm4_registers_viewport", || {
        let file = live(registers)?;
        let out = Out::new(out, "out")?;
        let v = file.view().viewport(index).ok_or_else(|| {
            Error::new(pm4_status::PM4_STATUS_OUT_OF_RANGE, format_args!("viewport {index} (there are 16)"))
        })?;
        let viewport = pm4_viewport {
            x_scale: v.x_scale,
            x_offset: v.x_offset,
            y_scale: v.y_scale,
            y_offset: v.y_offset,
            z_scale: v.z_scale,
            z_offset: v.z_offset,
            z_min: v.z_min,
            z_max: v.z_max,
        };
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(viewport) };
        Ok(())
    })
}

/// A scissor rectangle: top-left inclusive, bottom-right exclusive.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_scissor {
    pub left: u32,
    pub top: u32,
    pub right: u32,
    pub bottom: u32,
}

/// Viewport scissor `index` (0..16).
///
/// Threads: inside the draw or dispatch callback that was given `registers`.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_registers_scissor(
    registers: *const pm4_registers,
    index: u32,
    out: *mut pm4_scissor,
) -> pm4_status {
    boundary("pm4_registers_scissor", || {
        let file = live(registers)?;
        let out = Out::new(out, "out")?;
        let s = file.view().scissor(index).ok_or_else(|| {
            Error::new(pm4_status::PM4_STATUS_OUT_OF_RANGE, format_args!("scissor {index} (there are 16)"))
        })?;
        let scissor =
            pm4_scissor { left: s.top_left.0, top: s.top_left.1, right: s.bottom_right.0, bottom: s.bottom_right.1 };
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(scissor) };
        Ok(())
    })
}

/// The depth target.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pm4_depth_target {
    /// DB_Z_INFO.
    pub z_info: u32,
    /// Read base address: (DB_Z_READ_BASE << 8) | (HI << 40).
    pub address: u64,
    /// DB_DEPTH_SIZE_XY.
    pub size_xy: u32,
}

/// The depth target's state.
///
/// Threads: inside the draw or dispatch callback that was given `registers`.
///
/// # Safety
///
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_registers_depth(
    registers: *const pm4_registers,
    out: *mut pm4_depth_target,
) -> pm4_status {
    boundary("pm4_registers_depth", || {
        let file = live(registers)?;
        let out = Out::new(out, "out")?;
        let (z_info, address, size_xy) = file.view().depth();
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(pm4_depth_target { z_info, address, size_xy }) };
        Ok(())
    })
}

/// The absolute dword index of the gfx10.3 register named `name` (as AMD's
/// register database spells it: `"CB_COLOR0_BASE"`), for
/// `pm4_registers_get` and the command buffers an emulator writes.
/// `PM4_STATUS_INVALID_ARGUMENT` when no register has that name.
///
/// Threads: any. From a callback: yes.
///
/// # Safety
///
/// `name` is a NUL-terminated string; `index` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pm4_register_index(name: *const c_char, index: *mut u32) -> pm4_status {
    boundary("pm4_register_index", || {
        // SAFETY: the caller's promise for `name`.
        let name = unsafe { text(name, "name")? };
        let out = Out::new(index, "index")?;
        let info = db::register_by_name(GpuFamily::Gfx103, name)
            .ok_or_else(|| Error::invalid(format_args!("no gfx10.3 register is named {name:?}")))?;
        // SAFETY: checked by `Out::new`; the caller's promise.
        unsafe { out.write(info.offset) };
        Ok(())
    })
}
