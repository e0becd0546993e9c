//! PS4 GNM shaders: the `OrbShdr` info block that trails the GPU code, its
//! CRC, the program a code address binds ([`GnmProgram`]), and (with the
//! `legacy-shaders` feature) the `Shdr` shader-binary file with its stage
//! structs, input-usage slots and semantics (shader-containers.md §2).
//!
//! On PS4 the command processor again sees only a code address; the block
//! after the code gives the code's length and identity. [`GnmCode::read`]
//! finds it from a code address the way shader-containers.md §2.8 describes:
//! the compiler's first instruction `s_mov_b32 vcc_hi, literal` points at
//! it, the signature confirms it, and a bounded scan is the fallback.
//! [`GnmProgram::read`] also validates it; the shader registry caches the
//! result per code address ([`crate::shader::ShaderRegistry::resolve_gnm`]).

use crate::memory::GuestMemory;

use super::bytes::{self, Bytes};
use super::ShaderError;

/// The block's signature.
pub const ORBSHDR_SIGNATURE: [u8; 7] = *b"OrbShdr";
/// Size of `GnmShaderBinaryInfo`.
pub const ORBSHDR_LEN: u32 = 0x1C;
/// `s_mov_b32 vcc_hi, <literal>`: the first dword of compiler output.
pub const VCC_HI_MOV_LITERAL: u32 = 0xBEEB_03FF;
/// How far the fallback scan looks: 0x4000 dwords.
pub const SCAN_LIMIT: u64 = 0x4000 * 4;
/// `Shdr` file magic.
pub const SHDR_MAGIC: u32 = 0x7264_6853;
/// Size of `GnmShaderFileHeader`.
pub const SHDR_HEADER_LEN: u32 = 0x10;

mod orbshdr;
mod program;
#[cfg(feature = "legacy-shaders")]
mod shdr;

pub use orbshdr::*;
pub use program::*;
#[cfg(feature = "legacy-shaders")]
pub use shdr::*;
