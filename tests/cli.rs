//! The `pm4` command: exit codes 0 (done), 1 (replay error), 2 (bad input
//! or arguments), never a panic, over good and hostile inputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pm4core::trace::TraceWriter;

fn pm4(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pm4")).args(args).output().unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pm4-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn valid_trace() -> Vec<u8> {
    std::fs::read(root().join("traces/corpus/ibs.pm4t")).unwrap()
}

/// Hostile files: each is not a valid trace for a different reason.
fn hostile() -> Vec<(&'static str, Vec<u8>)> {
    let good = valid_trace();
    let mut bad_crc = good.clone();
    let last = bad_crc.len() - 20;
    bad_crc[last] ^= 0xFF;
    let mut bad_magic = good.clone();
    bad_magic[0] = b'X';
    let truncated = good[..good.len() / 2].to_vec();
    let mut overlapping = TraceWriter::new();
    overlapping.zero(0x1000, 0x100).unwrap();
    let overlapping = {
        // The writer refuses overlaps: build one by hand after a valid head.
        let mut bytes = overlapping.finish();
        bytes.truncate(bytes.len() - 16); // drop END
        let mut chunk = b"ZERO".to_vec();
        chunk.extend_from_slice(&16u32.to_le_bytes());
        let mut payload = 0x1080u64.to_le_bytes().to_vec();
        payload.extend_from_slice(&0x100u64.to_le_bytes());
        chunk.extend_from_slice(&payload);
        let mut crc = crc32fast::Hasher::new();
        crc.update(b"ZERO");
        crc.update(&payload);
        chunk.extend_from_slice(&crc.finalize().to_le_bytes());
        bytes.extend_from_slice(&chunk);
        bytes
    };
    let mut unknown_critical = good[..16].to_vec();
    unknown_critical.extend_from_slice(b"ABCD");
    unknown_critical.extend_from_slice(&0u32.to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(b"ABCD");
    unknown_critical.extend_from_slice(&crc.finalize().to_le_bytes());
    vec![
        ("empty", Vec::new()),
        ("bad_crc", bad_crc),
        ("bad_magic", bad_magic),
        ("truncated", truncated),
        ("overlapping", overlapping),
        ("unknown_critical", unknown_critical),
        ("random", (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()),
    ]
}

#[test]
fn replay_of_a_bundled_trace_succeeds() {
    let o = pm4(&["replay", root().join("traces/radv-draw.pm4t").to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["draws"], 2);
    assert_eq!(json["packets"]["total"], 626);
    assert_eq!(json["errors"], serde_json::json!([]));
    assert_eq!(json["packets"]["by_opcode"]["INDIRECT_BUFFER"], 1);
}

#[test]
fn replay_errors_exit_1_and_name_the_fault() {
    // A submission whose indirect buffer points at unmapped memory.
    let source = ".info gpu=gfx10.3\nmain: .mem 0x1000\n    ib 0xdead0000, 16\n.end\n.submit gfx main\n";
    let trace = temp("unmapped.pm4t", &pm4core::asm::assemble(source).unwrap());
    let o = pm4(&["replay", trace.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("0xdead0000"), "{stderr}");
}

#[test]
fn corrupted_traces_exit_2_naming_what_and_where() {
    for (name, bytes) in hostile() {
        let path = temp(&format!("{name}.pm4t"), &bytes);
        let o = pm4(&["replay", path.to_str().unwrap()]);
        assert_eq!(code(&o), 2, "{name}: {}", String::from_utf8_lossy(&o.stderr));
        let stderr = String::from_utf8_lossy(&o.stderr);
        match name {
            "bad_crc" => assert!(stderr.contains("CRC"), "{stderr}"),
            "unknown_critical" => assert!(stderr.contains("ABCD"), "{stderr}"),
            "overlapping" => assert!(stderr.contains("overlap"), "{stderr}"),
            _ => assert!(stderr.starts_with("pm4: "), "{stderr}"),
        }
    }
}

#[test]
fn every_subcommand_exits_0_1_or_2_on_hostile_input() {
    for (name, bytes) in hostile() {
        let path = temp(&format!("{name}.bin"), &bytes);
        let p = path.to_str().unwrap();
        let out = temp("out.pm4t", b"");
        let o = out.to_str().unwrap();
        for args in [
            vec!["replay", p],
            vec!["replay", p, "--json"],
            vec!["disasm", p],
            vec!["disasm", "--raw", p],
            vec!["disasm", "--raw", p, "--json"],
            vec!["disasm", "--raw", p, "--source"],
            vec!["asm", p, "-o", o],
            vec!["inspect", p],
            vec!["inspect", p, "--json"],
            vec!["import", "raw", p, "-o", o],
            vec!["import", "kycap", p, "-o", o],
        ] {
            let result = pm4(&args);
            let c = code(&result);
            assert!((0..=2).contains(&c), "{args:?} on {name}: exit {c}\n{}", String::from_utf8_lossy(&result.stderr));
        }
    }
}

#[test]
fn bad_arguments_exit_2() {
    assert_eq!(code(&pm4(&["replay", "/nonexistent/trace.pm4t"])), 2);
    assert_eq!(code(&pm4(&["replay", "--mem", "nonsense"])), 2);
    assert_eq!(code(&pm4(&["replay", "--reg", "NO_SUCH_REGISTER"])), 2);
    assert_eq!(code(&pm4(&["frobnicate"])), 2);
    assert_eq!(code(&pm4(&["disasm"])), 2);
}

#[test]
fn asm_then_disasm_source_round_trips() {
    let source = root().join("traces/corpus/queues.pm4");
    let built = temp("queues.pm4t", b"");
    assert_eq!(code(&pm4(&["asm", source.to_str().unwrap(), "-o", built.to_str().unwrap()])), 0);
    let listing = pm4(&["disasm", built.to_str().unwrap(), "--source"]);
    assert_eq!(code(&listing), 0);
    let again_src = temp("again.pm4", &listing.stdout);
    let again = temp("again.pm4t", b"");
    assert_eq!(code(&pm4(&["asm", again_src.to_str().unwrap(), "-o", again.to_str().unwrap()])), 0);
    assert_eq!(std::fs::read(built).unwrap(), std::fs::read(again).unwrap());
}

#[test]
fn import_raw_then_replay_reports_unmapped_ibs_and_goes_on() {
    // A raw dump: an IB to memory the dump does not hold, then a NOP.
    let words: [u32; 5] = [0xC002_3F00, 0x0000_1000, 0x0000_0000, 16, 0xFFFF_1000];
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let raw = temp("dump.bin", &bytes);
    let trace = temp("dump.pm4t", b"");
    let o = pm4(&["import", "raw", raw.to_str().unwrap(), "-o", trace.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let o = pm4(&["replay", trace.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 1);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["errors"][0]["kind"], "memory");
    assert!(json["errors"][0]["message"].as_str().unwrap().contains("0x1000"));
}
