//! Console shader containers: what a program's code address means.
//!
//! The command processor binds programs by code address only (the
//! SPI_SHADER_PGM_LO/HI_* and COMPUTE_PGM_LO/HI writes). The containers the
//! driver created around that code carry everything else — register lists,
//! user-data layout, semantics, code length:
//!
//! - [`agc`]: the PS5 AGC `Shader` header, its decoding, validation and the
//!   relocation `sceAgcCreateShader` performs ([`create_shader`]);
//! - [`registry`]: created shaders keyed by code address, decoded once;
//! - [`gnm`]: PS4 — the `OrbShdr` block after the code, its CRC, the
//!   program a code address binds, and the `Shdr` shader-binary file;
//! - [`program`]: what a program binding holds on either family
//!   ([`BoundProgram`]: raw code, an AGC container, a GNM program);
//! - [`dvlb`]: the 3DS `DVLB` shader binary (for inspection only);
//! - [`inspect`]: recognising a file by its magic and describing it.
//!
//! Facts and their sources are in `shader-containers.md` of the shared
//! reference; section numbers cited in comments (§1.11, …) refer to it.

pub mod agc;
mod bytes;
#[cfg(feature = "legacy-shaders")]
pub mod dvlb;
mod error;
pub mod gnm;
#[cfg(feature = "legacy-shaders")]
pub mod inspect;
pub mod program;
pub mod registry;

pub use agc::{
    create_shader, register_relocated, AgcShader, PipelineStage, ProgramRegisterPair, ShaderStage, ShaderType,
};
pub use error::ShaderError;
pub use program::{BoundProgram, ProgramContainer};
pub use registry::ShaderRegistry;
