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

const USAGE: &str = "usage: cargo run -p xtask -- regen [--check]\n\
    \n\
    regen          rewrite src/regs/generated.rs and src/packet/wire.rs from registers/*.json\n\
    regen --check  exit non-zero if a committed generated file is stale";

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
