//! The Nintendo 3DS `DVLB` shader binary (SHBIN), decoded for inspection.
//!
//! Public format: a `DVLB` header (magic, DVLE count, DVLE offsets), the
//! `DVLP` program header right after it (code blob and operand descriptors),
//! then one `DVLE` executable header per entry point with its constant,
//! label, output and uniform tables and a symbol table. Offsets are relative
//! to the start of the structure that holds them. Every count is bounded by
//! the bytes present; nothing here panics.

use super::bytes::{self, Bytes};
use super::ShaderError;

pub const DVLB_MAGIC: [u8; 4] = *b"DVLB";
pub const DVLP_MAGIC: [u8; 4] = *b"DVLP";
pub const DVLE_MAGIC: [u8; 4] = *b"DVLE";
/// Size of the fixed part of a DVLP header.
pub const DVLP_LEN: u64 = 0x28;
/// Size of the fixed part of a DVLE header.
pub const DVLE_LEN: u64 = 0x40;
/// Longest symbol name decoded.
const MAX_NAME: usize = 256;
/// Most DVLEs decoded from one file (real files hold a handful).
pub const MAX_DVLES: u32 = 64;

/// The `DVLP` program header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Dvlp {
    /// File offset of the header.
    pub offset: u64,
    pub version: u32,
    /// Offset (from the DVLP) of the code blob.
    pub blob_offset: u32,
    /// Size of the code blob in 32-bit words.
    pub blob_words: u32,
    /// Offset (from the DVLP) of the operand-descriptor table.
    pub opdesc_offset: u32,
    /// Operand descriptors (8 bytes each).
    pub opdesc_count: u32,
    /// Offset (from the DVLP) of the filename symbol table.
    pub filename_symtab_offset: u32,
    /// Size of the filename symbol table in bytes.
    pub filename_symtab_size: u32,
}

/// A DVLE constant-table entry (20 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DvleConstant {
    /// 0 bool, 1 integer vector (u8 × 4), 2 float24 vector.
    pub kind: u16,
    /// Uniform register.
    pub register: u16,
    /// The four value words (float24 components as stored).
    pub value: [u32; 4],
}

/// A DVLE label-table entry (16 bytes).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DvleLabel {
    pub id: u16,
    pub unknown: u16,
    /// Location in the code blob, in words.
    pub location_words: u32,
    /// Size in words.
    pub size_words: u32,
    /// Offset of the name in the symbol table.
    pub symbol_offset: u32,
    /// The name, when it is inside the symbol table.
    pub name: Option<String>,
}

/// A DVLE output-register entry (8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DvleOutput {
    /// 0 position, 1 normal quaternion, 2 colour, 3 texcoord0, 4 texcoord0.w,
    /// 5 texcoord1, 6 texcoord2, 8 view.
    pub kind: u16,
    pub register: u16,
    pub mask: u16,
    pub unknown: u16,
}

/// A DVLE uniform-table entry (8 bytes).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DvleUniform {
    pub symbol_offset: u32,
    pub start_register: u16,
    pub end_register: u16,
    pub name: Option<String>,
}

/// A `DVLE` executable header and its tables.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Dvle {
    /// File offset of the header.
    pub offset: u64,
    pub version: u16,
    /// 0 vertex, 1 geometry.
    pub shader_type: u8,
    pub merge_output_maps: u8,
    /// Entry point in the code blob, in words.
    pub main_offset_words: u32,
    /// End of `main`, in words.
    pub endmain_offset_words: u32,
    pub used_input_mask: u16,
    pub used_output_mask: u16,
    pub geometry_type: u8,
    pub geometry_start_float_register: u8,
    pub geometry_fully_defined_vertices: u8,
    pub geometry_variable_vertices: u8,
    pub constants: Vec<DvleConstant>,
    pub labels: Vec<DvleLabel>,
    pub outputs: Vec<DvleOutput>,
    pub uniforms: Vec<DvleUniform>,
    pub symbol_table_offset: u32,
    pub symbol_table_size: u32,
}

/// A decoded `DVLB` file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Dvlb {
    pub dvle_offsets: Vec<u32>,
    pub dvlp: Dvlp,
    pub dvles: Vec<Dvle>,
}

fn bad(what: &'static str, offset: u64) -> ShaderError {
    ShaderError::BadDvlb { what, offset }
}

/// A table of `count` entries of `size` bytes at `base + rel`, bounded by
/// the file.
fn table<'a>(
    b: &Bytes<'a>,
    what: &'static str,
    base: u64,
    rel: u32,
    count: u32,
    size: u64,
) -> Result<&'a [u8], ShaderError> {
    let at = base.checked_add(u64::from(rel)).ok_or(bad(what, base))?;
    let len = u64::from(count).checked_mul(size).ok_or(bad(what, at))?;
    b.sub(what, at, len)
}

/// A NUL-terminated name at `offset` inside `symtab`.
fn name_at(symtab: &[u8], offset: u32) -> Option<String> {
    let start = usize::try_from(offset).ok()?;
    let rest = symtab.get(start..)?;
    let end = rest.iter().take(MAX_NAME).position(|&c| c == 0)?;
    Some(String::from_utf8_lossy(rest.get(..end)?).into_owned())
}

