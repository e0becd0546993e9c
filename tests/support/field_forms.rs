//! The opcodes the assembler has a key=value statement form for: `pm4
//! disasm --source` writes these packets as named fields.

/// Their mnemonics.
pub const FIELD_FORMS: [&str; 13] = [
    "WAIT_REG_MEM",
    "WAIT_REG_MEM64",
    "WRITE_DATA",
    "RELEASE_MEM",
    "EVENT_WRITE_EOP",
    "EVENT_WRITE",
    "INDIRECT_BUFFER",
    "INDIRECT_BUFFER_CONST",
    "COPY_DATA",
    "DMA_DATA",
    "ACQUIRE_MEM",
    "DISPATCH_DIRECT",
    "DRAW_INDEX_AUTO",
];
