//! Writes `capi/include/pm4core.h` from the C ABI's source, or with
//! `--check` fails when the committed header differs from what the source
//! generates (CI's drift check). cbindgen runs as a library over the
//! crate's files: no network, no `cargo metadata`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn capi_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn generate() -> Result<Vec<u8>, String> {
    let dir = capi_dir();
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).map_err(|e| format!("cbindgen.toml: {e}"))?;
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .map_err(|e| format!("generating the header: {e}"))?;
    let mut out = Vec::new();
    bindings.write(&mut out);
    Ok(out)
}

fn main() -> ExitCode {
    let check = std::env::args().skip(1).any(|a| a == "--check");
    let header = capi_dir().join("include/pm4core.h");
    let generated = match generate() {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("gen-header: {e}");
            return ExitCode::FAILURE;
        }
    };
    if check {
        return match std::fs::read(&header) {
            Ok(committed) if committed == generated => ExitCode::SUCCESS,
            Ok(_) => {
                eprintln!(
                    "gen-header: {} is out of date with capi/src: run `cargo run -p pm4core-capi-gen-header`",
                    header.display()
                );
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("gen-header: reading {}: {e}", header.display());
                ExitCode::FAILURE
            }
        };
    }
    if let Err(e) = std::fs::write(&header, &generated) {
        eprintln!("gen-header: writing {}: {e}", header.display());
        return ExitCode::FAILURE;
    }
    println!("wrote {} ({} bytes)", header.display(), generated.len());
    ExitCode::SUCCESS
}
