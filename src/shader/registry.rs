//! The shaders created so far, keyed by code address.
//!
//! On PS5 the command processor only ever sees a program's code address (the
//! SPI_SHADER_PGM_LO/HI or COMPUTE_PGM_LO/HI writes); the container that
//! describes it is found through the creation call that associated the two
//! (the creation call's contract). [`ShaderRegistry`] is that association: a
//! `SHDR` trace chunk or an emulator's `sceAgcCreateShader` goes through
//! [`ShaderRegistry::create`], and the processor asks
//! [`ShaderRegistry::resolve`] at every draw or dispatch. A code address
//! nobody registered is a raw-code shader: `None`, not an error.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::memory::GuestMemory;

use super::agc::{self, AgcShader, MAX_HEADER_SIZE};
use super::ShaderError;

#[derive(Debug, Clone)]
struct Entry {
    header_address: u64,
    /// Bytes of the header blob when last decoded (for invalidation while the
    /// decoded value is dropped).
    header_size: u64,
    /// `None` after the host rewrote the header: decoded again on next use.
    shader: Option<Arc<AgcShader>>,
}

/// One registered shader, as [`ShaderRegistry::iter`] yields it.
#[derive(Debug, Clone)]
pub struct Registration {
    /// The code address the shader is keyed by.
    pub code_address: u64,
    /// Where its header lives.
    pub header_address: u64,
    /// The decoded container, unless invalidated and not resolved since.
    pub shader: Option<Arc<AgcShader>>,
}

#[derive(Debug, Clone, Default)]
struct Entries {
    by_code: HashMap<u64, Entry>,
    /// `(header_address, code_address)` of every entry, for range invalidation.
    by_header: BTreeSet<(u64, u64)>,
}

impl Entries {
    fn remove(&mut self, code_address: u64) -> bool {
        match self.by_code.remove(&code_address) {
            Some(entry) => {
                self.by_header.remove(&(entry.header_address, code_address));
                true
            }
            None => false,
        }
    }
}

/// Registered AGC shaders keyed by code address, decoded once and cached.
///
/// Shared by every queue of a [`crate::gpu::Gpu`] through `&self`: a
/// reader-writer lock guards the entries (a cache hit takes it shared), and
/// the [`generation`](Self::generation) is an atomic that processors read
/// without the lock.
///
/// # Example
///
/// An emulator's `sceAgcCreateShader` registers the container; the next draw
/// or dispatch that binds the code address finds it:
///
/// ```
/// use pm4core::memory::SparseMemory;
/// use pm4core::shader::agc::{offsets, AGC_MAGIC, AGC_VERSION, HEADER_LEN, REGISTER_ENTRY_LEN};
/// use pm4core::shader::ShaderRegistry;
///
/// // A small compute container: the header, then its SH register table
/// // with the program address pair (pointers are self-relative).
/// let size = HEADER_LEN + 2 * REGISTER_ENTRY_LEN;
/// let mut container = vec![0u8; size as usize];
/// let mut put = |at: u32, value: u32| container[at as usize..][..4].copy_from_slice(&value.to_le_bytes());
/// put(offsets::MAGIC, AGC_MAGIC);
/// put(offsets::VERSION, AGC_VERSION);
/// put(offsets::SH_REGISTERS, HEADER_LEN - offsets::SH_REGISTERS);
/// put(offsets::INPUT_SEMANTICS, HEADER_LEN - offsets::INPUT_SEMANTICS);
/// put(offsets::HEADER_SIZE, size);
/// put(offsets::SHADER_SIZE, 0x100);
/// put(offsets::NUM_SH_REGISTERS, 2);
/// put(HEADER_LEN, 0x20C); // COMPUTE_PGM_LO (SH offset); the value is patched
/// put(HEADER_LEN + REGISTER_ENTRY_LEN, 0x20D); // COMPUTE_PGM_HI
/// let memory = SparseMemory::new();
/// memory.map_bytes(0x1000, &container).unwrap();
/// memory.map_zeroed(0x10_0000, 0x1000).unwrap();
/// let registry = ShaderRegistry::new();
/// registry.create(&memory, 0x1000, 0x10_0000, false).unwrap();
/// assert!(registry.resolve(&memory, 0x10_0000).is_some());
/// // The host rewrote the header: decoded again at the next use.
/// assert_eq!(registry.invalidate_range(0x1000, 4), 1);
/// ```
#[derive(Debug, Default)]
pub struct ShaderRegistry {
    entries: RwLock<Entries>,
    /// Bumped whenever a registration or a cached decode changes, so that
    /// processors know their resolved program bindings may be stale.
    generation: AtomicU64,
}

impl Clone for ShaderRegistry {
    fn clone(&self) -> Self {
        Self {
            entries: RwLock::new(self.entries.read().clone()),
            generation: AtomicU64::new(self.generation.load(Ordering::Acquire)),
        }
    }
}

