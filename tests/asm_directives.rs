//! The assembler: every directive, packet form and macro gives exactly the
//! expected dwords and chunks; errors name their line and column; no text
//! makes it panic.

use pm4core::asm::{assemble, assemble_trace, AsmError, AsmErrorKind};
use pm4core::packet::Opcode;
use pm4core::regs::db::RegisterSpace;
use pm4core::trace::{Tag, Trace, TraceEvent};
use proptest::prelude::*;

fn trace(source: &str) -> Trace {
    assemble_trace(source).unwrap_or_else(|e| panic!("{e}\n--- source ---\n{source}"))
}

/// The bytes of the first `MEM ` region.
fn region_bytes(t: &Trace) -> Vec<u8> {
    t.events()
        .iter()
        .find_map(|e| match e {
            TraceEvent::MemRegion { data, .. } => Some(t.bytes_of(data).to_vec()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Assembles `body` inside `.mem 0x1000` ... `.end` and returns its dwords.
fn dwords(body: &str) -> Vec<u32> {
    let t = trace(&format!(".mem 0x1000\n{body}\n.end\n"));
    let bytes = region_bytes(&t);
    assert_eq!(bytes.len() % 4, 0, "region of {} bytes", bytes.len());
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn error(source: &str) -> AsmError {
    match assemble(source) {
        Ok(_) => panic!("assembled, expected an error:\n{source}"),
        Err(e) => e,
    }
}

#[test]
fn data_directives() {
    assert_eq!(
        dwords(".dw 1, 0x2, 0b11, -1, 1.0f, -2.5f, 0x1_0000"),
        [1, 2, 3, 0xFFFF_FFFF, 0x3F80_0000, 0xC020_0000, 0x10000]
    );
    assert_eq!(dwords(".dw 1 2 3"), [1, 2, 3]);
    assert_eq!(dwords(".dq 0x100000002, -1"), [2, 1, 0xFFFF_FFFF, 0xFFFF_FFFF]);
    assert_eq!(dwords(".fill 3, 7\n.fill 2"), [7, 7, 7, 0, 0]);
    assert_eq!(dwords(".dw 1\n.align 16\n.dw 2"), [1, 0, 0, 0, 2]);
    assert_eq!(dwords(".space 8\n.dw 5"), [0, 0, 5]);
    assert_eq!(
        dwords(".dw (1 + 2) * 3, 1 << 4 | 1, ~0 & 0xff, 7 % 4, 9 / 2, 6 ^ 3, 0x100 >> 4"),
        [9, 17, 255, 3, 4, 5, 16]
    );
    let t = trace(".mem 0x1000\n.db 1, 2, \"ab\", -1\n.ascii \"x\\n\"\n.asciz \"\\x7f\"\n.end\n");
    assert_eq!(region_bytes(&t), [1, 2, b'a', b'b', 0xFF, b'x', b'\n', 0x7F, 0]);
}

#[test]
fn labels_constants_and_functions() {
    let source = "
        .mem 0x1000
        start: .dw lo(end), hi(end), $, sizeof(start), dwords(start), dwords(start, end), size
               .dw pgm_lo(0x123456789a00), pgm_hi(0x123456789a00), lo(-1), hi(0xffff800100014000)
        mid:   .dw 0
        end:
        .end
        size = dwords(start, end) + 1
        .equ twice, size * 2
        .mem
               .dw twice, sizeof(region), sizeof(zeros)
        .end
        zeros: .zero 0x8000, 0x40
        region: .mem 0x9000
        .dw 1, 2
        .end
    ";
    let t = trace(source);
    let regions: Vec<(u64, Vec<u32>)> = t
        .events()
        .iter()
        .filter_map(|e| match e {
            TraceEvent::MemRegion { address, data, .. } => Some((
                *address,
                t.bytes_of(data).chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
            )),
            _ => None,
        })
        .collect();
    let end = 0x1000 + 12 * 4;
    assert_eq!(
        regions[0],
        (0x1000, vec![end, 0, 0x1000, 44, 11, 12, 13, 0x3456_789A, 0x12, 0xFFFF_FFFF, 0xFFFF_8001, 0])
    );
    // `.mem` without an address goes after the regions so far, 256-aligned.
    assert_eq!(regions[1], (0x1100, vec![26, 8, 0x40]));
}

#[test]
fn generic_packets() {
    assert_eq!(dwords("NOP"), [0xFFFF_1000]);
    assert_eq!(dwords("nop 0x1, 2"), [0xC001_1000, 1, 2]);
    assert_eq!(dwords("PKT3 0x01 predicate 5"), [0xC000_0101, 5]);
    assert_eq!(dwords("PKT3 SET_SH_REG compute cam 1, 2"), [0xC001_7606, 1, 2]);
    assert_eq!(dwords("PKT3 0xAB"), [0xC000_0000 | (0x3FFF << 16) | 0xAB00]);
    assert_eq!(dwords("CLEAR_STATE 0"), [0xC000_1200, 0]);
    assert_eq!(dwords("DRAW_INDEX_AUTO predicate 3, 2"), [0xC001_2D01, 3, 2]);
    // A forced COUNT: the header says 6 body dwords, two follow.
    assert_eq!(dwords("WRITE_DATA hdr_count=5 1, 2"), [0xC005_3700, 1, 2]);
    assert_eq!(dwords("PKT3 NOP shader_type=1 predicate=0 1"), [0xC000_1002, 1]);
    assert_eq!(dwords("TYPE2"), [0x8000_0000]);
    assert_eq!(dwords("TYPE2 5"), [0x8000_0005]);
    assert_eq!(dwords("TYPE0 0x2c08, 1, 2"), [0x0001_2C08, 1, 2]);
    assert_eq!(dwords("TYPE0 SPI_SHADER_PGM_LO_PS, 7"), [0x0000_2C08, 7]);
    assert_eq!(dwords("TYPE0 DB_RENDER_OVERRIDE hdr_count=3, 7"), [0x0003_A003, 7]);
}

#[test]
fn register_writes() {
    assert_eq!(dwords("SET_SH_REG SPI_SHADER_PGM_LO_PS, 0x100, 0x0"), [0xC002_7600, 0x8, 0x100, 0]);
    assert_eq!(dwords("SET_SH_REG_INDEX index=3 SPI_SHADER_PGM_RSRC4_VS, 0xffff"), [0xC001_9B00, 0x3000_0041, 0xFFFF]);
    assert_eq!(dwords("SET_CONTEXT_REG DB_RENDER_OVERRIDE, 0x28"), [0xC001_6900, 3, 0x28]);
    assert_eq!(dwords("SET_UCONFIG_REG_INDEX VGT_INDEX_TYPE, 0 index=2"), [0xC001_7A00, 0x2000_0243, 0]);
    assert_eq!(dwords("SET_CONFIG_REG 0x10, 5"), [0xC001_6800, 0x10, 5]);
    assert_eq!(dwords("SET_SH_REG 0x10000008, 5"), [0xC001_7600, 0x1000_0008, 5]);
    assert_eq!(dwords("SET_SH_REG"), [0xFFFF_7600]);
    let e = error(".mem 0\n  SET_SH_REG DB_RENDER_OVERRIDE, 1\n.end\n");
    assert_eq!((e.line, e.column), (2, 14), "{e}");
    assert_eq!(
        e.kind,
        AsmErrorKind::WrongRegisterSpace {
            register: "DB_RENDER_OVERRIDE".into(),
            space: RegisterSpace::Context,
            opcode: Opcode::SET_SH_REG,
            wanted: RegisterSpace::Sh,
        }
    );
    assert_eq!(
        e.to_string(),
        "line 2, column 14: DB_RENDER_OVERRIDE is a context register; SET_SH_REG writes sh registers"
    );
    // A register only the gfx7 database has.
    assert_eq!(dwords(".gpu gfx7\nSET_SH_REG SPI_SHADER_USER_DATA_ES_0, 1"), [0xC001_7600, 0xCC, 1]);
    let e = error(".mem 0\nSET_SH_REG SPI_SHADER_USER_DATA_ES_0, 1\n.end");
    assert_eq!(
        e.kind,
        AsmErrorKind::UndefinedNameNearRegister {
            name: "SPI_SHADER_USER_DATA_ES_0".into(),
            register: "SPI_SHADER_USER_DATA_PS_0"
        }
    );
    // `.info gpu=` selects the database too.
    let t = trace(".info gpu=gfx7\n.mem 0\nSET_SH_REG SPI_SHADER_USER_DATA_ES_0, 1\n.end");
    assert_eq!(region_bytes(&t).len(), 12);
}

#[test]
fn field_forms() {
    assert_eq!(
        dwords("WAIT_REG_MEM function=eq mem=1 addr=0xffff8000001c4004 ref=1 mask=0xffffffff poll=4"),
        [0xC005_3C00, 0x13, 0x001C_4004, 0xFFFF_8000, 1, 0xFFFF_FFFF, 4]
    );
    assert_eq!(
        dwords("WAIT_REG_MEM function=ge reg=CP_COHER_STATUS ref=0 mask=1 engine=pfp"),
        [0xC005_3C00, 0x105, 0xC07F, 0, 0, 1, 10]
    );
    assert_eq!(
        dwords("WAIT_REG_MEM64 function=ne addr=0x2000 ref=0x100000001"),
        [0xC007_9300, 0x14, 0x2000, 0, 1, 1, 0xFFFF_FFFF, 0xFFFF_FFFF, 10]
    );
    assert_eq!(
        dwords("WRITE_DATA dst=mem addr=0xffff8000001c4004 wr_confirm=1 engine=pfp data=0, 0"),
        [0xC004_3700, 0x4010_0500, 0x001C_4004, 0xFFFF_8000, 0, 0]
    );
    assert_eq!(dwords("WRITE_DATA reg=0x2c08 data=5"), [0xC003_3700, 0, 0x2C08, 0, 5]);
    assert_eq!(
        dwords("RELEASE_MEM event=CACHE_FLUSH_AND_INV_TS_EVENT gcr=0x40c int=3 addr=0xffff8000001c4004 data=1"),
        [0xC006_4900, 0x0040_C514, 0x2300_0000, 0x001C_4004, 0xFFFF_8000, 1, 0, 0]
    );
    assert_eq!(
        dwords("RELEASE_MEM event=BOTTOM_OF_PIPE_TS data_sel=gpu_clock int=3 addr=0xffff800100380008"),
        [0xC006_4900, 0x0000_0528, 0x6300_0000, 0x0038_0008, 0xFFFF_8001, 0, 0, 0]
    );
    assert_eq!(dwords("RELEASE_MEM event=CS_DONE data=0x100000000"), [0xC006_4900, 0x62F, 0x4000_0000, 0, 0, 0, 1, 0]);
    assert_eq!(dwords("EVENT_WRITE event=PIPELINESTAT_START"), [0xC000_4600, 0x19]);
    assert_eq!(dwords("EVENT_WRITE event=ZPASS_DONE index=1 addr=0x3008"), [0xC002_4600, 0x115, 0x3008, 0]);
    assert_eq!(dwords("INDIRECT_BUFFER addr=0xffff800100014000 size=176"), [0xC002_3F00, 0x14000, 0xFFFF_8001, 0xB0]);
    assert_eq!(
        dwords("INDIRECT_BUFFER addr=0x2000 size=4 chain=1 valid=1 vmid=2"),
        [0xC002_3F00, 0x2000, 0, 0x0290_0004]
    );
    assert_eq!(dwords("INDIRECT_BUFFER_CONST addr=0x2000 size=8"), [0xC002_3300, 0x2000, 0, 8]);
    assert_eq!(
        dwords("COPY_DATA src_sel=gpu_clock dst_sel=mem dst=0xffff800100380000 count_sel=64 wr_confirm=1"),
        [0xC004_4000, 0x0011_0509, 0, 0, 0x0038_0000, 0xFFFF_8001]
    );
    assert_eq!(
        dwords("DMA_DATA data=0xffffffff dst=0xffff800100380000 size=32 dst_sel=addr_l2 cp_sync=1"),
        [0xC005_5000, 0xC030_0000, 0xFFFF_FFFF, 0, 0x0038_0000, 0xFFFF_8001, 0x20]
    );
    assert_eq!(
        dwords("DMA_DATA src=0x1000 dst=0x2000 size=64 engine=pfp raw_wait=1 dis_wc=1"),
        [0xC005_5000, 1, 0x1000, 0, 0x2000, 0, 0xC000_0040]
    );
    assert_eq!(dwords("ACQUIRE_MEM gcr=0xc3b1"), [0xC006_5800, 0, 0xFFFF_FFFF, 0x00FF_FFFF, 0, 0, 10, 0xC3B1]);
    assert_eq!(dwords("DISPATCH_DIRECT compute x=4 initiator=0x45"), [0xC003_1502, 4, 1, 1, 0x45]);
    assert_eq!(dwords("DRAW_INDEX_AUTO count=3"), [0xC001_2D00, 3, 2]);
}

#[test]
fn macros() {
    assert_eq!(dwords("set_program ps, 0x12345600"), [0xC002_7600, 8, 0x12_3456, 0]);
    assert_eq!(dwords("set_program cs, 0xff0000001000"), [0xC002_7600, 0x20C, 0x10, 0xFF]);
    assert_eq!(dwords("set_user_data cs, 2, 7, 8"), [0xC002_7600, 0x242, 7, 8]);
    assert_eq!(dwords("set_user_data vs, 0, 1"), [0xC001_7600, 0x4C, 1]);
    assert_eq!(
        dwords("write_wait 0x2000, 5"),
        [0xC003_3700, 0x0010_0500, 0x2000, 0, 5, 0xC005_3C00, 0x13, 0x2000, 0, 5, 0xFFFF_FFFF, 10]
    );
    assert_eq!(dwords("fence 0x2000, 9"), [0xC006_4900, 0x528, 0x2000_0000, 0x2000, 0, 9, 0, 0]);
    assert_eq!(dwords("ib 0x2000, 16"), [0xC002_3F00, 0x2000, 0, 0x80_0010]);
    assert_eq!(dwords("chain 0x2000, 16"), [0xC002_3F00, 0x2000, 0, 0x90_0010]);
    assert_eq!(dwords("dispatch 4, 2, 1"), [0xC003_1502, 4, 2, 1, 1]);
    assert_eq!(dwords("draw 6"), [0xC001_2D00, 6, 2]);
}

#[test]
fn chunk_directives() {
    let source = r#"
        .info gpu=gfx10.3
        .info description=  spaces and ; no comment
        .info "quoted key" "tab\there"
        .zero 0x10000, 0x1000
        buffer: .mem 0x20000
            .dw 1, 2, 3, 4
        .end
        .write buffer + 4
            .dw 9
        .end
        .submit gfx buffer
        .submit comp2.3 0x20000, 2
        .submit 56 0x20000 1
        .shader 0x20000 0x10000 relocated
        .shader 0x20000, 0x10100
        .note hello ; world
        .note "line\nbreak"
        .ancillary "tst!"
            .db 1, 2, 3
        .end
    "#;
    let t = trace(source);
    assert_eq!(
        t.info(),
        [
            ("gpu".to_owned(), "gfx10.3".to_owned()),
            ("description".to_owned(), "  spaces and ; no comment".to_owned()),
            ("quoted key".to_owned(), "tab\there".to_owned()),
        ]
    );
    let ev = t.events();
    assert!(matches!(ev[0], TraceEvent::ZeroRegion { address: 0x10000, len: 0x1000, .. }));
    assert!(matches!(ev[1], TraceEvent::MemRegion { address: 0x20000, .. }));
    match &ev[2] {
        TraceEvent::HostWrite { address, data, .. } => {
            assert_eq!((*address, t.bytes_of(data)), (0x20004, &9u32.to_le_bytes()[..]));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(ev[3], TraceEvent::Submit { queue: 0, address: 0x20000, size_dw: 4, .. }));
    assert!(matches!(ev[4], TraceEvent::Submit { queue: 20, address: 0x20000, size_dw: 2, .. }));
    assert!(matches!(ev[5], TraceEvent::Submit { queue: 56, size_dw: 1, .. }));
    assert!(matches!(
        ev[6],
        TraceEvent::Shader { header_address: 0x20000, code_address: 0x10000, relocated: true, .. }
    ));
    assert!(matches!(ev[7], TraceEvent::Shader { code_address: 0x10100, relocated: false, .. }));
    assert!(matches!(&ev[8], TraceEvent::Note { text, .. } if text == "hello ; world"));
    assert!(matches!(&ev[9], TraceEvent::Note { text, .. } if text == "line\nbreak"));
    assert!(matches!(ev[10], TraceEvent::Ancillary { tag: Tag(t), .. } if &t == b"tst!"));
    assert_eq!(ev.len(), 11);
}

#[test]
fn errors_name_line_and_column() {
    let cases: &[(&str, usize, usize, &str)] = &[
        (".mem 0\n  FROB 1\n.end", 2, 3, "unknown packet or macro"),
        (".mem 0\n  .dw 1, nowhere\n.end", 2, 10, "undefined name `nowhere`"),
        (".mem 0\n  .dw 1", 1, 1, "no .end"),
        (".mem 0\n  .dw 0x100000000\n.end", 2, 7, "does not fit in 32 bits"),
        (".mem 0\n  .dw 12ab\n.end", 2, 7, "bad number"),
        (".mem 0\n  .ascii \"abc\n.end", 2, 10, "unterminated string"),
        ("x: .dw 1", 1, 1, "label must be inside"),
        (".mem 0\nx: .dw 1\nx: .dw 2\n.end", 3, 1, "already defined"),
        (".mem 0x1000\n.dw 1\n.end\n.mem 0x1000\n.dw 2\n.end", 4, 1, "overlap"),
        (".submit gfx 0x5000 4", 1, 1, "outside"),
        (".mem 0\n.dw 1\n.end\n.info a=b", 4, 1, "INFO"),
        (".mem 0\n  WAIT_REG_MEM function=eq poll=0x10000\n.end", 2, 33, "does not fit in 16 bits"),
        (".mem 0\n  WAIT_REG_MEM function=eq 5\n.end", 2, 28, "not both"),
        (".mem 0\n  EVENT_WRITE event=NOT_AN_EVENT\n.end", 2, 21, "undefined name"),
        (".mem 0\n  WRITE_DATA frob=1\n.end", 2, 14, "no field `frob`"),
        (".mem 0\n  .dw 1 / 0\n.end", 2, 9, "division by zero"),
        (".mem 0\n  .dw sizeof(1)\n.end", 2, 14, "sizeof"),
        (".mem 0\n  .fill later\nlater:\n.end", 2, 9, "undefined name"),
        (".frob", 1, 1, "unknown directive"),
        (".end", 1, 1, ".end without"),
        (".mem 0\n  .dw ((((1)\n.end", 2, 13, "expected `)`"),
        (".mem 0\n  .dw 1 @ 2\n.end", 2, 9, "unexpected character"),
        (".gpu gfx9", 1, 6, "unknown GPU family"),
        (".mem 0\n  .align 3\n.end", 2, 10, "power of two"),
        (".mem 0\n  set_program xs, 0\n.end", 2, 15, "shader stage"),
        ("a = b\nb = a\n.mem 0\n.dw a\n.end", 4, 5, "recursive"),
        (".mem 0\n  INDIRECT_BUFFER addr=1 addr=2\n.end", 2, 26, "more than once"),
    ];
    for &(source, line, column, text) in cases {
        let e = error(source);
        assert!(e.kind.to_string().contains(text), "{source:?}: {e}");
        assert_eq!((e.line, e.column), (line, column), "{source:?}: {e}");
    }
}

#[test]
fn long_expressions() {
    let sum = vec!["1"; 200].join(" + ");
    assert_eq!(dwords(&format!(".dw {sum}")), [200]);
    let e = error(&format!(".mem 0\n.dw {}\n.end", vec!["1"; 300].join("+")));
    assert_eq!(e.kind, AsmErrorKind::TooManyOperators { max: 256 });
    assert_eq!(e.kind.to_string(), "expression has more than 256 operators");
    let e = error(&format!(".mem 0\n.dw {}1{}\n.end", "(".repeat(100), ")".repeat(100)));
    assert_eq!(e.kind, AsmErrorKind::NestedTooDeeply);
}

#[test]
fn comments_and_layout() {
    assert_eq!(dwords("  ; a comment\n// another\n.dw 1 ; trailing\nlabel: ; only a label\n.dw 2 // c"), [1, 2]);
    // CRLF line ends.
    assert_eq!(dwords(".dw 1\r\n.dw 2\r"), [1, 2]);
    // Every statement is exactly its dwords: nothing is merged or padded.
    let t = trace(".mem 0x1000\nNOP\nNOP\n.end\n.submit gfx 0x1000 2\n");
    assert_eq!(t.submissions().collect::<Vec<_>>(), [(0, 0x1000, 2)]);
    assert_eq!(region_bytes(&t).len(), 8);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Arbitrary text never panics.
    #[test]
    fn random_text_never_panics(text in "\\PC{0,200}") {
        let _ = assemble(&text);
    }

    /// Token soup from the assembler's own vocabulary never panics.
    #[test]
    fn random_statements_never_panic(words in proptest::collection::vec(prop_oneof![
        Just(".mem"), Just(".end"), Just(".dw"), Just(".fill"), Just(".align"), Just(".zero"), Just(".submit"),
        Just(".write"), Just(".info"), Just(".note"), Just(".shader"), Just(".ancillary"), Just(".db"), Just(".space"),
        Just("NOP"), Just("PKT3"), Just("TYPE0"), Just("TYPE2"), Just("SET_SH_REG"), Just("WAIT_REG_MEM"),
        Just("RELEASE_MEM"), Just("WRITE_DATA"), Just("INDIRECT_BUFFER"), Just("ib"), Just("write_wait"),
        Just("set_program"), Just("x:"), Just("x"), Just("sizeof(x)"), Just("dwords(x, $)"), Just("0x1000"),
        Just("-1"), Just("1.5f"), Just(","), Just("="), Just("data="), Just("addr="), Just("hdr_count="),
        Just("\n"), Just("\n"), Just("\n"), Just("("), Just(")"), Just("<<"), Just("gfx"), Just("\"s\""),
        Just("0xffffffffffffffff"), Just("*"), Just("/"), Just("0"), Just("predicate"), Just("index=3"),
    ], 0..40)) {
        let _ = assemble(&words.join(" "));
    }
}
