//! The wire-code generator: the named values of PM4 packet-body fields
//! (DST_SEL, DATA_SEL, SEM_SEL, …) as Rust enums, rendered into
//! [`WIRE_FILE`] from the enums of `registers/pkt3.json`, the
//! `VGT_EVENT_TYPE` enum of `registers/gfx103.json` and, for the fields
//! `pkt3.json` does not name, `registers/pkt3-wire-codes.json` (transcribed
//! from the packet reference). [`ENUMS`] says which database enums make
//! each Rust enum (merged in order; a value named twice is an error).
//!
//! Like the register tables, the rendering is a pure function of the JSON
//! text ([`render`]), checked against the committed file by `regen --check`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::{CheckOutcome, Error};

/// Path of the generated file, relative to the workspace root.
pub const WIRE_FILE: &str = "src/packet/wire.rs";

/// The databases read, relative to the workspace root.
pub const WIRE_SOURCES: [&str; 3] = ["registers/pkt3.json", "registers/gfx103.json", "registers/pkt3-wire-codes.json"];

/// A database an enum comes from.
#[derive(Clone, Copy, Debug)]
enum Db {
    Pkt3,
    Gfx103,
    WireCodes,
}

/// One generated enum: its Rust name, the field it names, and the database
/// enums it is made of.
struct WireEnum {
    rust: &'static str,
    field: &'static str,
    section: &'static str,
    sources: &'static [(Db, &'static str)],
}