impl ShaderRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Creates (relocates, see [`agc::create_shader`]) or, when
    /// `already_relocated`, accepts (see [`agc::register_relocated`]) the
    /// container at `header_address` and registers it under `code_address`.
    /// A shader registered before under the same code address is replaced.
    /// On error nothing is registered.
    pub fn create(
        &self,
        mem: &dyn GuestMemory,
        header_address: u64,
        code_address: u64,
        already_relocated: bool,
    ) -> Result<Arc<AgcShader>, ShaderError> {
        let shader = if already_relocated {
            agc::register_relocated(mem, header_address, code_address)?
        } else {
            agc::create_shader(mem, header_address, code_address)?
        };
        let shader = Arc::new(shader);
        self.insert(code_address, Arc::clone(&shader));
        Ok(shader)
    }

    /// Registers an already decoded shader under `code_address`.
    pub fn insert(&self, code_address: u64, shader: Arc<AgcShader>) {
        let (header_address, header_size) = shader.extent();
        let mut entries = self.entries.write();
        entries.remove(code_address);
        entries.by_header.insert((header_address, code_address));
        entries.by_code.insert(code_address, Entry { header_address, header_size, shader: Some(shader) });
        drop(entries);
        self.bump();
    }

    /// The container registered for `code_address`; `None` when none is (a
    /// raw-code shader) or when its header no longer decodes after a host
    /// rewrite (the registration is then dropped). A cache hit does not
    /// allocate.
    pub fn resolve(&self, mem: &dyn GuestMemory, code_address: u64) -> Option<Arc<AgcShader>> {
        match self.try_resolve(mem, code_address) {
            Ok(found) => found,
            Err(err) => {
                tracing::warn!(code_address, %err, "registered shader no longer decodes; dropped");
                None
            }
        }
    }

    /// Like [`resolve`](Self::resolve), but reports why a registered header
    /// that was invalidated no longer decodes (the registration is dropped).
    pub fn try_resolve(&self, mem: &dyn GuestMemory, code_address: u64) -> Result<Option<Arc<AgcShader>>, ShaderError> {
        let header_address = {
            let entries = self.entries.read();
            let Some(entry) = entries.by_code.get(&code_address) else {
                return Ok(None);
            };
            if let Some(shader) = &entry.shader {
                return Ok(Some(Arc::clone(shader)));
            }
            entry.header_address
        };
        // The header must still describe this code: its code field holds
        // the key (or is still empty, for a shader inserted unrelocated).
        let decoded = AgcShader::read(mem, header_address).and_then(|shader| match shader.code_address() {
            Some(stored) if stored != code_address => {
                Err(ShaderError::CodeAddressMismatch { header_address, stored, given: code_address })
            }
            _ => Ok(shader),
        });
        let mut entries = self.entries.write();
        match decoded {
            Ok(shader) => {
                let shader = Arc::new(shader);
                match entries.by_code.get_mut(&code_address) {
                    // Still the registration that was read (no concurrent replacement).
                    Some(entry) if entry.header_address == header_address => {
                        if let Some(cached) = &entry.shader {
                            return Ok(Some(Arc::clone(cached)));
                        }
                        entry.header_size = shader.extent().1;
                        entry.shader = Some(Arc::clone(&shader));
                    }
                    _ => {}
                }
                Ok(Some(shader))
            }
            Err(err) => {
                if entries.by_code.get(&code_address).is_some_and(|e| e.header_address == header_address) {
                    entries.remove(code_address);
                    drop(entries);
                    self.bump();
                }
                Err(err)
            }
        }
    }

    /// The cached container for `code_address` without decoding anything.
    pub fn get(&self, code_address: u64) -> Option<Arc<AgcShader>> {
        self.entries.read().by_code.get(&code_address)?.shader.clone()
    }

    /// True when `code_address` is registered (cached or not).
    pub fn contains(&self, code_address: u64) -> bool {
        self.entries.read().by_code.contains_key(&code_address)
    }

    /// The host wrote `[address, address + len)`: forget the decoded form of
    /// every shader whose header or tables overlap it, so that the next
    /// [`resolve`](Self::resolve) decodes it again. Returns how many cache
    /// entries were dropped.
    pub fn invalidate_range(&self, address: u64, len: u64) -> usize {
        if len == 0 {
            return 0;
        }
        let end = address.saturating_add(len);
        // Headers are at most MAX_HEADER_SIZE bytes, so only those starting
        // in [address - MAX_HEADER_SIZE, end) can overlap.
        let first = address.saturating_sub(u64::from(MAX_HEADER_SIZE));
        let mut dropped = 0;
        let mut entries = self.entries.write();
        let Entries { by_code, by_header } = &mut *entries;
        for &(header_address, code_address) in by_header.range((first, 0)..(end, 0)) {
            let Some(entry) = by_code.get_mut(&code_address) else {
                continue;
            };
            let header_end = header_address.saturating_add(entry.header_size);
            if header_address < end && address < header_end && entry.shader.take().is_some() {
                dropped += 1;
            }
        }
        drop(entries);
        if dropped > 0 {
            self.bump();
        }
        dropped
    }

    /// Forgets the decoded form of every shader (the host changed memory
    /// without saying where); each is decoded again at its next use.
    pub fn invalidate_all(&self) -> usize {
        let mut dropped = 0;
        for entry in self.entries.write().by_code.values_mut() {
            if entry.shader.take().is_some() {
                dropped += 1;
            }
        }
        if dropped > 0 {
            self.bump();
        }
        dropped
    }

    /// Changes whenever what [`resolve`](Self::resolve) may return changes.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Unregisters `code_address`; returns whether it was registered.
    pub fn remove(&self, code_address: u64) -> bool {
        let removed = self.entries.write().remove(code_address);
        if removed {
            self.bump();
        }
        removed
    }

    /// Forgets everything.
    pub fn clear(&self) {
        let mut entries = self.entries.write();
        entries.by_code.clear();
        entries.by_header.clear();
        drop(entries);
        self.bump();
    }

    /// Number of registered shaders.
    pub fn len(&self) -> usize {
        self.entries.read().by_code.len()
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.read().by_code.is_empty()
    }

    /// Every registration, in header-address order (a snapshot).
    pub fn iter(&self) -> std::vec::IntoIter<Registration> {
        let entries = self.entries.read();
        let list: Vec<Registration> = entries
            .by_header
            .iter()
            .filter_map(|&(header_address, code_address)| {
                let entry = entries.by_code.get(&code_address)?;
                Some(Registration { code_address, header_address, shader: entry.shader.clone() })
            })
            .collect();
        list.into_iter()
    }
}
