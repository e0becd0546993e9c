//! The assembler's diagnostics: where ([`AsmError`]) and what
//! ([`AsmErrorKind`], one variant per mistake with the values it names).

use crate::packet::Opcode;
use crate::regs::db::{GpuFamily, ParseGpuFamilyError, RegisterSpace};
use crate::trace::TraceError;

/// An assembly error: where (1-based line and column, in characters) and
/// what ([`AsmErrorKind`]). `Display` writes `line L, column C: ` and the
/// kind's sentence.
///
/// ```
/// use pm4core::asm::{assemble, AsmErrorKind};
///
/// let e = assemble(".mem 0x1000\n    .dw missing\n.end\n").unwrap_err();
/// assert_eq!((e.line, e.column), (2, 9));
/// assert_eq!(e.kind, AsmErrorKind::UndefinedName("missing".into()));
/// assert_eq!(e.to_string(), "line 2, column 9: undefined name `missing`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {kind}")]
pub struct AsmError {
    /// Line number, from 1 (0 when the error is about the whole result).
    pub line: usize,
    /// Column, from 1, in characters.
    pub column: usize,
    /// What is wrong.
    pub kind: AsmErrorKind,
}

impl AsmError {
    pub(crate) fn new(line: usize, column: usize, kind: AsmErrorKind) -> AsmError {
        AsmError { line, column, kind }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// What an assembly error is about. `Display` writes the sentence the CLI
/// and `--json` show.
///
/// ```
/// use pm4core::asm::AsmErrorKind;
///
/// let k = AsmErrorKind::FieldTooWide { field: "poll".into(), value: 0x10000, bits: 16 };
/// assert_eq!(k.to_string(), "poll=0x10000 does not fit in 16 bits");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AsmErrorKind {
    // Lexing.
    /// A character no token starts with.
    #[error("unexpected character {0:?}")]
    UnexpectedCharacter(char),
    /// A malformed number literal (its text).
    #[error("bad number {0:?}")]
    BadNumber(String),
    /// A string without its closing quote.
    #[error("unterminated string")]
    UnterminatedString,
    /// `\x` not followed by two hex digits.
    #[error("\\x needs two hex digits")]
    HexEscapeDigits,
    /// An escape the strings do not know.
    #[error("unknown escape \\{0}")]
    UnknownEscape(char),

    // Parsing.
    /// A label name that is not an identifier.
    #[error("`{0}` is not a valid label name")]
    InvalidLabel(String),
    /// A line that starts with nothing the assembler knows.
    #[error("expected a directive, a packet or a label")]
    ExpectedStatement,
    /// Tokens after a complete statement.
    #[error("unexpected text after the statement")]
    TextAfterStatement,
    /// Text after a quoted `.info`/`.note` string.
    #[error("unexpected text after the string")]
    TextAfterString,
    /// A directive given the wrong number of operands.
    #[error("{directive} takes {count} operand{}", plural(*.count))]
    OperandCount {
        /// The directive.
        directive: String,
        /// How many it takes.
        count: usize,
    },
    /// A directive that takes a quoted string.
    #[error("{directive} takes a string")]
    ExpectedString {
        /// The directive.
        directive: String,
    },
    /// `.gpu` without a family name.
    #[error(".gpu takes gfx10.3 or gfx7")]
    GpuExpected,
    /// `.gpu` with an unknown family.
    #[error("{0}")]
    UnknownGpu(ParseGpuFamilyError),
    /// `.equ`/`.set` without a name.
    #[error("{directive} takes a name and a value")]
    NameAndValue {
        /// The directive.
        directive: String,
    },
    /// `.mem` with more than an address.
    #[error(".mem takes at most one operand (the address)")]
    MemOperands,
    /// An `.ancillary` tag that is not four bytes.
    #[error("an ancillary tag is four characters")]
    AncillaryTag,
    /// `.zero` without its address and length.
    #[error(".zero takes an address and a length")]
    ZeroOperands,
    /// `.shader` with the wrong operands.
    #[error(".shader takes a header address, a code address and `relocated`")]
    ShaderOperands,
    /// `.fill` with the wrong operands.
    #[error(".fill takes a dword count and an optional value")]
    FillOperands,
    /// `.submit` with the wrong operands.
    #[error(".submit takes a queue, an address and a size in dwords")]
    SubmitOperands,
    /// A directive name the assembler does not know.
    #[error("unknown directive `{0}`")]
    UnknownDirective(String),
    /// A directive's operand is missing.
    #[error("missing operand")]
    MissingOperand,
    /// `.info` without `=`.
    #[error(".info takes key=value")]
    InfoForm,
    /// `.info =value`.
    #[error(".info needs a key before `=`")]
    InfoKey,
    /// `.info "key"` without a quoted value.
    #[error(".info \"key\" needs a quoted value")]
    InfoQuotedValue,
    /// A quoted string's bytes that are not UTF-8 where text is needed.
    #[error("text is not valid UTF-8")]
    NotUtf8,

    // Expressions.
    /// An expression with too many operators.
    #[error("expression has more than {max} operators")]
    TooManyOperators {
        /// The limit.
        max: usize,
    },
    /// Parentheses or unary operators nested too deeply.
    #[error("expression nested too deeply")]
    NestedTooDeeply,
    /// Constants referring to each other too deeply (or in a circle).
    #[error("expression nested too deeply (or a recursive definition)")]
    RecursiveDefinition,
    /// The end of the line where a value was expected.
    #[error("expected a value")]
    ExpectedValue,
    /// Punctuation where a value was expected.
    #[error("expected a value, found `{0}`")]
    ExpectedValueFound(&'static str),
    /// A missing closing parenthesis.
    #[error("expected `)`")]
    ExpectedCloseParen,
    /// A function call's arguments not separated or closed.
    #[error("expected `,` or `)`")]
    ExpectedCommaOrCloseParen,
    /// A string used as a number.
    #[error("a string is not a value here")]
    StringNotValue,
    /// A dword operand of more than 32 bits.
    #[error("value {0:#x} does not fit in 32 bits")]
    DwordOverflow(u64),
    /// A `.db` operand of more than 8 bits.
    #[error("value {0:#x} does not fit in a byte")]
    ByteOverflow(u64),
    /// `$` outside a block.
    #[error("`$` is only defined inside a .mem or .write block")]
    DollarOutsideBlock,
    /// `/` or `%` by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// A name that is no label, constant or register.
    #[error("undefined name `{0}`")]
    UndefinedName(String),
    /// A name that is no label, constant or register, but near a register
    /// name (a slip of a character or two).
    #[error("undefined name `{name}` (no label, constant or register; did you mean the register {register}?)")]
    UndefinedNameNearRegister {
        /// The name as written.
        name: String,
        /// The nearest register name of the database.
        register: &'static str,
    },
    /// `sizeof`/`dwords` of something that has no size.
    #[error("sizeof/dwords take a label of a .mem region, a .zero or a label inside one")]
    NoSize,
    /// A function given the wrong number of arguments.
    #[error("{function}() takes {count} argument{}", plural(*.count))]
    FunctionArity {
        /// The function.
        function: String,
        /// How many it takes.
        count: usize,
    },
    /// A function call missing an argument.
    #[error("{function}() is missing an argument")]
    FunctionMissingArgument {
        /// The function.
        function: String,
    },
    /// `dwords(start, end)` with the end below the start.
    #[error("dwords(start, end): end {end:#x} is below start {start:#x}")]
    DwordsEndBelowStart {
        /// The start.
        start: u64,
        /// The end.
        end: u64,
    },
    /// `dwords()` with other than one or two arguments.
    #[error("dwords() takes a label, or a start and an end")]
    DwordsArguments,
    /// A function the assembler does not know.
    #[error("unknown function `{0}()`")]
    UnknownFunction(String),

    // Layout and emission.
    /// A label or constant defined twice.
    #[error("`{0}` is already defined")]
    AlreadyDefined(String),
    /// A directive inside an open block.
    #[error("{directive} cannot appear inside the block opened on line {opened_on} (missing .end?)")]
    InsideBlock {
        /// The directive (or "this directive").
        directive: &'static str,
        /// The line of the open block.
        opened_on: usize,
    },
    /// A label where no address is known.
    #[error("a label must be inside a .mem block or on a .mem/.zero line")]
    LabelOutsideRegion,
    /// `.end` with no block open.
    #[error(".end without an open block")]
    EndWithoutBlock,
    /// Data or a packet outside any block (first pass).
    #[error("data and packets must be inside a .mem, .write or .ancillary block")]
    OutsideBlock,
    /// Data outside any block (second pass).
    #[error("data outside a block")]
    DataOutsideBlock,
    /// The blocks together hold too many bytes.
    #[error("the blocks hold more than {max} bytes")]
    TooManyBytes {
        /// The limit.
        max: u64,
    },
    /// A block never closed.
    #[error("this block has no .end")]
    UnclosedBlock,
    /// `.align` by other than a power of two.
    #[error(".align takes a power of two, not {0}")]
    AlignNotPowerOfTwo(u64),
    /// A `.submit` queue name out of range (`comp7.0`).
    #[error("{0}")]
    BadQueue(crate::backend::ParseQueueError),
    /// A submission's queue beyond 32 bits.
    #[error("queue index out of range")]
    QueueOutOfRange,
    /// `.submit` without a size, of an address that is not a label.
    #[error(".submit needs a size unless the address is a label")]
    SubmitNeedsSize,
    /// A submission of more than 2^32 dwords.
    #[error("submission too large")]
    SubmissionTooLarge,
    /// The trace writer refused a chunk.
    #[error("{0}")]
    Trace(TraceError),
    /// The written bytes do not parse back as a trace.
    #[error("the assembled trace does not parse: {0}")]
    TraceDoesNotParse(TraceError),
    /// A statement's size differs between the passes (a bug).
    #[error("internal error: the statement's size changed between passes")]
    SizeChanged,

    // Packets.
    /// A key given without a value.
    #[error("`{key}` needs a value")]
    KeyNeedsValue {
        /// The key.
        key: String,
    },
    /// A key given several values where it takes one.
    #[error("`{key}` takes one value")]
    KeyTakesOneValue {
        /// The key.
        key: String,
    },
    /// A field's value wider than the field.
    #[error("{field}={value:#x} does not fit in {bits} bits")]
    FieldTooWide {
        /// The field.
        field: String,
        /// The value.
        value: u64,
        /// The field's width.
        bits: u32,
    },
    /// A key given twice.
    #[error("`{key}` is given more than once")]
    KeyTwice {
        /// The key.
        key: String,
    },
    /// A key the packet does not have.
    #[error("{mnemonic} has no field `{key}`")]
    NoSuchField {
        /// The statement's packet or macro.
        mnemonic: String,
        /// The key.
        key: String,
    },
    /// Both key=value fields and raw dwords.
    #[error("{mnemonic}: give either key=value fields or raw dwords, not both")]
    FieldsAndDwords {
        /// The statement's packet.
        mnemonic: String,
    },
    /// A type-3 body longer than the COUNT field can say.
    #[error("a type-3 body holds at most {max} dwords")]
    BodyTooLong {
        /// The limit.
        max: usize,
    },
    /// `PKT3` without an opcode.
    #[error("PKT3 takes an opcode (name or number) and body dwords")]
    Pkt3Operands,
    /// `TYPE0` without a register.
    #[error("TYPE0 takes a register and its values")]
    Type0Operands,
    /// `TYPE0` without values.
    #[error("TYPE0 needs at least one value")]
    Type0Empty,
    /// `TYPE0` with more values than its COUNT can say.
    #[error("a type-0 packet writes at most 16384 registers")]
    Type0TooLong,
    /// `TYPE2` with more than the pad.
    #[error("TYPE2 takes at most one value (the pad bits)")]
    Type2Operands,
    /// A mnemonic that is no packet, opcode or macro.
    #[error("unknown packet or macro `{0}`")]
    UnknownMnemonic(String),
    /// key=value fields for an opcode that has no field form.
    #[error("{0} has no key=value form; give its body as raw dwords")]
    NoFieldForm(String),
    /// A register written by the SET packet of another space.
    #[error("{register} is a {space} register; {opcode} writes {wanted} registers")]
    WrongRegisterSpace {
        /// The register.
        register: String,
        /// Its space.
        space: RegisterSpace,
        /// The packet.
        opcode: Opcode,
        /// The packet's space.
        wanted: RegisterSpace,
    },
    /// Both `addr=` and `reg=`.
    #[error("give either addr= or reg=, not both")]
    AddrAndReg,
    /// `count_sel=` other than 32 or 64.
    #[error("count_sel is 32 or 64")]
    CountSel,
    /// A register name the family's database lacks.
    #[error("the {family} register database has no {name}")]
    UnknownRegister {
        /// The database.
        family: GpuFamily,
        /// The name.
        name: String,
    },
    /// A macro's register outside the SH space.
    #[error("not an SH register")]
    NotShRegister,
    /// A macro without its shader stage.
    #[error("{mnemonic} needs a shader stage")]
    StageMissing {
        /// The macro.
        mnemonic: String,
    },
    /// A shader stage word the macros do not know.
    #[error("expected a shader stage: ps, vs, gs, es, hs, ls or cs")]
    UnknownStage,
    /// A macro missing an operand.
    #[error("{mnemonic} needs {what}")]
    MacroOperandMissing {
        /// The macro.
        mnemonic: String,
        /// The operand.
        what: &'static str,
    },
    /// A macro with too many operands.
    #[error("{mnemonic} takes {count} operands")]
    MacroOperands {
        /// The macro.
        mnemonic: String,
        /// How many it takes.
        count: usize,
    },
    /// `set_user_data` without values.
    #[error("SET_USER_DATA needs at least one value")]
    UserDataEmpty,
}

#[cfg(feature = "serde")]
impl serde::Serialize for AsmErrorKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