/// Every generated enum.
const ENUMS: &[WireEnum] = &[
    WireEnum {
        rust: "WriteDataDstSel",
        field: "WRITE_DATA DST_SEL (dw0 \\[11:8\\])",
        section: "3.24",
        sources: &[(Db::Pkt3, "CONTROL__DST_SEL_cik"), (Db::WireCodes, "WRITE_DATA__DST_SEL_gfx10")],
    },
    WireEnum {
        rust: "CopyDataSrcSel",
        field: "COPY_DATA SRC_SEL (dw0 \\[3:0\\])",
        section: "3.29",
        sources: &[(Db::WireCodes, "COPY_DATA__SRC_SEL")],
    },
    WireEnum {
        rust: "CopyDataDstSel",
        field: "COPY_DATA DST_SEL (dw0 \\[11:8\\])",
        section: "3.29",
        sources: &[(Db::WireCodes, "COPY_DATA__DST_SEL")],
    },
    WireEnum {
        rust: "DmaDataSrcSel",
        field: "DMA_DATA SRC_SEL (dw0 \\[30:29\\])",
        section: "3.36",
        sources: &[(Db::Pkt3, "CP_DMA_WORD1__SRC_SEL_cik")],
    },
    WireEnum {
        rust: "DmaDataDstSel",
        field: "DMA_DATA DST_SEL (dw0 \\[21:20\\])",
        section: "3.36",
        sources: &[(Db::Pkt3, "CP_DMA_WORD1__DST_SEL_gfx9")],
    },
    WireEnum {
        rust: "ReleaseDataSel",
        field: "RELEASE_MEM and EVENT_WRITE_EOP DATA_SEL",
        section: "3.35",
        sources: &[(Db::WireCodes, "RELEASE__DATA_SEL")],
    },
    WireEnum {
        rust: "ReleaseIntSel",
        field: "RELEASE_MEM and EVENT_WRITE_EOP INT_SEL",
        section: "3.35",
        sources: &[(Db::WireCodes, "RELEASE__INT_SEL")],
    },
    WireEnum {
        rust: "EosCommand",
        field: "EVENT_WRITE_EOS COMMAND (dw2 \\[31:29\\])",
        section: "3.34",
        sources: &[(Db::WireCodes, "EVENT_WRITE_EOS__COMMAND")],
    },
    WireEnum {
        rust: "SemaphoreSel",
        field: "MEM_SEMAPHORE SEM_SEL",
        section: "3.26",
        sources: &[(Db::WireCodes, "MEM_SEMAPHORE__SEM_SEL")],
    },
    WireEnum {
        rust: "AtomicOp",
        field: "ATOMIC_MEM ATOMIC (dw0 \\[6:0\\], the 32-bit returning codes)",
        section: "3.7",
        sources: &[(Db::WireCodes, "ATOMIC_MEM__ATOMIC")],
    },
    WireEnum {
        rust: "AtomicCommand",
        field: "ATOMIC_MEM COMMAND (dw0 \\[11:8\\])",
        section: "3.7",
        sources: &[(Db::WireCodes, "ATOMIC_MEM__COMMAND")],
    },
    WireEnum {
        rust: "PredicationOp",
        field: "SET_PREDICATION PRED_OP (dw0 \\[18:16\\])",
        section: "3.9",
        sources: &[(Db::WireCodes, "SET_PREDICATION__PRED_OP")],
    },
    WireEnum {
        rust: "CondWriteSpace",
        field: "COND_WRITE WRITE_SPACE (dw0 \\[9:8\\])",
        section: "3.32",
        sources: &[(Db::WireCodes, "COND_WRITE__WRITE_SPACE")],
    },
    WireEnum {
        rust: "ClearStateCmd",
        field: "CLEAR_STATE CMD (dw0 \\[3:0\\])",
        section: "3.3",
        sources: &[(Db::WireCodes, "CLEAR_STATE__CMD")],
    },
    WireEnum {
        rust: "SetBaseIndex",
        field: "SET_BASE BASE_INDEX (dw0 \\[3:0\\])",
        section: "3.2",
        sources: &[(Db::WireCodes, "SET_BASE__BASE_INDEX")],
    },
    WireEnum {
        rust: "WaitOperation",
        field: "WAIT_REG_MEM OPERATION (dw0 \\[7:6\\])",
        section: "3.27",
        sources: &[(Db::WireCodes, "WAIT_REG_MEM__OPERATION")],
    },
    WireEnum {
        rust: "StrmoutSourceSelect",
        field: "STRMOUT_BUFFER_UPDATE SOURCE_SELECT (dw0 \\[2:1\\])",
        section: "3.22",
        sources: &[(Db::WireCodes, "STRMOUT_BUFFER_UPDATE__SOURCE_SELECT")],
    },
    WireEnum {
        rust: "LoadIndex",
        field: "LOAD_*_REG_INDEX INDEX (dw0 \\[1:0\\])",
        section: "3.41",
        sources: &[(Db::WireCodes, "LOAD_REG_INDEX__INDEX")],
    },
    WireEnum {
        rust: "IndexTypeMode",
        field: "VGT_INDEX_TYPE_MODE: the index size of VGT_INDEX_TYPE and INDEX_TYPE",
        section: "3.17",
        sources: &[(Db::Gfx103, "VGT_INDEX_TYPE_MODE")],
    },
    WireEnum {
        rust: "EventType",
        field: "VGT_EVENT_TYPE: the EVENT_TYPE of EVENT_WRITE and the releases",
        section: "5",
        sources: &[(Db::Gfx103, "VGT_EVENT_TYPE")],
    },
];

/// First line of the generated file.
pub const WIRE_HEADER: &str = "// @generated by `cargo run -p xtask -- regen` from registers/pkt3.json, registers/gfx103.json and registers/pkt3-wire-codes.json. Do not edit.";

/// One named value.
struct Entry {
    name: String,
    value: u32,
    comment: Option<String>,
}

/// The named values of database enum `name` in `json` (`file` for errors).
fn entries(json: &Value, file: &str, enum_name: &str) -> Result<Vec<Entry>, Error> {
    let list = json
        .get("enums")
        .and_then(|e| e.get(enum_name))
        .and_then(|e| e.get("entries"))
        .and_then(Value::as_array)
        .ok_or_else(|| Error::new(format!("{file}: no enum `{enum_name}` with entries")))?;
    list.iter()
        .map(|e| {
            let name = e.get("name").and_then(Value::as_str);
            let value = e.get("value").and_then(Value::as_u64).and_then(|v| u32::try_from(v).ok());
            match (name, value) {
                (Some(name), Some(value)) => Ok(Entry {
                    name: name.to_owned(),
                    value,
                    comment: e.get("comment").and_then(Value::as_str).map(str::to_owned),
                }),
                _ => {
                    Err(Error::new(format!("{file}: enum `{enum_name}` has an entry without a name or a 32-bit value")))
                }
            }
        })
        .collect()
}

