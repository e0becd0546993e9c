//! The disassembler's walk: decoding, IB following (nesting, CHAIN, static
//! re-walks), and its limits (cycles, depth, budget, unmapped targets,
//! truncated packets); text and source output; no input makes it panic.

use pm4core::asm::{assemble, assemble_trace};
use pm4core::disasm::{DisasmOptions, Disassembler, Listing};
use pm4core::regs::db::GpuFamily;
use pm4core::trace::{Trace, TraceEvent};
use proptest::prelude::*;

fn trace(source: &str) -> Trace {
    assemble_trace(source).unwrap_or_else(|e| panic!("{e}\n{source}"))
}

fn listing(source: &str, options: DisasmOptions) -> Listing {
    Disassembler::for_trace(&trace(source), options).listing()
}

fn opcodes(l: &Listing) -> Vec<(String, u32)> {
    l.packets.iter().map(|p| (p.opcode.clone(), p.depth)).collect()
}

fn messages(l: &Listing) -> String {
    l.diagnostics.iter().map(|d| d.message.to_string()).collect::<Vec<_>>().join("\n")
}

fn text(dis: &Disassembler<'_>) -> String {
    let mut out = Vec::new();
    dis.write_text(&mut out).unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8(out).unwrap_or_default()
}

fn le(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn decodes_every_packet_type() {
    let bytes =
        le(&[0xC002_7600, 0x8, 0x100, 0x0, 0xFFFF_1000, 0x8000_0000, 0x0001_2C08, 1, 2, 0xC000_0100, 7, 0x4000_0000]);
    let dis = Disassembler::for_raw(&bytes, 0x1000, DisasmOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let l = dis.listing();
    let names: Vec<&str> = l.packets.iter().map(|p| p.opcode.as_str()).collect();
    assert_eq!(names, ["SET_SH_REG", "NOP", "TYPE2", "TYPE0", "UNKNOWN_0x01", "TYPE1"]);
    let set = &l.packets[0];
    assert_eq!((set.address, set.dwords.len()), (0x1000, 4));
    assert_eq!(set.fields[0].name, "SPI_SHADER_PGM_LO_PS");
    assert_eq!(set.fields[0].register, Some(0x2C08));
    assert_eq!(set.fields[1].name, "SPI_SHADER_PGM_HI_PS");
    assert!(set.fields[1].bits.as_deref().is_some_and(|b| b.contains("MEM_BASE = 0")), "{:?}", set.fields[1]);
    assert_eq!(l.packets[3].fields[1].name, "SPI_SHADER_PGM_HI_PS");
    assert!(l.packets[5].problem.as_deref().is_some_and(|p| p.contains("type-1")));
    assert_eq!(l.by_opcode.values().sum::<u64>(), 6);
    let t = text(&dis);
    assert!(t.contains("SPI_SHADER_PGM_LO_PS (0x2c08) <- 0x00000100"), "{t}");
    assert!(t.lines().next().is_some_and(|l| l.starts_with("; submission 0: queue 0 (gfx) 0x1000, 12 dwords")), "{t}");
}

#[test]
fn fields_name_events_registers_and_conventions() {
    let l = listing(
        "
        main: .mem 0x1000
            RELEASE_MEM event=BOTTOM_OF_PIPE_TS data_sel=data32 addr=0x2000 data=1
            EVENT_WRITE event=CS_PARTIAL_FLUSH index=4
            WAIT_REG_MEM function=eq reg=CP_COHER_STATUS ref=0 mask=1
            NOP 0x33370000, 5
            ACQUIRE_MEM gcr=0x3b1
            DISPATCH_DIRECT x=1 initiator=0x45
        .end
        .submit gfx main
        ",
        DisasmOptions::default(),
    );
    let field = |i: usize, name: &str| {
        l.packets[i].fields.iter().find(|f| f.name == name).map(|f| f.value.clone()).unwrap_or_default()
    };
    assert_eq!(field(0, "EVENT"), "BOTTOM_OF_PIPE_TS");
    assert_eq!(field(0, "ADDR"), "0x2000");
    assert_eq!(field(1, "EVENT"), "CS_PARTIAL_FLUSH");
    assert_eq!(field(2, "REG_NAME"), "CP_COHER_STATUS");
    assert_eq!(field(3, "CONVENTION"), "\"binary blob\"");
    assert!(l.packets[4].fields.iter().any(|f| f.name == "GCR_CNTL" && f.bits.is_some()));
    assert!(l.packets[5].fields.iter().any(|f| f.name == "DISPATCH_INITIATOR" && f.bits.is_some()));
    assert_eq!(l.packets.len(), 6);
}

#[test]
fn follows_nested_and_chained_buffers() {
    let source = "
        .mem 0x1000
        main:  ib sub, dwords(sub)
               NOP
               chain next, dwords(next)
               .dw 0xdeadbeef            ; after the CHAIN: never walked
        sub:   ib leaf, dwords(leaf)
               ib leaf, dwords(leaf)
        leaf:  NOP 1
        next:  TYPE2
        .end
        .submit gfx main dwords(main, sub)
    ";
    let l = listing(source, DisasmOptions::default());
    let expected: Vec<(String, u32)> = [
        ("INDIRECT_BUFFER", 0),
        ("INDIRECT_BUFFER", 1),
        ("NOP", 2),
        ("INDIRECT_BUFFER", 1),
        ("NOP", 2),
        ("NOP", 0),
        ("INDIRECT_BUFFER", 0),
        ("TYPE2", 0),
    ]
    .iter()
    .map(|&(n, d)| (n.to_owned(), d))
    .collect();
    assert_eq!(opcodes(&l), expected);
    assert!(messages(&l).contains("1 dwords after the CHAIN are not walked"), "{}", messages(&l));
    assert_eq!(l.by_opcode["INDIRECT_BUFFER"], 4);
    assert_eq!(l.by_opcode["NOP"], 3);
    assert!(l.complete);
    let no_follow = listing(source, DisasmOptions { follow_ibs: false, ..DisasmOptions::default() });
    // Without following, the CHAIN does not end the buffer: 0xdeadbeef is
    // read as a (truncated) header.
    assert_eq!(no_follow.packets.len(), 4);
}

#[test]
fn conditional_indirect_buffer_follows_both_targets() {
    let l = listing(
        "
        .mem 0x1000
        main: PKT3 INDIRECT_BUFFER 0x202, 0x3000, 0, 0, 0, 0, 0, a, 0, 1, b, 0, 1
        a:    NOP
        b:    TYPE2
        .end
        .submit gfx main 14
        ",
        DisasmOptions::default(),
    );
    let names: Vec<(String, u32)> = opcodes(&l);
    assert_eq!(names[1..], [("NOP".to_owned(), 1), ("TYPE2".to_owned(), 1)]);
}

#[test]
fn limits_cycles_depth_budget_and_unmapped_targets() {
    // An IB that calls itself, and buffers that chain to each other.
    let l = listing(
        "
        .mem 0x1000
        a: ib a, 4
        b: chain c, 4
        c: chain b, 4
        d: chain d, 4
        .end
        .submit gfx a 4
        .submit gfx b 4
        .submit gfx d 4
        ",
        DisasmOptions::default(),
    );
    let m = messages(&l);
    assert_eq!(m.matches("cycle").count(), 3, "{m}");
    assert_eq!(l.packets.len(), 4);

    // Depth: a -> b -> c -> d with a limit of 2.
    let source = "
        .mem 0x1000
        a: ib b, 4
        b: ib c, 4
        c: ib d, 4
        d: NOP
        .end
        .submit gfx a 4
    ";
    let l = listing(source, DisasmOptions { max_depth: 2, ..DisasmOptions::default() });
    assert_eq!(opcodes(&l).iter().map(|(_, d)| *d).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(messages(&l).contains("nesting limit 2"), "{}", messages(&l));
    assert_eq!(listing(source, DisasmOptions::default()).packets.len(), 4);

    // The packet budget stops a walk that re-enters buffers; it is never
    // below the input's own dwords, so a plain listing is never cut short.
    let plain = ".mem 0x1000\n.fill 100, 0xffff1000\n.end\n.submit gfx 0x1000 100";
    let l = listing(plain, DisasmOptions { max_packets: 10, ..DisasmOptions::default() });
    assert_eq!((l.packets.len(), l.complete), (100, true));
    let mut fan_out = String::new();
    for (level, next) in [("a", "b"), ("b", "c"), ("c", "d")] {
        fan_out.push_str(&format!("{level}: .mem {}\n", 0x1000 * (level.as_bytes()[0] - b'a' + 1) as u32));
        for _ in 0..8 {
            fan_out.push_str(&format!("ib {next}, dwords({next})\n"));
        }
        fan_out.push_str(".end\n");
    }
    fan_out.push_str("d: .mem 0x4000\nNOP\n.end\n.submit gfx a 32\n");
    let fan_out = trace(&fan_out);
    let dis = Disassembler::for_trace(&fan_out, DisasmOptions { max_packets: 10, ..DisasmOptions::default() });
    let budget = fan_out.bytes().len() as u64 / 4;
    assert_eq!(dis.walk_budget(), budget);
    assert!(budget < 8 + 64 + 512 + 512, "{budget}");
    let l = dis.listing();
    assert_eq!((l.packets.len() as u64, l.complete), (budget, false));
    assert!(messages(&l).contains(&format!("packet budget of {budget} exhausted")), "{}", messages(&l));

    // An unmapped IB target is reported; the walk goes on.
    let l = listing(".mem 0x1000\nib 0x900000, 8\nNOP\n.end\n.submit gfx 0x1000 5", DisasmOptions::default());
    assert_eq!(l.packets.len(), 2);
    assert!(messages(&l).contains("IB target 0x900000 (8 dwords) is unmapped"), "{}", messages(&l));

    // A buffer that runs into unmapped memory.
    let l = listing(
        ".mem 0x1000\nNOP\n.end\n.submit gfx 0x1000 1\n.mem 0x2000\nib 0x1000, 3\n.end\n.submit gfx 0x2000 4",
        DisasmOptions::default(),
    );
    assert!(messages(&l).contains("cannot read a packet header"), "{}", messages(&l));
}

#[test]
fn truncated_packets_keep_their_dwords() {
    let l = listing(".mem 0x1000\nWRITE_DATA hdr_count=5 1, 2\n.end\n.submit gfx 0x1000 3", DisasmOptions::default());
    assert_eq!(l.packets.len(), 1);
    let p = &l.packets[0];
    assert_eq!(p.dwords, [0xC005_3700, 1, 2]);
    assert!(
        p.problem.as_deref().is_some_and(|m| m.contains("needs 7 dwords, the buffer has 3 left")),
        "{:?}",
        p.problem
    );
    // A body too short for its layout.
    let l = listing(".mem 0x1000\nWRITE_DATA 1, 2\n.end\n.submit gfx 0x1000 3", DisasmOptions::default());
    assert!(l.packets[0].problem.as_deref().is_some_and(|m| m.contains("missing")), "{:?}", l.packets[0]);
}

#[test]
fn each_submission_sees_memory_as_it_was() {
    let l = listing(
        "
        .mem 0x1000
            NOP
        .end
        .submit gfx 0x1000 1
        .write 0x1000
            TYPE2
        .end
        .submit comp0.1 0x1000 1
        ",
        DisasmOptions::default(),
    );
    assert_eq!(opcodes(&l), [("NOP".to_owned(), 0), ("TYPE2".to_owned(), 0)]);
    assert_eq!((l.packets[1].submission, l.packets[1].queue), (1, 2));
    assert_eq!(l.submissions.len(), 2);
}

#[test]
fn register_database_follows_the_family() {
    let source = ".mem 0x1000\nSET_SH_REG 0xcc, 1\n.end\n.submit gfx 0x1000 3";
    let gfx103 = listing(source, DisasmOptions::default());
    let gfx7 = listing(source, DisasmOptions { family: Some(GpuFamily::Gfx7), ..DisasmOptions::default() });
    assert_eq!(gfx7.gpu, "gfx7");
    assert_eq!(gfx7.packets[0].fields[0].name, "SPI_SHADER_USER_DATA_ES_0");
    assert_ne!(gfx103.packets[0].fields[0].name, "SPI_SHADER_USER_DATA_ES_0");
    let from_info = listing(&format!(".info gpu=gfx7\n{source}"), DisasmOptions::default());
    assert_eq!(from_info.gpu, "gfx7");
}

#[cfg(feature = "cli")]
#[test]
fn json_listing() {
    let l = listing(".mem 0x1000\nNOP\nTYPE2\n.end\n.submit gfx 0x1000 2", DisasmOptions::default());
    let json = l.to_json().unwrap_or_else(|e| panic!("{e}"));
    assert!(json.contains("\"dwords\": [\n        \"ffff1000\"\n      ]"), "{json}");
    assert!(json.contains("\"by_opcode\": {\n    \"NOP\": 1,\n    \"TYPE2\": 1\n  }"), "{json}");
    assert!(json.contains("\"address\": 4096"), "{json}");
}

#[test]
fn raw_input_checks_and_source() {
    assert!(Disassembler::for_raw(&[0; 8], 2, DisasmOptions::default()).is_err());
    assert!(Disassembler::for_raw(&[0; 8], (1 << 48) - 4, DisasmOptions::default()).is_err());
    let bytes = [0x00, 0x10, 0xFF, 0xFF, 0xAA];
    let dis = Disassembler::for_raw(&bytes, 0, DisasmOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let l = dis.listing();
    assert_eq!(l.packets.len(), 1);
    assert!(messages(&l).contains("1 trailing bytes"));
    let mut source = Vec::new();
    dis.write_source(&mut source).unwrap_or_else(|e| panic!("{e}"));
    let t = assemble_trace(&String::from_utf8_lossy(&source)).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(&t.events()[0], TraceEvent::MemRegion { data, .. } if t.bytes_of(data) == bytes));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any dwords at any aligned base: the walk ends, prints, and its source
    /// assembles back to the same bytes.
    #[test]
    fn raw_dwords_never_panic(
        words in proptest::collection::vec(prop_oneof![
            any::<u32>(),
            Just(0xFFFF_1000u32),
            Just(0xC002_3F00u32),
            Just(0x1000u32),
            Just(0u32),
            (0u32..0x40, 0u32..0x100).prop_map(|(c, op)| 0xC000_0000 | (c << 16) | (op << 8)),
        ], 0..64),
        base in (0u64..0x800).prop_map(|b| b * 4),
    ) {
        let bytes = le(&words);
        let dis = Disassembler::for_raw(&bytes, base, DisasmOptions { max_packets: 5000, ..DisasmOptions::default() })
            .unwrap_or_else(|e| panic!("{e}"));
        let l = dis.listing();
        prop_assert!(l.packets.len() <= 5000);
        let _ = text(&dis);
        let mut source = Vec::new();
        dis.write_source(&mut source).unwrap_or_else(|e| panic!("{e}"));
        let source = String::from_utf8_lossy(&source).into_owned();
        let assembled = assemble(&source).unwrap_or_else(|e| panic!("{e}\n{source}"));
        let t = Trace::from_bytes(assembled).unwrap_or_else(|e| panic!("{e}"));
        let region = t.events().iter().find_map(|e| match e {
            TraceEvent::MemRegion { address, data, .. } => Some((*address, t.bytes_of(data).to_vec())),
            _ => None,
        });
        prop_assert_eq!(region, Some((base, bytes)));
    }
}
