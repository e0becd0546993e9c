//! The error type shared by every shader-container decoder.

use crate::memory::MemoryError;

use super::agc::ShaderType;

/// Why a shader container could not be decoded, created or registered.
///
/// Offsets are in bytes from the start of the structure being decoded: the
/// AGC header for [`super::agc`], the code blob for `OrbShdr`, the file for
/// `Shdr`, ELF and DVLB files. Guest addresses are named as such.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShaderError {
    /// A read needs bytes past the end of what is available.
    #[error("{what}: {len:#x} bytes at offset {offset:#x} run past the {available:#x} bytes available")]
    Truncated { what: &'static str, offset: u64, len: u64, available: u64 },

    /// A magic number does not match.
    #[error("{what} at offset {offset:#x}: magic {found:#010x}, expected {expected:#010x}")]
    BadMagic { what: &'static str, offset: u64, found: u32, expected: u32 },

    /// The AGC header's version field is not 0x18.
    #[error("AGC header version (offset {offset:#x}) is {found:#x}, expected {expected:#x}")]
    BadVersion { offset: u64, found: u32, expected: u32 },

    /// The AGC header's `header_size` is smaller than the 0x60-byte header itself.
    #[error("AGC header_size (offset {offset:#x}) is {header_size:#x}, smaller than the 0x60-byte header")]
    HeaderSizeTooSmall { offset: u64, header_size: u32 },

    /// The AGC header's `header_size` is larger than this crate accepts.
    #[error("AGC header_size (offset {offset:#x}) is {header_size:#x}, more than the {limit:#x} accepted")]
    HeaderSizeTooLarge { offset: u64, header_size: u32, limit: u32 },

    /// The AGC header's `header_size` runs past the bytes given.
    #[error("AGC header_size (offset {offset:#x}) is {header_size:#x} but only {available:#x} bytes are available")]
    HeaderSizeExceedsBlob { offset: u64, header_size: u32, available: u64 },

    /// The AGC program type is not one of 0..=8.
    #[error("AGC program type (offset {offset:#x}) is {found}, not one of 0..=8")]
    BadType { offset: u64, found: u8 },

    /// A pointer field resolves outside the header blob.
    #[error(
        "AGC {field} pointer (offset {offset:#x}, value {raw:#x}) resolves outside the {header_size:#x}-byte header"
    )]
    PointerOutOfBounds { field: &'static str, offset: u64, raw: u64, header_size: u32 },

    /// A table does not fit between its target and the header's end.
    #[error(
        "AGC {field} table (pointer at offset {offset:#x}) at header offset {target:#x}: \
         {count} entries of {entry_size} bytes run past the {header_size:#x}-byte header"
    )]
    TableOutOfBounds { field: &'static str, offset: u64, target: u64, count: u64, entry_size: u64, header_size: u32 },

    /// A pointer is null while its table has entries.
    #[error("AGC {field} pointer (offset {offset:#x}) is null but its count is {count}")]
    NullTable { field: &'static str, offset: u64, count: u64 },

    /// The SH-register table lacks the program-address LO register of the
    /// container's type.
    #[error(
        "AGC {shader_type:?} container: SH table (pointer at offset {offset:#x}) has no \
         program-address register {lo:#x}"
    )]
    MissingProgramRegister { shader_type: ShaderType, offset: u64, lo: u32 },

    /// The program-address LO register is not directly followed by HI.
    #[error(
        "AGC {shader_type:?} container: SH entry {index} is the program LO register but entry \
         {next} holds register {found:?}, expected {hi:#x}"
    )]
    ProgramHiNotNext { shader_type: ShaderType, index: u32, next: u32, found: Option<u32>, hi: u32 },

    /// Guest memory could not be read or written.
    #[error("{what} at guest address {address:#x}: {source}")]
    Memory {
        what: &'static str,
        address: u64,
        #[source]
        source: MemoryError,
    },

    /// `create` on a header that already holds absolute pointers or a code
    /// address: relocating it again would corrupt it.
    #[error(
        "AGC header at {header_address:#x} is already relocated (code field {code_field:#x}); \
         refusing to relocate it again"
    )]
    AlreadyRelocated { header_address: u64, code_field: u64 },

    /// A header said to be relocated still has self-relative pointers.
    #[error("AGC header at {header_address:#x} is not relocated (its code field is 0)")]
    NotRelocated { header_address: u64 },

    /// A relocated header's code field differs from the code address given.
    #[error("AGC header at {header_address:#x} holds code address {stored:#x}, not {given:#x}")]
    CodeAddressMismatch { header_address: u64, stored: u64, given: u64 },

    /// Code must be 256-byte aligned (the program registers hold address bits 8..47).
    #[error("shader code address {code_address:#x} is not 256-byte aligned")]
    MisalignedCode { code_address: u64 },

    /// Code address zero or beyond the 48-bit address space.
    #[error("shader code address {code_address:#x} is null or outside the 48-bit address space")]
    CodeAddressOutOfRange { code_address: u64 },

    /// No `OrbShdr` block was found after a PS4 code address.
    #[error("no OrbShdr block found in the {scanned:#x} bytes scanned")]
    OrbShdrNotFound { scanned: u64 },

    /// The `OrbShdr` length field runs past the block itself.
    #[error("OrbShdr at offset {offset:#x}: code length {length:#x} runs past the block")]
    OrbShdrLengthOutOfRange { offset: u64, length: u32 },

    /// The `OrbShdr` block sits further from the code than the code and
    /// its usage chunk reach (a block of other code, found by the scan).
    #[error(
        "OrbShdr at offset {offset:#x} is not right after the {length:#x} code bytes \
         (the code, its usage chunk and padding end by {limit:#x})"
    )]
    OrbShdrNotAfterCode { offset: u64, length: u32, limit: u64 },

    /// The `OrbShdr` binary type is not one of 0..=9.
    #[error("OrbShdr binary type is {found}, not one of 0..=9")]
    OrbShdrBadType { found: u8 },

    /// The `OrbShdr` crc32 does not match its code and info bytes.
    #[error("OrbShdr crc32 is {stored:#010x} but the code and info give {computed:#010x}")]
    OrbShdrCrcMismatch { stored: u32, computed: u32 },

    /// The `Shdr` file header names a shader type this crate does not decode.
    #[error("Shdr type (offset {offset:#x}) is {found}, not one of 1..=7")]
    BadShdrType { offset: u64, found: u8 },

    /// The `Shdr` stage struct and its tables are larger than the header
    /// size the file declares.
    #[error(
        "Shdr stage struct and tables need {needed:#x} bytes but headersizedwords \
         (offset {offset:#x}) declares {declared:#x}"
    )]
    ShdrSizeMismatch { offset: u64, needed: u64, declared: u64 },

    /// An ELF envelope is malformed.
    #[error("ELF: {what} (offset {offset:#x})")]
    BadElf { what: &'static str, offset: u64 },

    /// A DVLB file is malformed.
    #[error("DVLB: {what} (offset {offset:#x})")]
    BadDvlb { what: &'static str, offset: u64 },
}