/// `CACHE_FLUSH_TS` → `CacheFlushTs`; a name starting with a digit gets a
/// `V` in front.
fn variant(name: &str) -> String {
    let mut out = String::new();
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars.map(|c| c.to_ascii_lowercase()));
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    out
}

/// Renders the generated file from the databases' JSON text (in the order
/// of [`WIRE_SOURCES`]). Pure and deterministic.
pub fn render(pkt3: &str, gfx103: &str, wire_codes: &str) -> Result<String, Error> {
    let parse =
        |text: &str, file: &str| serde_json::from_str::<Value>(text).map_err(|e| Error::new(format!("{file}: {e}")));
    let [pkt3_file, gfx103_file, wire_file] = WIRE_SOURCES;
    let dbs = [
        (parse(pkt3, pkt3_file)?, pkt3_file),
        (parse(gfx103, gfx103_file)?, gfx103_file),
        (parse(wire_codes, wire_file)?, wire_file),
    ];
    let db = |d: Db| match d {
        Db::Pkt3 => &dbs[0],
        Db::Gfx103 => &dbs[1],
        Db::WireCodes => &dbs[2],
    };
    let mut out = String::with_capacity(1 << 16);
    // Writing to a String cannot fail; the fmt::Result is ignored throughout.
    let _ = writeln!(out, "{WIRE_HEADER}");
    let _ = writeln!(
        out,
        "//! The named values of PM4 packet-body fields, one enum per field: \
         `from_wire` reads a field's value, `wire` gives it back, `name` is the database's name.\n"
    );
    for e in ENUMS {
        let mut values: BTreeMap<u32, Entry> = BTreeMap::new();
        let mut from = Vec::new();
        for &(d, name) in e.sources {
            let (json, file) = db(d);
            from.push(format!("`{file}` `{name}`"));
            for entry in entries(json, file, name)? {
                if let Some(old) = values.get(&entry.value) {
                    return Err(Error::new(format!(
                        "{}: value {} is both {} and {}",
                        e.rust, entry.value, old.name, entry.name
                    )));
                }
                values.insert(entry.value, entry);
            }
        }
        let mut seen = BTreeMap::new();
        for entry in values.values() {
            if let Some(other) = seen.insert(variant(&entry.name), &entry.name) {
                return Err(Error::new(format!("{}: {} and {} make one variant name", e.rust, other, entry.name)));
            }
        }
        let _ = writeln!(out, "/// {}: from {} (packets.md §{}).", e.field, from.join(", "), e.section);
        let _ = writeln!(out, "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]");
        let _ = writeln!(out, "#[repr(u32)]");
        let _ = writeln!(out, "pub enum {} {{", e.rust);
        for entry in values.values() {
            match &entry.comment {
                Some(c) => {
                    let _ = writeln!(out, "    /// `{}`: {}.", entry.name, c);
                }
                None => {
                    let _ = writeln!(out, "    /// `{}`.", entry.name);
                }
            }
            let _ = writeln!(out, "    {} = {:#x},", variant(&entry.name), entry.value);
        }
        let _ = writeln!(out, "}}\n");
        let _ = writeln!(out, "impl {} {{", e.rust);
        let _ = writeln!(out, "    /// Every value, in wire order.");
        let _ = writeln!(out, "    pub const ALL: [Self; {}] = [", values.len());
        for entry in values.values() {
            let _ = writeln!(out, "        Self::{},", variant(&entry.name));
        }
        let _ = writeln!(out, "    ];\n");
        let _ = writeln!(out, "    /// The value a field holds, if the database names it.");
        let _ = writeln!(out, "    pub const fn from_wire(value: u32) -> Option<Self> {{");
        let _ = writeln!(out, "        match value {{");
        for entry in values.values() {
            let _ = writeln!(out, "            {:#x} => Some(Self::{}),", entry.value, variant(&entry.name));
        }
        let _ = writeln!(out, "            _ => None,");
        let _ = writeln!(out, "        }}");
        let _ = writeln!(out, "    }}\n");
        let _ = writeln!(out, "    /// The field's value.");
        let _ = writeln!(out, "    pub const fn wire(self) -> u32 {{");
        let _ = writeln!(out, "        self as u32");
        let _ = writeln!(out, "    }}\n");
        let _ = writeln!(out, "    /// The database's name of the value.");
        let _ = writeln!(out, "    pub const fn name(self) -> &'static str {{");
        let _ = writeln!(out, "        match self {{");
        for entry in values.values() {
            let _ = writeln!(out, "            Self::{} => \"{}\",", variant(&entry.name), entry.name);
        }
        let _ = writeln!(out, "        }}");
        let _ = writeln!(out, "    }}");
        let _ = writeln!(out, "}}\n");
    }
    // One trailing newline.
    while out.ends_with("\n\n") {
        out.pop();
    }
    Ok(out)
}

