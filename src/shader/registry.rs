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
//!
//! On PS4 (gfx7) nothing is registered: the code's own `OrbShdr` block
//! describes it. [`ShaderRegistry::resolve_gnm`] finds, decodes and
//! validates the block for a code address once, caches the answer (raw
//! code included) keyed by the address, and forgets it when a write
//! touches the bytes that decided it, as AGC containers are forgotten.
//! [`ShaderRegistry::bind_program`] is the one call a program binding
//! makes on either family.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::memory::GuestMemory;

use super::agc::{self, AgcShader, MAX_HEADER_SIZE};
use super::gnm::{self, GnmProgram};
use super::program::{BoundProgram, ProgramContainer};
use super::ShaderError;
use crate::regs::db::GpuFamily;

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

/// What a PS4 code address binds, as last looked up.
#[derive(Debug, Clone)]
struct GnmEntry {
    /// Bytes from the code address that decided the answer (code, usage
    /// chunk, block; or the bytes the scan read).
    extent: u64,
    /// The program; `None` for raw code; the error of a block that is not
    /// valid for the code (bound as raw code).
    program: Result<Option<Arc<GnmProgram>>, ShaderError>,
}

#[derive(Debug, Clone, Default)]
struct Entries {
    by_code: HashMap<u64, Entry>,
    /// `(header_address, code_address)` of every entry, for range invalidation.
    by_header: BTreeSet<(u64, u64)>,
    /// PS4 code addresses looked up, in address order (the extents start there).
    gnm: BTreeMap<u64, GnmEntry>,
    /// The longest extent in `gnm` since it was last empty: a write can only
    /// touch an entry that starts less than this before it.
    gnm_max_extent: u64,
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
    /// [`resolve`](Self::resolve) decodes it again, and every PS4 lookup
    /// whose code, usage chunk, block or scanned bytes overlap it
    /// ([`resolve_gnm`](Self::resolve_gnm) looks again). Returns how many
    /// cache entries were dropped.
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
        let Entries { by_code, by_header, gnm, gnm_max_extent } = &mut *entries;
        for &(header_address, code_address) in by_header.range((first, 0)..(end, 0)) {
            let Some(entry) = by_code.get_mut(&code_address) else {
                continue;
            };
            let header_end = header_address.saturating_add(entry.header_size);
            if header_address < end && address < header_end && entry.shader.take().is_some() {
                dropped += 1;
            }
        }
        if !gnm.is_empty() {
            let first = address.saturating_sub(*gnm_max_extent);
            let touched: Vec<u64> = gnm
                .range(first..end)
                .filter(|(&code, e)| address < code.saturating_add(e.extent))
                .map(|(&code, _)| code)
                .collect();
            for code in touched {
                gnm.remove(&code);
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
        let mut entries = self.entries.write();
        for entry in entries.by_code.values_mut() {
            if entry.shader.take().is_some() {
                dropped += 1;
            }
        }
        dropped += entries.gnm.len();
        entries.gnm.clear();
        entries.gnm_max_extent = 0;
        drop(entries);
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

    /// Forgets everything (registrations and PS4 lookups).
    pub fn clear(&self) {
        let mut entries = self.entries.write();
        entries.by_code.clear();
        entries.by_header.clear();
        entries.gnm.clear();
        entries.gnm_max_extent = 0;
        drop(entries);
        self.bump();
    }

    /// The GNM program the code at `code_address` binds (PS4): its
    /// `OrbShdr` block, found, decoded and validated at the first call and
    /// cached until a write touches the bytes that decided it
    /// ([`invalidate_range`](Self::invalidate_range)). `None` for raw code,
    /// and for a block that is not valid for the code (reported through
    /// `tracing`; [`try_resolve_gnm`](Self::try_resolve_gnm) gives the
    /// error). A cache hit does not allocate.
    ///
    /// ```
    /// use pm4core::memory::{GuestMemory, SparseMemory};
    /// use pm4core::shader::ShaderRegistry;
    ///
    /// let code: [u32; 8] = [0xBEEB03FF, 3, 0x7E000280, 0x5E000100, 0xBF800000, 0xF8001C0F, 0, 0xBF810000];
    /// let block: [u32; 7] = [0x5362724F, 0x07726468, 0x2043, 0, 0xB0A45B2B, 0x1D39766D, 0x72044B7B];
    /// let bytes: Vec<u8> = code.iter().chain(&block).flat_map(|d| d.to_le_bytes()).collect();
    /// let memory = SparseMemory::new();
    /// memory.map_bytes(0x10_0000, &bytes).unwrap();
    /// let registry = ShaderRegistry::new();
    /// let program = registry.resolve_gnm(&memory, 0x10_0000).expect("a valid block");
    /// assert_eq!(program.code_length(), 0x20);
    /// // The game patches a code byte: the CRC no longer matches, and the
    /// // lookup made again binds the code as raw.
    /// memory.write_u32(0x10_0008, 0).unwrap();
    /// assert_eq!(registry.invalidate_range(0x10_0008, 4), 1);
    /// assert!(registry.resolve_gnm(&memory, 0x10_0000).is_none());
    /// assert!(registry.try_resolve_gnm(&memory, 0x10_0000).is_err());
    /// ```
    pub fn resolve_gnm(&self, mem: &dyn GuestMemory, code_address: u64) -> Option<Arc<GnmProgram>> {
        match self.try_resolve_gnm(mem, code_address) {
            Ok(found) => found,
            Err(err) => {
                tracing::warn!(code_address, %err, "OrbShdr block not valid for its code; bound as raw code");
                None
            }
        }
    }

    /// Like [`resolve_gnm`](Self::resolve_gnm), but says why a block that
    /// was found is not valid for its code (or why memory could not be
    /// read). `Ok(None)` is raw code.
    pub fn try_resolve_gnm(
        &self,
        mem: &dyn GuestMemory,
        code_address: u64,
    ) -> Result<Option<Arc<GnmProgram>>, ShaderError> {
        if let Some(entry) = self.entries.read().gnm.get(&code_address) {
            return entry.program.clone();
        }
        let lookup = gnm::lookup(mem, code_address);
        let program = lookup.result.map(|found| found.map(Arc::new));
        if let Some(extent) = lookup.extent {
            let mut entries = self.entries.write();
            // A lookup another thread cached meanwhile wins (same bytes, same answer).
            if let Some(entry) = entries.gnm.get(&code_address) {
                return entry.program.clone();
            }
            entries.gnm_max_extent = entries.gnm_max_extent.max(extent);
            entries.gnm.insert(code_address, GnmEntry { extent, program: program.clone() });
        }
        program
    }

    /// The cached PS4 lookup of `code_address` without looking anything up:
    /// `None` when not cached, `Some(None)` for raw code or an invalid block.
    pub fn cached_gnm(&self, code_address: u64) -> Option<Option<Arc<GnmProgram>>> {
        self.entries.read().gnm.get(&code_address).map(|e| e.program.clone().ok().flatten())
    }

    /// How many PS4 code addresses have a cached lookup.
    pub fn gnm_cached(&self) -> usize {
        self.entries.read().gnm.len()
    }

    /// What the code at `code_address` binds on `family`: the one call a
    /// program binding makes (at a draw or dispatch whose program registers
    /// or this registry's [`generation`](Self::generation) changed). gfx10.3:
    /// the AGC container registered for the address ([`resolve`](Self::resolve));
    /// gfx7: the GNM program of its `OrbShdr` block ([`resolve_gnm`](Self::resolve_gnm)).
    /// Raw code without either; address 0 binds nothing (raw, no lookup).
    pub fn bind_program(&self, family: GpuFamily, mem: &dyn GuestMemory, code_address: u64) -> BoundProgram {
        let container = if code_address == 0 {
            ProgramContainer::Raw
        } else {
            match family {
                GpuFamily::Gfx103 => {
                    self.resolve(mem, code_address).map_or(ProgramContainer::Raw, ProgramContainer::Agc)
                }
                GpuFamily::Gfx7 => {
                    self.resolve_gnm(mem, code_address).map_or(ProgramContainer::Raw, ProgramContainer::Gnm)
                }
            }
        };
        BoundProgram { address: code_address, container }
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
