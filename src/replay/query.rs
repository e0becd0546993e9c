//! What a replay is asked to report: memory ranges (`--mem ADDR:LEN`) and
//! registers (`--reg NAME[@QUEUE]`), and the number and queue syntax the
//! command line uses.

use crate::backend::QueueId;
use crate::regs::db::GpuFamily;

/// A memory range to report after the replay (`--mem ADDR:LEN`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryQuery {
    /// The text the range was given as; the summary's key.
    pub label: String,
    pub address: u64,
    pub len: u64,
}

impl MemoryQuery {
    /// Parses `ADDR:LEN` (each decimal or 0x-hex): LEN is 1 byte to 1 MiB
    /// and the range lies in the 48-bit address space.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (a, l) = text.split_once(':').ok_or_else(|| format!("memory range '{text}' is not ADDR:LEN"))?;
        let address = parse_number(a).ok_or_else(|| format!("bad address '{a}' in '{text}'"))?;
        let len = parse_number(l).ok_or_else(|| format!("bad length '{l}' in '{text}'"))?;
        if len == 0 {
            return Err(format!("memory range '{text}' is empty"));
        }
        if len > 1 << 20 {
            return Err(format!("memory range '{text}' is longer than 1 MiB"));
        }
        if let Err(e) = crate::memory::check_range(address, len) {
            return Err(format!("memory range '{text}': {e}"));
        }
        Ok(Self { label: text.to_string(), address, len })
    }
}

/// A register to report after the replay (`--reg NAME` or `NAME@QUEUE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterQuery {
    /// The text the register was given as; the summary's key.
    pub label: String,
    pub register: u32,
    pub queue: QueueId,
}

impl RegisterQuery {
    /// Parses `NAME` (in any case), `NAME@QUEUE` (`gfx`, `compP.Q` or a
    /// number) or a 0x-hex register index, against the register database
    /// of `family`. A name the database lacks is refused with the nearest
    /// one it has, if one is near.
    ///
    /// ```
    /// use pm4core::regs::db::GpuFamily;
    /// use pm4core::replay::RegisterQuery;
    ///
    /// let q = RegisterQuery::parse("db_render_control@comp0.1", GpuFamily::Gfx103).unwrap();
    /// assert_eq!((q.register, q.queue.0), (0xa000, 2));
    /// assert_eq!(
    ///     RegisterQuery::parse("DB_RENDR_CONTROL", GpuFamily::Gfx103).unwrap_err(),
    ///     "no register named 'DB_RENDR_CONTROL' in the gfx10.3 database (did you mean DB_RENDER_CONTROL?)"
    /// );
    /// assert!(RegisterQuery::parse("DB_RENDER_CONTROL@comp7.0", GpuFamily::Gfx103).unwrap_err().contains("pipe 0-6"));
    /// ```
    pub fn parse(text: &str, family: GpuFamily) -> Result<Self, String> {
        let (name, queue) = match text.split_once('@') {
            Some((n, q)) => (n, q.parse::<QueueId>().map_err(|e| format!("{text}: {e}"))?),
            None => (text, QueueId::GRAPHICS),
        };
        let register = match crate::asm::names::register(family, name) {
            Some(info) => info.offset,
            None => match parse_number(name) {
                Some(n) if n < 0x1_0000 => n as u32,
                _ => {
                    let mut message = format!("no register named '{name}' in the {family} database");
                    if let Some(near) = crate::asm::names::nearest_register(family, name) {
                        message.push_str(&format!(" (did you mean {near}?)"));
                    }
                    return Err(message);
                }
            },
        };
        Ok(Self { label: text.to_string(), register, queue })
    }
}

/// Parses a queue name: `gfx`, `compP.Q` or a number 0..=56 (see
/// [`QueueId`]'s `FromStr`).
pub fn parse_queue(text: &str) -> Option<QueueId> {
    text.parse().ok()
}

/// Parses a decimal or 0x-hex number.
pub fn parse_number(text: &str) -> Option<u64> {
    let t = text.trim().replace('_', "");
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}
