//! The shader stages' register groups of each family, found by name in
//! its register map: per hardware stage (PS, VS, GS, ES, HS, LS and the
//! compute stage) the program address pair, the RSRC registers and the run
//! of user-data registers (`SPI_SHADER_PGM_LO_<STAGE>`, ...,
//! `SPI_SHADER_USER_DATA_<STAGE>_0..N`; `COMPUTE_PGM_LO`, ...,
//! `COMPUTE_USER_DATA_0..N`). Rendered as `regs::generated::stages`, read
//! through `regs::stages`: gfx7 has six graphics stages with 16 user-data
//! registers each, gfx10.3 32 per stage and no ES/LS user data (its merged
//! stages take GS's and HS's).

use std::collections::HashMap;
use std::fmt::{self, Write as _};

use super::{Error, Register};

/// The graphics stages in the order they are emitted, with their enum
/// variant in `regs::stages::HardwareStage`.
const GRAPHICS: [(&str, &str); 6] =
    [("PS", "Ps"), ("VS", "Vs"), ("GS", "Gs"), ("ES", "Es"), ("HS", "Hs"), ("LS", "Ls")];

/// One stage's registers as emitted.
#[derive(Debug, PartialEq, Eq)]
struct Stage {
    variant: &'static str,
    pgm_lo: u32,
    pgm_hi: u32,
    rsrc: [Option<u32>; 3],
    user_data: Option<u32>,
    user_data_count: u32,
}

/// The stages of one family's registers: every stage whose PGM_LO and
/// PGM_HI both exist (HI right after LO), with what else it has.
fn stages(family: &str, registers: &[Register]) -> Result<Vec<Stage>, Error> {
    let by_name: HashMap<&str, u32> = registers.iter().map(|r| (r.name.as_str(), r.offset)).collect();
    let get = |name: String| by_name.get(name.as_str()).copied();
    let mut out = Vec::new();
    let mut names: Vec<(&'static str, [String; 5], String)> = GRAPHICS
        .iter()
        .map(|&(s, v)| {
            let pgm = |what: &str| format!("SPI_SHADER_PGM_{what}_{s}");
            (v, [pgm("LO"), pgm("HI"), pgm("RSRC1"), pgm("RSRC2"), pgm("RSRC3")], format!("SPI_SHADER_USER_DATA_{s}_"))
        })
        .collect();
    let compute = ["LO", "HI", "RSRC1", "RSRC2", "RSRC3"].map(|what| format!("COMPUTE_PGM_{what}"));
    names.push(("Cs", compute, "COMPUTE_USER_DATA_".to_owned()));
    for (variant, [lo, hi, rsrc1, rsrc2, rsrc3], user) in names {
        let (Some(pgm_lo), Some(pgm_hi)) = (get(lo.clone()), get(hi)) else { continue };
        if pgm_hi != pgm_lo + 1 {
            return Err(Error::new(format!("{family}: {lo} at {pgm_lo:#x} is not followed by its HI register")));
        }
        let user_data = get(format!("{user}0"));
        let mut user_data_count = 0u32;
        if let Some(base) = user_data {
            while get(format!("{user}{user_data_count}")) == Some(base + user_data_count) {
                user_data_count += 1;
            }
        }
        out.push(Stage {
            variant,
            pgm_lo,
            pgm_hi,
            rsrc: [get(rsrc1), get(rsrc2), get(rsrc3)],
            user_data,
            user_data_count,
        });
    }
    Ok(out)
}

fn option(v: Option<u32>) -> String {
    match v {
        Some(v) => format!("Some(0x{v:04X})"),
        None => "None".to_owned(),
    }
}

/// Appends the `stages` module: one table per family of `families`
/// (module name, title, registers), each named by the module in upper case.
pub(super) fn write(out: &mut String, families: &[(&str, &str, Vec<Register>)]) -> Result<(), Error> {
    let mut tables = Vec::new();
    for (module, title, registers) in families {
        tables.push((module.to_ascii_uppercase(), *title, stages(module, registers)?));
    }
    // Writing to a String cannot fail.
    let _ = render(out, &tables);
    Ok(())
}

fn render(out: &mut String, tables: &[(String, &str, Vec<Stage>)]) -> fmt::Result {
    writeln!(out)?;
    writeln!(
        out,
        "/// The shader stages' register groups of each family, found by name in its\n\
         /// map: program address pair, RSRC registers, user-data run. Read them\n\
         /// through [`crate::regs::stages`]."
    )?;
    writeln!(out, "pub mod stages {{")?;
    writeln!(out, "    use crate::regs::stages::{{HardwareStage, StageRegisters}};")?;
    for (name, title, stages) in tables {
        writeln!(out)?;
        writeln!(out, "    /// {title}: its hardware stages, graphics first, compute last.")?;
        writeln!(out, "    pub static {name}: &[StageRegisters] = &[")?;
        for s in stages {
            writeln!(
                out,
                "        StageRegisters {{ stage: HardwareStage::{}, pgm_lo: 0x{:04X}, pgm_hi: 0x{:04X}, \
                 rsrc1: {}, rsrc2: {}, rsrc3: {}, user_data: {}, user_data_count: {} }},",
                s.variant,
                s.pgm_lo,
                s.pgm_hi,
                option(s.rsrc[0]),
                option(s.rsrc[1]),
                option(s.rsrc[2]),
                option(s.user_data),
                s.user_data_count
            )?;
        }
        writeln!(out, "    ];")?;
    }
    writeln!(out, "}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(name: &str, offset: u32) -> Register {
        Register { name: name.to_owned(), offset, fields: None }
    }

    #[test]
    fn finds_each_stage_by_name_and_counts_its_user_data() {
        let registers = [
            reg("SPI_SHADER_PGM_LO_PS", 0x2C08),
            reg("SPI_SHADER_PGM_HI_PS", 0x2C09),
            reg("SPI_SHADER_PGM_RSRC1_PS", 0x2C0A),
            reg("SPI_SHADER_USER_DATA_PS_0", 0x2C0C),
            reg("SPI_SHADER_USER_DATA_PS_1", 0x2C0D),
            reg("SPI_SHADER_USER_DATA_PS_3", 0x2C0F),
            reg("SPI_SHADER_PGM_LO_ES", 0x2CC8),
            reg("SPI_SHADER_PGM_HI_ES", 0x2CC9),
            reg("COMPUTE_PGM_LO", 0x2E0C),
        ];
        let found = stages("test", &registers).unwrap();
        assert_eq!(
            found,
            [
                Stage {
                    variant: "Ps",
                    pgm_lo: 0x2C08,
                    pgm_hi: 0x2C09,
                    rsrc: [Some(0x2C0A), None, None],
                    user_data: Some(0x2C0C),
                    user_data_count: 2
                },
                Stage {
                    variant: "Es",
                    pgm_lo: 0x2CC8,
                    pgm_hi: 0x2CC9,
                    rsrc: [None; 3],
                    user_data: None,
                    user_data_count: 0
                },
            ],
            "a run ends at the first gap; a stage without PGM_HI is not one"
        );
        let split = [reg("SPI_SHADER_PGM_LO_VS", 0x2C48), reg("SPI_SHADER_PGM_HI_VS", 0x2C4A)];
        assert!(stages("test", &split).is_err());
    }
}