impl Dvlb {
    /// Decodes a DVLB file.
    pub fn parse(data: &[u8]) -> Result<Self, ShaderError> {
        let b = Bytes::new(data);
        if b.sub("DVLB magic", 0, 4)? != DVLB_MAGIC {
            return Err(bad("bad DVLB magic", 0));
        }
        let count = b.u32("DVLB DVLE count", 4)?;
        if count > MAX_DVLES {
            return Err(bad("more DVLEs than decoded (64)", 4));
        }
        // Bound the count by the bytes that could hold its offsets.
        let offsets_bytes = table(&b, "DVLB DVLE offset table", 8, 0, count, 4)?;
        let dvle_offsets: Vec<u32> =
            offsets_bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let dvlp_at = 8 + 4 * u64::from(count);
        let dvlp = decode_dvlp(&b, dvlp_at)?;
        let mut dvles = Vec::new();
        for &offset in &dvle_offsets {
            dvles.push(decode_dvle(&b, u64::from(offset))?);
        }
        Ok(Self { dvle_offsets, dvlp, dvles })
    }

    /// The code blob, when inside the file.
    pub fn code<'a>(&self, data: &'a [u8]) -> Option<&'a [u8]> {
        let at = self.dvlp.offset.checked_add(u64::from(self.dvlp.blob_offset))?;
        bytes::sub(data, at, u64::from(self.dvlp.blob_words).checked_mul(4)?)
    }
}

fn decode_dvlp(b: &Bytes<'_>, at: u64) -> Result<Dvlp, ShaderError> {
    if b.sub("DVLP header", at, 4)? != DVLP_MAGIC {
        return Err(bad("bad DVLP magic", at));
    }
    b.sub("DVLP header", at, DVLP_LEN)?;
    let w = |o: u64| b.u32("DVLP header", at + o);
    let dvlp = Dvlp {
        offset: at,
        version: w(0x04)?,
        blob_offset: w(0x08)?,
        blob_words: w(0x0C)?,
        opdesc_offset: w(0x10)?,
        opdesc_count: w(0x14)?,
        filename_symtab_offset: w(0x18)?,
        filename_symtab_size: w(0x1C)?,
    };
    table(b, "DVLP code blob", at, dvlp.blob_offset, dvlp.blob_words, 4)?;
    table(b, "DVLP operand descriptors", at, dvlp.opdesc_offset, dvlp.opdesc_count, 8)?;
    Ok(dvlp)
}

fn decode_dvle(b: &Bytes<'_>, at: u64) -> Result<Dvle, ShaderError> {
    if b.sub("DVLE header", at, 4)? != DVLE_MAGIC {
        return Err(bad("bad DVLE magic", at));
    }
    let h = b.sub("DVLE header", at, DVLE_LEN)?;
    let w = |o: u64| bytes::u32_at(h, o).unwrap_or(0);
    let hw = |o: u64| bytes::u16_at(h, o).unwrap_or(0);
    let by = |o: u64| bytes::u8_at(h, o).unwrap_or(0);

    let symbol_table_offset = w(0x38);
    let symbol_table_size = w(0x3C);
    let symtab = table(b, "DVLE symbol table", at, symbol_table_offset, symbol_table_size, 1)?;

    let constants = table(b, "DVLE constant table", at, w(0x18), w(0x1C), 20)?
        .chunks_exact(20)
        .map(|c| DvleConstant {
            kind: bytes::u16_at(c, 0).unwrap_or(0),
            register: bytes::u16_at(c, 2).unwrap_or(0),
            value: [4u64, 8, 12, 16].map(|o| bytes::u32_at(c, o).unwrap_or(0)),
        })
        .collect();
    let labels = table(b, "DVLE label table", at, w(0x20), w(0x24), 16)?
        .chunks_exact(16)
        .map(|c| {
            let symbol_offset = bytes::u32_at(c, 12).unwrap_or(0);
            DvleLabel {
                id: bytes::u16_at(c, 0).unwrap_or(0),
                unknown: bytes::u16_at(c, 2).unwrap_or(0),
                location_words: bytes::u32_at(c, 4).unwrap_or(0),
                size_words: bytes::u32_at(c, 8).unwrap_or(0),
                symbol_offset,
                name: name_at(symtab, symbol_offset),
            }
        })
        .collect();
    let outputs = table(b, "DVLE output table", at, w(0x28), w(0x2C), 8)?
        .chunks_exact(8)
        .map(|c| DvleOutput {
            kind: bytes::u16_at(c, 0).unwrap_or(0),
            register: bytes::u16_at(c, 2).unwrap_or(0),
            mask: bytes::u16_at(c, 4).unwrap_or(0),
            unknown: bytes::u16_at(c, 6).unwrap_or(0),
        })
        .collect();
    let uniforms = table(b, "DVLE uniform table", at, w(0x30), w(0x34), 8)?
        .chunks_exact(8)
        .map(|c| {
            let symbol_offset = bytes::u32_at(c, 0).unwrap_or(0);
            DvleUniform {
                symbol_offset,
                start_register: bytes::u16_at(c, 4).unwrap_or(0),
                end_register: bytes::u16_at(c, 6).unwrap_or(0),
                name: name_at(symtab, symbol_offset),
            }
        })
        .collect();

    Ok(Dvle {
        offset: at,
        version: hw(0x04),
        shader_type: by(0x06),
        merge_output_maps: by(0x07),
        main_offset_words: w(0x08),
        endmain_offset_words: w(0x0C),
        used_input_mask: hw(0x10),
        used_output_mask: hw(0x12),
        geometry_type: by(0x14),
        geometry_start_float_register: by(0x15),
        geometry_fully_defined_vertices: by(0x16),
        geometry_variable_vertices: by(0x17),
        constants,
        labels,
        outputs,
        uniforms,
        symbol_table_offset,
        symbol_table_size,
    })
}
