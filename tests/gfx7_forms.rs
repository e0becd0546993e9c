//! The gfx7 (PS4) forms in the packet layer, each with its exact dwords:
//! which opcodes gfx7 has, the bodies decoded, encoded and listed in gfx7's
//! layouts, the builder and the assembler emitting them, the disassembler
//! naming what a gfx7 CP does not have as unknown.

use pm4core::asm::assemble_trace;
use pm4core::disasm::{DisasmOptions, Disassembler};
use pm4core::packet::body::{AcquireMem, AnyBody, Body, CondExec, DmaData, ReleaseMem, SurfaceSync};
use pm4core::packet::builder::{CommandBuffer, Signal};
use pm4core::packet::opcode::{GFX7_ABSENT, GFX7_COMPUTE_ONLY};
use pm4core::packet::Opcode;
use pm4core::trace::TraceEvent;
use pm4core::GpuFamily::{self, Gfx103, Gfx7};

/// The dwords of the first `.mem` block of `source`.
fn assembled(source: &str) -> Vec<u32> {
    let trace = assemble_trace(source).unwrap_or_else(|e| panic!("{e}\n{source}"));
    let bytes = trace
        .events()
        .iter()
        .find_map(|e| match e {
            TraceEvent::MemRegion { data, .. } => Some(trace.bytes_of(data).to_vec()),
            _ => None,
        })
        .expect("a .mem block");
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn field<'a>(fields: &'a [pm4core::packet::field::BodyField<'a>], name: &str) -> String {
    fields.iter().find(|f| f.name == name).map_or_else(|| format!("no {name}"), |f| f.value.to_string())
}

#[test]
fn gfx7_lacks_the_later_packets_and_runs_three_on_compute_rings_only() {
    // Every named opcode exists on gfx10.3; gfx7 lacks exactly its list.
    let absent: Vec<Opcode> = Opcode::all_named().filter(|op| !op.exists_on(Gfx7)).collect();
    assert_eq!(
        absent,
        GFX7_ABSENT.iter().copied().collect::<std::collections::BTreeSet<_>>().into_iter().collect::<Vec<_>>()
    );
    assert!(Opcode::all_named().all(|op| op.exists_on(Gfx103)));
    assert!(!Opcode(0x01).exists_on(Gfx7) && !Opcode(0x01).exists_on(Gfx103));
    for op in [
        Opcode::PRIME_UTCL2,
        Opcode::SET_UCONFIG_REG_INDEX,
        Opcode::LOAD_CONTEXT_REG_INDEX,
        Opcode::DISPATCH_MESH_INDIRECT_MULTI,
        Opcode::WAIT_REG_MEM64,
        Opcode::FRAME_CONTROL,
    ] {
        assert!(!op.exists_on(Gfx7), "{op}");
        assert_eq!(op.name_on(Gfx7), None, "{op}");
        assert_eq!(op.name_on(Gfx103), op.name(), "{op}");
        assert_eq!(AnyBody::decode_for(Gfx7, op, &[0; 16]), Ok(None), "{op}: no body on gfx7");
    }
    for op in [Opcode::EVENT_WRITE_EOP, Opcode::EVENT_WRITE_EOS, Opcode::SURFACE_SYNC, Opcode::DMA_DATA] {
        assert!(op.exists_on(Gfx7) && !op.compute_only_on(Gfx7), "{op}");
    }
    assert_eq!(GFX7_COMPUTE_ONLY, [Opcode::RELEASE_MEM, Opcode::REWIND, Opcode::SET_QUEUE_REG]);
    assert!(GFX7_COMPUTE_ONLY.iter().all(|op| op.compute_only_on(Gfx7) && !op.compute_only_on(Gfx103)));
    // The body types gfx7 decodes are gfx10.3's less the absent opcodes'.
    let gfx103: Vec<Opcode> = AnyBody::opcodes().filter(|op| op.exists_on(Gfx7)).collect();
    assert_eq!(AnyBody::opcodes_for(Gfx7).collect::<Vec<_>>(), gfx103);
}

#[test]
fn dma_data_command_word_per_family() {
    let body = [0x6030_0000, 0x12_9100, 0, 0x12_9100, 0, 0x0020_0060];
    let gfx7 = DmaData::decode_body_for(Gfx7, Opcode::DMA_DATA, &body).unwrap();
    assert_eq!((gfx7.byte_count, gfx7.disable_write_confirm, gfx7.swaps), (96, true, (0, 0)));
    let gfx103 = DmaData::decode_body(Opcode::DMA_DATA, &body).unwrap();
    assert_eq!((gfx103.byte_count, gfx103.disable_write_confirm), (0x20_0060, false));
    assert_eq!(gfx7.command(Gfx7), 0x0020_0060);
    assert_eq!(gfx7.command(Gfx103), 0x8000_0060, "the same copy in the gfx9+ layout");
    assert_eq!(gfx7.encode_for(Gfx7), [0xC005_5000, 0x6030_0000, 0x12_9100, 0, 0x12_9100, 0, 0x0020_0060]);
    // Swaps and the raw-wait bit: [23:22], [25:24], [30].
    let swapped = DmaData::decode_body_for(Gfx7, Opcode::DMA_DATA, &[0, 0, 0, 0, 0, 0x41A0_0100]).unwrap();
    assert_eq!((swapped.byte_count, swapped.swaps, swapped.raw_wait), (0x100, (2, 1), true));
    assert_eq!(DmaData::max_byte_count(Gfx7), 0x1F_FFFF);
    assert_eq!(DmaData::max_byte_count(Gfx103), 0x3FF_FFFF);
    let fields = swapped.fields_for(Gfx7);
    assert_eq!((field(&fields, "SRC_SWAP"), field(&fields, "DST_SWAP")), ("2".into(), "1".into()));
    assert_eq!(field(&fields, "COMMAND"), "0x41a00100");
    assert_eq!(field(&swapped.fields(), "SRC_SWAP"), "no SRC_SWAP", "gfx10.3 has no swaps");
}

#[test]
fn releases_on_gfx7() {
    // RELEASE_MEM (compute ring): COUNT 5, INT_SEL [25:24], cache bits [27:12].
    let body = [0x0032_1528, 0x4200_0000, 0x10_0000, 1, 5, 0];
    let r = ReleaseMem::decode_body_for(Gfx7, Opcode::RELEASE_MEM, &body).unwrap();
    assert_eq!((r.event_type, r.event_index, r.cache_control), (0x28, 5, 0x321));
    assert_eq!((r.int_sel, r.data_sel, r.address, r.data, r.int_ctxid), (2, 2, 0x1_0010_0000, 5, 0));
    assert!(r.legacy);
    assert_eq!(r.encode_for(Gfx7)[1..], body);
    // A gfx10.3-sized body (COUNT 6) read on gfx7: the extra dword is not part of it.
    let long = [0x528, 0x6300_0000, 0x4_1008, 1, 0, 0, 0x77];
    assert_eq!(ReleaseMem::decode_body_for(Gfx7, Opcode::RELEASE_MEM, &long).unwrap().int_ctxid, 0);
    let fields = r.fields_for(Gfx7);
    for (name, value) in [
        ("TCL1_VOL_ACTION_ENA", "1"),
        ("TC_ACTION_ENA", "1"),
        ("TC_WC_ACTION_ENA", "1"),
        ("TC_MD_ACTION_ENA", "1"),
        ("TC_NC_ACTION_ENA", "0"),
        ("CACHE_CONTROL", "0x321"),
        ("INT_SEL", "2"),
        ("DATA_SEL", "2(data64)"),
    ] {
        assert_eq!(field(&fields, name), value, "{name}");
    }
    assert_eq!(field(&fields, "INT_CTXID"), "no INT_CTXID");
    assert_eq!(field(&fields, "GCR_CNTL"), "no GCR_CNTL");
    // EVENT_WRITE_EOP: DATA_SEL and INT_SEL with ADDRESS_HI in body dword 2.
    let eop = [0x0003_1528, 0x1000, 0x2200_0001, 7, 0];
    let e = ReleaseMem::decode_body_for(Gfx7, Opcode::EVENT_WRITE_EOP, &eop).unwrap();
    assert_eq!((e.address, e.int_sel, e.data_sel, e.data, e.cache_control), (0x1_0000_1000, 2, 1, 7, 0x31));
    assert_eq!(e.encode_for(Gfx7)[1..], eop);
    let fields = e.fields_for(Gfx7);
    assert_eq!(
        ["TCL1_VOL_ACTION_ENA", "TC_VOL_ACTION_ENA", "TC_WB_ACTION_ENA", "TCL1_ACTION_ENA", "TC_ACTION_ENA"]
            .map(|n| field(&fields, n)),
        ["1", "0", "0", "1", "1"].map(String::from)
    );
    assert_eq!(field(&fields, "TC_MD_ACTION_ENA"), "no TC_MD_ACTION_ENA", "RELEASE_MEM's bits only");
}

#[test]
fn acquire_mem_and_surface_sync_on_gfx7() {
    let body = [0x28C0_0000, 0xFFFF_FFFF, 0xFF, 0, 0, 10];
    let a = AcquireMem::decode_body_for(Gfx7, Opcode::ACQUIRE_MEM, &body).unwrap();
    assert_eq!((a.coher_cntl, a.size, a.gcr_cntl), (0x28C0_0000, 0xFF_FFFF_FFFF, None));
    assert_eq!(a.encode_for(Gfx7), [0xC005_5800, 0x28C0_0000, 0xFFFF_FFFF, 0xFF, 0, 0, 10]);
    // A GCR_CNTL dword is not part of gfx7's form, read or written.
    let with_gcr = AcquireMem::decode_body_for(Gfx7, Opcode::ACQUIRE_MEM, &[0, 1, 0, 0, 0, 10, 0xC3B1]).unwrap();
    assert_eq!(with_gcr.gcr_cntl, None);
    assert_eq!(AcquireMem::all_memory(0x4000).encode_for(Gfx7).len(), 7);
    assert_eq!(AcquireMem::all_memory(0x4000).encode_for(Gfx103).len(), 8);
    let names: Vec<&str> = a.fields_for(Gfx7).iter().map(|f| f.name).collect();
    assert_eq!(
        names,
        [
            "CP_COHER_CNTL",
            "ENGINE",
            "CP_COHER_SIZE",
            "CP_COHER_SIZE_HI",
            "CP_COHER_BASE",
            "CP_COHER_BASE_HI",
            "POLL_INTERVAL"
        ]
    );
    let s = SurfaceSync::decode_body_for(Gfx7, Opcode::SURFACE_SYNC, &[0x8000_0040, 0xFFFF_FFFF, 0, 10]).unwrap();
    let names: Vec<&str> = s.fields_for(Gfx7).iter().map(|f| f.name).collect();
    assert_eq!(names, ["ENGINE", "CP_COHER_CNTL", "CP_COHER_SIZE", "CP_COHER_BASE", "POLL_INTERVAL"]);
    assert_eq!((s.size_bytes(), s.engine), (u64::MAX, 1));
}

#[test]
fn cond_exec_keeps_its_control_dword() {
    let body = [0x10_0000, 1, 0x1000_0000, 8];
    let c = CondExec::decode_body_for(Gfx7, Opcode::COND_EXEC, &body).unwrap();
    assert_eq!((c.address, c.exec_count, c.control, c.legacy), (0x1_0010_0000, 8, 0x1000_0000, false));
    assert_eq!(c.encode_for(Gfx7)[1..], body);
    assert_eq!(field(&c.fields_for(Gfx7), "CONTROL"), "1");
    assert_eq!(CondExec::new(0x1000, 3).encode(), [0xC003_2200, 0x1000, 0, 0, 3]);
}

#[test]
fn the_builder_emits_gfx7_layouts() {
    let copy = DmaData::decode_body_for(Gfx7, Opcode::DMA_DATA, &[0, 0x2000, 0, 0x3000, 0, 0x0020_0040]).unwrap();
    let mut cb = CommandBuffer::for_family(Gfx7);
    cb.packet(&copy).unwrap().release32(0x4000, 9, Signal::Interrupt).unwrap();
    assert_eq!(cb.family(), Gfx7);
    assert_eq!(
        cb.dwords(),
        [
            0xC005_5000,
            0,
            0x2000,
            0,
            0x3000,
            0,
            0x0020_0040,
            // The fence: EVENT_WRITE_EOP BOTTOM_OF_PIPE_TS, INT_SEL 2, DATA_SEL 1.
            0xC004_4700,
            0x528,
            0x4000,
            (1 << 29) | (2 << 24),
            9,
            0
        ]
    );
    // The same packets for gfx10.3.
    let mut cb = CommandBuffer::new();
    cb.packet(&copy).unwrap().release32(0x4000, 9, Signal::Interrupt).unwrap();
    assert_eq!(cb.dwords()[6], 0x8000_0040);
    assert_eq!(cb.dwords()[7], 0xC006_4900);
}

#[test]
fn the_assembler_takes_gfx7_forms_after_gpu_gfx7() {
    let words = assembled(
        ".gpu gfx7\n.mem 0x1000\n\
         DMA_DATA src=0x2000 dst=0x3000 size=96 dis_wc=1 src_swap=2\n\
         ACQUIRE_MEM cntl=0x28c00000 size=0xffffffff\n\
         RELEASE_MEM event=BOTTOM_OF_PIPE_TS cache=0x321 int=2 addr=0x4000 data=5\n\
         EVENT_WRITE_EOP event=BOTTOM_OF_PIPE_TS int=2 addr=0x1_0000_5000 data=1\n\
         fence 0x6000, 7\n\
         .end\n",
    );
    assert_eq!(
        words,
        [
            0xC005_5000,
            0,
            0x2000,
            0,
            0x3000,
            0,
            0x0060 | (1 << 21) | (2 << 22),
            0xC005_5800,
            0x28C0_0000,
            0xFFFF_FFFF,
            0,
            0,
            0,
            10,
            0xC005_4900,
            0x0032_1528,
            2 << 24 | 1 << 29,
            0x4000,
            0,
            5,
            0,
            0xC004_4700,
            0x528,
            0x5000,
            1 | (2 << 24) | (1 << 29),
            1,
            0,
            0xC004_4700,
            0x528,
            0x6000,
            1 << 29,
            7,
            0,
        ]
    );
    // What gfx7's forms lack is an error, and BYTE_COUNT has 21 bits.
    for (statement, what) in [
        ("ACQUIRE_MEM gcr=0x4000", "gcr"),
        ("RELEASE_MEM event=BOTTOM_OF_PIPE_TS ctxid=1", "ctxid"),
        ("DMA_DATA src=0 dst=0 size=0x200000", "size"),
    ] {
        let source = format!(".gpu gfx7\n.mem 0x1000\n{statement}\n.end\n");
        let err = assemble_trace(&source).expect_err(statement).to_string();
        assert!(err.contains(what), "{statement}: {err}");
    }
    // gfx10.3 keeps its forms: the same DMA_DATA copy has DIS_WC in bit 31.
    let words = assembled(".mem 0x1000\nDMA_DATA src=0x2000 dst=0x3000 size=96 dis_wc=1\n.end\n");
    assert_eq!(words[6], 0x8000_0060);
    let err = assemble_trace(".mem 0x1000\nDMA_DATA src=0 dst=0 size=0 src_swap=1\n.end\n").unwrap_err();
    assert!(err.to_string().contains("src_swap"), "{err}");
}

#[test]
fn the_disassembler_names_what_gfx7_lacks_as_unknown() {
    // PRIME_UTCL2 (gfx10 only), then an EVENT_WRITE_EOP.
    let words = [0xC003_5D00u32, 0, 0, 0, 0, 0xC004_4700, 0x0003_1528, 0x1000, 0x2200_0001, 7, 0];
    let bytes: Vec<u8> = words.iter().flat_map(|d| d.to_le_bytes()).collect();
    let listing = |family: GpuFamily| {
        let options = DisasmOptions { family: Some(family), ..DisasmOptions::default() };
        Disassembler::for_raw(&bytes, 0x1000, options).unwrap().listing()
    };
    let gfx7 = listing(Gfx7);
    assert_eq!(gfx7.packets[0].opcode, "UNKNOWN_0x5d");
    assert!(gfx7.packets[0].fields.is_empty());
    assert_eq!(gfx7.by_opcode.get("UNKNOWN_0x5d"), Some(&1));
    let eop: Vec<(String, String)> = gfx7.packets[1].fields.iter().map(|f| (f.name.clone(), f.value.clone())).collect();
    assert!(eop.contains(&("INT_SEL".into(), "2".into())) && eop.contains(&("TC_ACTION_ENA".into(), "1".into())));
    let gfx103 = listing(Gfx103);
    assert_eq!(gfx103.packets[0].opcode, "PRIME_UTCL2");
    assert!(gfx103.packets[1].fields.iter().any(|f| f.name == "GCR_CNTL"));
    let mut text = Vec::new();
    let options = DisasmOptions { family: Some(Gfx7), ..DisasmOptions::default() };
    Disassembler::for_raw(&bytes, 0x1000, options).unwrap().write_text(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("UNKNOWN_0x5d") && text.contains("TC_ACTION_ENA=1"), "{text}");
}

#[test]
fn a_register_writer_gfx7_lacks_lists_no_registers_in_either_output() {
    // SET_UCONFIG_REG_INDEX (gfx9+) of VGT_INDEX_TYPE.
    let bytes: Vec<u8> = [0xC001_7A00u32, 0x2000_0243, 1].iter().flat_map(|d| d.to_le_bytes()).collect();
    let options = DisasmOptions { family: Some(Gfx7), ..DisasmOptions::default() };
    let dis = Disassembler::for_raw(&bytes, 0x1000, options).unwrap();
    let record = &dis.listing().packets[0];
    assert_eq!((record.opcode.as_str(), record.fields.len()), ("UNKNOWN_0x7a", 0));
    let mut text = Vec::new();
    dis.write_text(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("UNKNOWN_0x7a") && !text.contains("VGT_INDEX_TYPE"), "{text}");
    let gfx103 = Disassembler::for_raw(&bytes, 0x1000, DisasmOptions::default()).unwrap().listing();
    assert_eq!(gfx103.packets[0].fields.last().map(|f| f.name.as_str()), Some("VGT_INDEX_TYPE"));
}

#[test]
fn pm4_state_names_registers_by_the_traces_family() {
    use pm4core::diagnostics::state::{state_at, StopAt};
    use pm4core::replay::ReplayOptions;
    // 0xA00F is DB_DEPTH_INFO on gfx7, DB_RESERVED_REG_2 on gfx10.3.
    let source = |gpu: &str| {
        format!(".info gpu={gpu}\n.mem 0x1000\ncmd:\n    SET_CONTEXT_REG 0xf, 0x541\n    NOP\n.end\n.submit gfx cmd\n")
    };
    for (gpu, name) in [("gfx7", "DB_DEPTH_INFO"), ("gfx10.3", "DB_RESERVED_REG_2")] {
        let trace = assemble_trace(&source(gpu)).unwrap();
        let state = state_at(&trace, &ReplayOptions::default(), None, StopAt::Index(1)).unwrap();
        let entry = &state.registers[name];
        assert_eq!((entry.register, entry.value, entry.written_by.opcode.as_str()), (0xA00F, 0x541, "SET_CONTEXT_REG"));
    }
}
