//! Shader containers (temporary stand-in until the container module lands).
use crate::memory::GuestMemory;
use std::sync::Arc;

/// A decoded AGC container.
#[derive(Clone, Debug, PartialEq)]
pub struct AgcShader;

impl AgcShader {
    /// Pipeline stage.
    pub fn stage(&self) -> u32 {
        0
    }
}

/// Shaders keyed by code address.
#[derive(Debug, Default)]
pub struct ShaderRegistry;

impl ShaderRegistry {
    /// Changes whenever a registered shader changes.
    pub fn generation(&self) -> u64 {
        0
    }

    /// Resolves a code address.
    pub fn resolve(&mut self, _mem: &dyn GuestMemory, _code: u64) -> Option<Arc<AgcShader>> {
        None
    }
}
