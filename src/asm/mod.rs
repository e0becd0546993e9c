//! A text assembler for PM4 traces, for tests that need unusual streams.
//!
//! [`assemble`] turns source text into the bytes of a trace file
//! (`docs/trace-format.md`). Nothing is optimised or reordered: every
//! statement becomes exactly the dwords it names, and every directive
//! exactly one chunk, in source order. Errors carry the line and column
//! ([`AsmError`], what is wrong being an [`AsmErrorKind`]); no input makes it panic.
//!
//! # Lines
//!
//! `[label:]... [statement] [; comment]` — comments start with `;` or `//`.
//! Names, opcodes, macros and keys are case-insensitive except labels and
//! constants; register names are the database's upper case, accepted in any
//! case (a name that is no label, constant or register is an error naming
//! the nearest register name, when one is near).
//!
//! # Values
//!
//! Integers `123`, `0x7f`, `0b101` (`_` separators allowed), floats with an
//! `f` suffix (`1.5f`, `-2e3f`: their f32 bits), labels, constants, register
//! names (their absolute dword index), `$` (the address of the current
//! statement), operators `| ^ & << >> + - * / % ~` with C precedence,
//! parentheses, and the functions `lo(x)` (low 32 bits), `hi(x)` (bits
//! 32..63), `pgm_lo(x)` (`x >> 8`, a PGM_LO value), `pgm_hi(x)`
//! (`(x >> 40) & 0xff`), `sizeof(label)` (bytes) and `dwords(label)` or
//! `dwords(start, end)` (`(end - start) / 4`). Arithmetic is 64-bit and
//! wraps; a dword operand must fit in 32 bits (or be a negative number).
//!
//! Labels are defined inside `.mem` blocks (the address of the next byte),
//! or on a `.mem` or `.zero` line (the region's start). Forward references
//! work everywhere except in amounts the layout needs: `.mem`/`.zero`
//! operands and `.fill`/`.align`/`.space` amounts. `sizeof(label)` is the
//! distance to the next label of the same region (or its end); for a label
//! on a `.mem`/`.zero` line it is the region's size.
//!
//! # Directives
//!
//! | directive | chunk / effect |
//! |---|---|
//! | `.info key=value` | an `INFO` entry; the value is the rest of the line verbatim. `.info "key" "value"` takes quoted strings (escapes `\\ \" \n \r \t \0 \xNN`). Every `.info` must come first. |
//! | `.gpu gfx10.3` / `.gpu gfx7` | the GPU family (no chunk): its register database for register names, and its packet forms for the field forms below (gfx7: DMA_DATA's COMMAND word, RELEASE_MEM's compute-ring form, ACQUIRE_MEM without GCR_CNTL, the `fence` macro as EVENT_WRITE_EOP); default: the first `.info gpu=` naming a known family, else gfx10.3 |
//! | `.mem [ADDR]` ... `.end` | a `MEM ` region holding the block's bytes; without ADDR it goes after every region so far, 256-byte aligned (the first at `0x100000`) |
//! | `.zero ADDR, LEN` | a `ZERO` region |
//! | `.write ADDR` ... `.end` | a `WRIT` host write of the block's bytes |
//! | `.submit QUEUE ADDR [DWORDS]` | a `SUBM`; QUEUE is `gfx`, `comp` (=1), `compP.Q` (1 + P*8 + Q) or a number; without DWORDS, ADDR must be a label and its size is used |
//! | `.shader HEADER CODE [relocated]` | a `SHDR` |
//! | `.note text` / `.note "quoted"` | a `note` chunk (text verbatim to the end of the line) |
//! | `.ancillary "tag!"` ... `.end` | an ancillary chunk with the block's bytes as payload |
//! | `.equ NAME, VALUE` or `NAME = VALUE` | a constant (evaluated where used) |
//!
//! Inside a block: `.dw v, ...` (dwords), `.dq v, ...` (64-bit), `.db v |
//! "text", ...` (bytes), `.ascii "text"`, `.asciz "text"`, `.fill COUNT [,
//! VALUE]` (COUNT dwords), `.align N` (zero bytes up to a multiple of N),
//! `.space N` (N zero bytes), and packets.
//!
//! # Packets
//!
//! Operands are positional values (separated by commas or spaces),
//! `key=value` fields and the header flag words `predicate` (bit 0),
//! `compute` (SHADER_TYPE, bit 1; also `shader_type=1`) and `cam`
//! (RESET_FILTER_CAM, bit 2); each also takes `=0`/`=1`.
//! Every type-3 form takes `hdr_count=N` to force the header's COUNT
//! (truncated or over-long packets); otherwise COUNT is the body length
//! minus one, and an empty body gives the one-dword form (COUNT 0x3FFF).
//!
//! - `OPCODE_NAME [flags] dw, dw, ...` — any opcode by name with its body as
//!   raw dwords; `NOP` alone is the pad `0xFFFF1000`, `NOP 0x...` a NOP with
//!   a payload.
//! - `PKT3 NAME_OR_NUMBER [flags] dw, ...` — the same for any opcode value.
//! - `SET_SH_REG REGISTER, value, ...` (and SET_CONTEXT_REG, SET_UCONFIG_REG,
//!   SET_CONFIG_REG and their `_INDEX` forms): the register by name (it must
//!   be in the packet's space), `index=N` sets dw0 bits 28..31; a number
//!   instead of a name is the raw first dword.
//! - `TYPE0 REGISTER, value, ...` — a type-0 packet; `TYPE2 [pad]` — a
//!   type-2 dword (`0x80000000 | pad`).
//! - Field forms (keys; defaults in brackets):
//!   - `WAIT_REG_MEM` / `WAIT_REG_MEM64`: `function=always|lt|le|eq|ne|ge|gt`
//!     [eq], `addr=` or `reg=` (+`reg2=`), `mem=0|1` [1 with addr, 0 with
//!     reg], `ref=` [0], `mask=` [all ones], `poll=` [10], `engine=me|pfp|ce`
//!     [me], `operation=` [0].
//!   - `WRITE_DATA`: `dst=reg|memory_sync|tc_l2|gds|mem` [mem with addr, reg
//!     with reg], `addr=` or `reg=`, `data=v,v,...`, `wr_confirm=`,
//!     `one_addr=`, `cache_policy=`, `engine=`.
//!   - `RELEASE_MEM`: `event=NAME|number` (VGT_EVENT_TYPE names), `index=`
//!     [5 for `*_TS` events, 6 for CS_DONE/PS_DONE, else 0], `gcr=`,
//!     `dst=mem|tc_l2`, `int=`, `data_sel=none|data32|data64|gpu_clock|
//!     system_clock|gds|atomic_add32` [data32 when `data=` fits 32 bits,
//!     data64 when it does not, none without data], `addr=`, `data=`,
//!     `ctxid=`, `cache_policy=`, `execute=`. On gfx7 (its compute-ring
//!     form, COUNT 5): `cache=` (the cache-action bits \[27:12\]) instead of
//!     `gcr=`, `int=` two bits, and no `ctxid=`, `cache_policy=`, `execute=`.
//!   - `EVENT_WRITE_EOP`: `event=`, `index=`, `cache=` (or `gcr=`: dw0
//!     bits \[27:12\]), `dst=`, `int=` (two bits), `data_sel=`, `addr=`,
//!     `data=`, as RELEASE_MEM takes them.
//!   - `EVENT_WRITE`: `event=`, `index=` [0], `addr=` (adds the two address
//!     dwords).
//!   - `INDIRECT_BUFFER` / `INDIRECT_BUFFER_CONST`: `addr=`, `size=`
//!     (dwords), `chain=`, `valid=` [0], `pre_ena=`, `vmid=`.
//!   - `COPY_DATA`: `src_sel=reg|mem|tc_l2|gds|perf|imm|gpu_clock|
//!     system_clock` [mem], `dst_sel=reg|memory_sync|tc_l2|gds|perf|mem`
//!     [mem], `src=`, `dst=`, `count_sel=32|64`, `wr_confirm=`, `engine=`.
//!   - `DMA_DATA`: `src=` or `data=` (fill), `dst=`, `size=` (bytes),
//!     `src_sel=addr|gds|data|addr_l2`, `dst_sel=addr|gds|nowhere|addr_l2`,
//!     `engine=me|pfp`, `cp_sync=`, `sas= das= saic= daic= raw_wait=
//!     dis_wc=`, `src_cache_policy=`, `dst_cache_policy=`; the COMMAND
//!     word is the family's (`size=` up to 2^26 − 1 on gfx10.3, 2^21 − 1
//!     on gfx7, which also takes `src_swap=` and `dst_swap=`).
//!   - `ACQUIRE_MEM`: `cntl=`, `engine=pfp|me`, `size=` (COHER_SIZE, 56 bits) [0xffffff_ffffffff, as Mesa writes it],
//!     `base=` [0], `poll=` [10], `gcr=` (gfx10.3 only: gfx7's form has no GCR_CNTL).
//!   - `DISPATCH_DIRECT`: `x= y= z=` [1], `initiator=` [1];
//!     `DRAW_INDEX_AUTO`: `count=`, `initiator=` [2].
//!
//!   A statement uses either fields or raw dwords, not both.
//!
//! # Macros
//!
//! | macro | packets |
//! |---|---|
//! | `set_program STAGE, ADDR` | `SET_SH_REG SPI_SHADER_PGM_LO_<STAGE>` (COMPUTE_PGM_LO for `cs`), `pgm_lo(ADDR), pgm_hi(ADDR)` |
//! | `set_user_data STAGE, N, v, ...` | `SET_SH_REG` of SPI_SHADER_USER_DATA_<STAGE>_N (COMPUTE_USER_DATA_N) |
//! | `write_wait ADDR, VALUE` | `WRITE_DATA dst=mem wr_confirm=1 addr=ADDR data=VALUE` then `WAIT_REG_MEM function=eq addr=ADDR ref=VALUE` |
//! | `fence ADDR, VALUE` | `RELEASE_MEM event=BOTTOM_OF_PIPE_TS index=5 data_sel=data32 addr=ADDR data=VALUE` (on gfx7 `EVENT_WRITE_EOP` with the same fields) |
//! | `ib ADDR, DWORDS` / `chain ADDR, DWORDS` | `INDIRECT_BUFFER addr=ADDR size=DWORDS valid=1` (`chain=1`) |
//! | `dispatch X, Y, Z` | `DISPATCH_DIRECT compute X, Y, Z, 1` |
//! | `draw COUNT` | `DRAW_INDEX_AUTO COUNT, 2` |
//!
//! STAGE is `ps`, `vs`, `gs`, `es`, `hs`, `ls` or `cs`.
//!
//! # Limits
//!
//! The blocks of one source hold at most 64 MiB in total (use `.zero` for
//! large zero-filled regions), one expression has at most 256 operators,
//! and a type-3 body at most 16383 dwords (more needs `hdr_count=`).
//!
//! # Example
//!
//! The manual, `docs/asm.md`, has more examples (each assembled and
//! replayed by `tests/asm_manual.rs`). This one writes a label and waits
//! for it on the same queue, then calls an indirect buffer that waits for
//! it again: the wait comes after the write that ends it, so the replay
//! completes.
//!
//! ```
//! use pm4core::asm::assemble;
//! use pm4core::replay::{replay, ReplayOptions};
//! use pm4core::trace::Trace;
//!
//! let source = r#"
//! .info gpu=gfx10.3
//! .zero 0x2000, 0x100
//! fence = 0x2000
//! main: .mem 0x1000
//!     SET_SH_REG SPI_SHADER_PGM_LO_PS, 0x100, 0x0
//!     write_wait fence, 1
//!     ib sub, dwords(sub)
//! sub:
//!     WAIT_REG_MEM function=eq mem=1 addr=fence ref=1 mask=0xffffffff poll=10
//!     NOP
//! .end
//! .submit gfx main, dwords(main, sub)
//! "#;
//! let trace = Trace::from_bytes(assemble(source)?).expect("a valid trace");
//! assert_eq!(trace.submissions().next(), Some((0, 0x1000, 20)));
//! let outcome = replay(&trace, &ReplayOptions::default());
//! assert!(outcome.succeeded(), "{:?}", outcome.summary.errors);
//! // SET_SH_REG, WRITE_DATA, WAIT_REG_MEM, INDIRECT_BUFFER, then the
//! // buffer's WAIT_REG_MEM and NOP.
//! assert_eq!(outcome.summary.packets.total, 6);
//! # Ok::<(), pm4core::asm::AsmError>(())
//! ```

