//! `cargo run -p xtask -- <task>`: project tasks for pm4core.
//!
//! Tasks:
//! - `regen`: rewrite `src/regs/generated.rs` and `src/packet/wire.rs` from
//!   `registers/*.json`;
//! - `regen --check`: render in memory and fail if a committed file differs;
//! - `frame`: write the corpus frame source `traces/corpus/frame.pm4`.

use std::process::ExitCode;

use xtask::pkt3::WIRE_FILE;
use xtask::{CheckOutcome, GENERATED_FILE};

const USAGE: &str = "usage: cargo run -p xtask -- TASK\n\
    \n\
    regen          rewrite src/regs/generated.rs and src/packet/wire.rs from registers/*.json\n\
    regen --check  exit non-zero if a committed generated file is stale\n\
    frame          write the corpus frame source traces/corpus/frame.pm4\n\
    vectors [gfx7] print candidate test vectors for tests/vectors/ (--features vectors)\n\
    help           print this";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let root = xtask::workspace_root();
    match args.as_slice() {
        ["regen"] => match xtask::regenerate(&root) {
            Ok(written) if written.is_empty() => {
                println!("the generated files are already up to date");
                ExitCode::SUCCESS
            }
            Ok(written) => {
                for file in written {
                    println!("wrote {file}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        ["regen", "--check"] => match xtask::check(&root) {
            Ok(CheckOutcome::Current) => {
                println!("{GENERATED_FILE} and {WIRE_FILE} are up to date with registers/*.json");
                ExitCode::SUCCESS
            }
            Ok(CheckOutcome::Stale { file, first_difference }) => {
                eprintln!(
                    "error: {file} is out of date with registers/*.json \
                     (first difference at line {first_difference}).\n\
                     Run `cargo run -p xtask -- regen` and commit the result."
                );
                ExitCode::FAILURE
            }
            Ok(CheckOutcome::Missing { file }) => {
                eprintln!(
                    "error: {file} does not exist.\n\
                     Run `cargo run -p xtask -- regen` and commit the result."
                );
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        ["frame"] => {
            let path = root.join(xtask::FRAME_FILE);
            match std::fs::write(&path, xtask::frame_source()) {
                Ok(()) => {
                    println!("wrote {}", xtask::FRAME_FILE);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {}: {e}", path.display());
                    ExitCode::from(2)
                }
            }
        }
        ["vectors"] => vectors(&root, None),
        ["vectors", family] => vectors(&root, Some(family)),
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// `vectors [gfx7]`: prints the family's candidate test vectors.
#[cfg(feature = "vectors")]
fn vectors(root: &std::path::Path, family: Option<&str>) -> ExitCode {
    let family = match family {
        None => pm4core::GpuFamily::Gfx103,
        Some("gfx7") => pm4core::GpuFamily::Gfx7,
        Some(_) => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match xtask::vectors::candidates(root, family) {
        Ok(lines) => {
            lines.iter().for_each(|line| println!("{line}"));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// `vectors` needs the disassembler: built with `--features vectors`.
#[cfg(not(feature = "vectors"))]
fn vectors(_: &std::path::Path, _: Option<&str>) -> ExitCode {
    eprintln!("error: vectors needs the disassembler: cargo run -p xtask --features vectors -- vectors [gfx7]");
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    /// Every task `main` runs is in the usage text, and nothing else is.
    #[test]
    fn the_usage_lists_every_task() {
        let source = include_str!("main.rs");
        let tasks: Vec<&str> = source
            .lines()
            .filter_map(|l| l.trim().strip_prefix("[\"")?.split_once("\"]").map(|(t, _)| t))
            .map(|t| t.split('"').next().unwrap_or(t))
            .collect();
        assert_eq!(tasks, ["regen", "regen", "frame", "vectors", "help"]);
        for task in ["regen ", "regen --check ", "frame ", "vectors ", "help "] {
            assert!(super::USAGE.contains(&format!("\n{task}")), "{task} is not in the usage");
        }
    }
}
