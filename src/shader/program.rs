//! What a program binding holds on either family: the code address the
//! PGM_LO/HI pair (COMPUTE_PGM_LO/HI) names, and what describes the code
//! there. On PS5 (gfx10.3) that is the AGC container a creation call
//! registered for the address; on PS4 (gfx7) the `OrbShdr` block that
//! trails the code. [`ShaderRegistry::bind_program`](super::ShaderRegistry::bind_program)
//! gives it, one call for either family.

use std::sync::Arc;

use super::agc::AgcShader;
use super::gnm::GnmProgram;

/// What describes the code a program binding names.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ProgramContainer {
    /// Nothing: raw code (no AGC registration on gfx10.3, no valid
    /// `OrbShdr` block on gfx7), or no program bound (address 0).
    #[default]
    Raw,
    /// The AGC container registered for the address (gfx10.3).
    Agc(Arc<AgcShader>),
    /// The GNM program: the validated `OrbShdr` block after the code (gfx7).
    Gnm(Arc<GnmProgram>),
}

/// A program bound to a stage: its code address and what describes it.
///
/// ```
/// use pm4core::memory::SparseMemory;
/// use pm4core::shader::{ProgramContainer, ShaderRegistry};
/// use pm4core::GpuFamily;
///
/// let memory = SparseMemory::new();
/// memory.map_zeroed(0x10_0000, 0x1000).unwrap();
/// let registry = ShaderRegistry::new();
/// // Code with neither an AGC registration nor an OrbShdr block: raw code.
/// for family in [GpuFamily::Gfx103, GpuFamily::Gfx7] {
///     let bound = registry.bind_program(family, &memory, 0x10_0000);
///     assert_eq!((bound.address, bound.container), (0x10_0000, ProgramContainer::Raw));
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoundProgram {
    /// The code address (0 = nothing bound).
    pub address: u64,
    /// What describes the code.
    pub container: ProgramContainer,
}

impl BoundProgram {
    /// The AGC container, if the program has one.
    pub fn agc(&self) -> Option<&Arc<AgcShader>> {
        match &self.container {
            ProgramContainer::Agc(shader) => Some(shader),
            _ => None,
        }
    }

    /// The GNM program, if the code has a valid `OrbShdr` block.
    pub fn gnm(&self) -> Option<&Arc<GnmProgram>> {
        match &self.container {
            ProgramContainer::Gnm(program) => Some(program),
            _ => None,
        }
    }

    /// True for raw code (or nothing bound).
    pub fn is_raw(&self) -> bool {
        self.container == ProgramContainer::Raw
    }
}