mod build;
mod encode;
mod error;
mod expr;
pub(crate) mod lex;
pub(crate) mod names;
mod parse;

pub use error::{AsmError, AsmErrorKind};

/// Assembles `source` into the bytes of a trace file.
pub fn assemble(source: &str) -> Result<Vec<u8>, AsmError> {
    let lines = parse::parse(source)?;
    let layout = build::layout(&lines)?;
    build::emit(&lines, &layout)
}

/// Assembles `source` and parses the result as a [`crate::trace::Trace`].
pub fn assemble_trace(source: &str) -> Result<crate::trace::Trace, AsmError> {
    let bytes = assemble(source)?;
    crate::trace::Trace::from_bytes(bytes).map_err(|e| AsmError::new(0, 0, AsmErrorKind::TraceDoesNotParse(e)))
}

/// Encodes one packet statement that names no labels or constants (`$` is
/// 0), as it would assemble inside a `.mem` block of a `family` source:
/// the disassembler checks its `--source` statements with it.
pub(crate) fn encode_statement(family: crate::regs::db::GpuFamily, text: &str) -> Result<Vec<u32>, AsmError> {
    let chars: Vec<char> = text.chars().collect();
    let line = parse::parse_line(&chars, 1)?;
    match line.and_then(|l| l.stmt) {
        Some(parse::Stmt::Data(parse::Data::Op { mnemonic, items })) => {
            let symbols = expr::Symbols::default();
            let ev = expr::Eval { symbols: &symbols, family, here: Some(0), lenient: false, line: 1 };
            encode::encode(&mnemonic, &items, &ev, 1)
        }
        _ => Err(AsmError::new(1, 1, AsmErrorKind::ExpectedStatement)),
    }
}