/// Reads the databases below `root` and renders the generated file.
pub fn generate(root: &Path) -> Result<String, Error> {
    let read = |rel: &str| {
        let path = root.join(rel);
        std::fs::read_to_string(&path).map_err(|e| Error::new(format!("cannot read {}: {e}", path.display())))
    };
    let [pkt3, gfx103, wire_codes] = WIRE_SOURCES;
    render(&read(pkt3)?, &read(gfx103)?, &read(wire_codes)?)
}

/// Compares a fresh rendering with the committed file below `root`.
pub fn check(root: &Path) -> Result<CheckOutcome, Error> {
    crate::check_file(root, WIRE_FILE, &generate(root)?)
}

/// Writes the rendering unless the file already holds it; whether it wrote.
pub fn regenerate(root: &Path) -> Result<bool, Error> {
    crate::write_file_if_changed(root, WIRE_FILE, &generate(root)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_names() {
        assert_eq!(variant("CACHE_FLUSH_TS"), "CacheFlushTs");
        assert_eq!(variant("TC_L2"), "TcL2");
        assert_eq!(variant("Reserved_0x00"), "Reserved0x00");
        assert_eq!(variant("8_IN_16"), "V8In16");
    }

    #[test]
    fn the_databases_give_write_data_its_memory_destinations() {
        let text = generate(&crate::workspace_root()).unwrap();
        let write_data = text.split("pub enum WriteDataDstSel {").nth(1).and_then(|t| t.split('}').next()).unwrap();
        for line in ["MemMappedRegister = 0x0,", "Gds = 0x3,", "Mem = 0x5,", "PreemptionMetaMemory = 0x8,"] {
            assert!(write_data.contains(line), "{line} in {write_data}");
        }
        assert!(!write_data.contains("= 0x7,"));
        assert!(text.contains("    ZpassDone = 0x15,"));
        assert!(text.contains("    Wait = 0x7,"));
    }

    #[test]
    fn a_value_named_twice_is_an_error() {
        let pkt3 = r#"{"enums": {"CONTROL__DST_SEL_cik": {"entries": [{"name": "A", "value": 6}]}, "CP_DMA_WORD1__SRC_SEL_cik": {"entries": []}, "CP_DMA_WORD1__DST_SEL_gfx9": {"entries": []}}}"#;
        let wire = r#"{"enums": {"WRITE_DATA__DST_SEL_gfx10": {"entries": [{"name": "B", "value": 6}]}}}"#;
        let e = render(pkt3, r#"{"enums": {}}"#, wire).unwrap_err();
        assert_eq!(e.to_string(), "WriteDataDstSel: value 6 is both A and B");
    }
}
