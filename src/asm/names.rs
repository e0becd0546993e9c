//! Register names as people type them: in any case, and, for a name the
//! database lacks, the nearest one it has (for the error message).

use crate::regs::db::{self, GpuFamily, RegisterInfo};

/// The register of `family` named `name`, in any case (the database's
/// names are upper case and no two differ only in case).
pub(crate) fn register(family: GpuFamily, name: &str) -> Option<&'static RegisterInfo> {
    db::register_by_name(family, name).or_else(|| {
        let upper = name.to_ascii_uppercase();
        (upper != name).then(|| db::register_by_name(family, &upper)).flatten()
    })
}

/// The register name of `family` nearest to `name` (fewest single-character
/// edits, ignoring case), when it is near enough to be a slip: at most two
/// edits, or one in five characters of a longer name.
pub(crate) fn nearest_register(family: GpuFamily, name: &str) -> Option<&'static str> {
    let wanted: Vec<u8> = name.bytes().map(|b| b.to_ascii_uppercase()).collect();
    let allowed = (wanted.len() / 5).max(2);
    let mut best: Option<(usize, &'static str)> = None;
    let mut row = Vec::new();
    for r in db::registers(family) {
        let candidate = r.name.as_bytes();
        if candidate.len().abs_diff(wanted.len()) > allowed {
            continue;
        }
        let d = distance(&wanted, candidate, &mut row);
        if d <= allowed && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, r.name));
        }
    }
    best.map(|(_, name)| name)
}

/// Levenshtein distance of `a` and `b`, with `row` as scratch.
fn distance(a: &[u8], b: &[u8], row: &mut Vec<usize>) -> usize {
    row.clear();
    row.extend(0..=b.len());
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = i;
        if let Some(first) = row.first_mut() {
            *first = i + 1;
        }
        for (j, &cb) in b.iter().enumerate() {
            let (Some(&left), Some(&up)) = (row.get(j), row.get(j + 1)) else { break };
            let next = (diagonal + usize::from(ca != cb)).min(left + 1).min(up + 1);
            diagonal = up;
            if let Some(slot) = row.get_mut(j + 1) {
                *slot = next;
            }
        }
    }
    row.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_in_any_case_and_slips_find_the_nearest() {
        let family = GpuFamily::Gfx103;
        assert_eq!(register(family, "db_render_control").map(|r| r.name), Some("DB_RENDER_CONTROL"));
        assert_eq!(register(family, "Db_Render_Control").map(|r| r.name), Some("DB_RENDER_CONTROL"));
        assert_eq!(register(family, "NO_SUCH"), None);
        assert_eq!(nearest_register(family, "DB_RENDR_CONTROL"), Some("DB_RENDER_CONTROL"));
        assert_eq!(nearest_register(family, "spi_shader_pgm_lo_p"), Some("SPI_SHADER_PGM_LO_PS"));
        assert_eq!(nearest_register(family, "label"), None);
        assert_eq!(distance(b"kitten", b"sitting", &mut Vec::new()), 3);
    }
}
