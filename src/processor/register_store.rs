//! The register stores: every way a packet writes registers, and what a
//! write marks.
//!
//! A register write stores the value in the queue's [`RegisterFile`]
//! (UCONFIG values in the GPU-wide [`GlobalState`] too) and marks the
//! [`state_group`]s the register belongs to, so that the next draw reports
//! what changed. The marks are compile-time tables (context 0xA000..0xA3FF,
//! SH 0x2C00..0x2FFF, UCONFIG 0xC000..0xFFFF): a register outside them
//! marks nothing. No register write does more than store and mark.
//!
//! Three stores, one effect:
//! - [`write_register`]: one register (handlers that name registers);
//! - [`write_run`]: a run of registers in one space (SET_*_REG's handler,
//!   LOAD_*_REG, type-0 packets): the run's marks are one or two lookups in
//!   a sparse table of ORs, whatever its length;
//! - [`store_register_run`] / [`store_uconfig`]: the view loop's inline
//!   store of a SET_*_REG run of 1 to 8 values within one span of equal
//!   marks and one allocated register page (one compare against the
//!   register's limit, [`RunSpans`]); anything else is left, unchanged,
//!   to the packet's handler, which stores it with [`write_run`].
//!   `tests/fast_path.rs` checks that the two give the same registers,
//!   marks and counts.
//!
//! CLEAR_STATE's image is cut into one piece per register page at compile
//! time ([`CLEAR_STATE_PIECES`]), with the OR of its registers' marks.
//!
//! [`RegisterFile`]: crate::regs::RegisterFile
//! [`GlobalState`]: crate::processor::GlobalState

use crate::processor::{state_group, ProcessorState};
use crate::regs::gfx103 as r;
use crate::regs::space;

/// Marks `count` registers from `first` (absolute index), `stride` apart,
/// with `groups`, in a table whose first entry is register `base`.
const fn bind<const N: usize>(
    mut t: [u32; N],
    base: u32,
    first: u32,
    count: u32,
    stride: u32,
    groups: u32,
) -> [u32; N] {
    let mut i = 0;
    while i < count {
        let index = (first + i * stride - base) as usize;
        if index < N {
            t[index] = groups;
        }
        i += 1;
    }
    t
}

/// A space's marks: the [`state_group`] bits a write of each register
/// marks (0: none).
type RegisterMarks<const N: usize> = [u32; N];

const fn context_marks() -> RegisterMarks<{ space::CONTEXT_SIZE as usize }> {
    let b = space::CONTEXT;
    let mut t = [0u32; space::CONTEXT_SIZE as usize];
    // 16 viewports: 6 transform registers each, then the Z min/max pairs.
    t = bind(t, b, r::PA_CL_VPORT_XSCALE, 16 * 6, 1, state_group::VIEWPORT);
    t = bind(t, b, r::PA_SC_VPORT_ZMIN_0, 16 * 2, 1, state_group::VIEWPORT);
    // 16 viewport scissors (TL/BR) plus the screen, window and generic ones.
    t = bind(t, b, r::PA_SC_VPORT_SCISSOR_0_TL, 16 * 2, 1, state_group::SCISSOR);
    t = bind(t, b, r::PA_SC_SCREEN_SCISSOR_TL, 2, 1, state_group::SCISSOR);
    t = bind(t, b, r::PA_SC_GENERIC_SCISSOR_TL, 2, 1, state_group::SCISSOR);
    t = bind(t, b, r::PA_SC_WINDOW_OFFSET, 1, 1, state_group::SCISSOR);
    // 8 colour targets: 15 registers each, plus the gfx10 extension ranges.
    t = bind(t, b, r::CB_COLOR0_BASE, 8 * 15, 1, state_group::RENDER_TARGETS);
    t = bind(t, b, r::CB_COLOR0_BASE_EXT, 8 * 6, 1, state_group::RENDER_TARGETS);
    t = bind(t, b, r::CB_COLOR0_ATTRIB2, 8 * 2, 1, state_group::RENDER_TARGETS);
    // Depth/stencil surface.
    t = bind(t, b, r::DB_DEPTH_SIZE_XY, 1, 1, state_group::DEPTH);
    t = bind(t, b, r::DB_Z_INFO, 8, 1, state_group::DEPTH);
    t = bind(t, b, r::DB_Z_READ_BASE_HI, 5, 1, state_group::DEPTH);
    t = bind(t, b, r::DB_DEPTH_CLEAR, 1, 1, state_group::DEPTH);
    // Which stages run decides which programs a draw binds.
    t = bind(t, b, r::VGT_SHADER_STAGES_EN, 1, 1, state_group::PROGRAMS);
    t = bind(t, b, r::VGT_DMA_INDEX_TYPE, 1, 1, state_group::INDEX);
    t = bind(t, b, r::VGT_STRMOUT_BUFFER_SIZE_0, 16, 1, state_group::STREAMOUT);
    t
}

const fn sh_marks() -> RegisterMarks<{ space::SH_SIZE as usize }> {
    let b = space::SH;
    let mut t = [0u32; space::SH_SIZE as usize];
    // Program address LO/HI pairs of every graphics slot.
    t = bind(t, b, r::SPI_SHADER_PGM_LO_PS, 2, 1, state_group::PROGRAMS);
    t = bind(t, b, r::SPI_SHADER_PGM_LO_VS, 2, 1, state_group::PROGRAMS);
    t = bind(t, b, r::SPI_SHADER_PGM_LO_ES_GS, 2, 1, state_group::PROGRAMS);
    t = bind(t, b, r::SPI_SHADER_PGM_LO_GS, 2, 1, state_group::PROGRAMS);
    t = bind(t, b, r::SPI_SHADER_PGM_LO_ES, 2, 1, state_group::PROGRAMS);
    t = bind(t, b, r::SPI_SHADER_PGM_LO_LS_HS, 2, 1, state_group::PROGRAMS);
    t = bind(t, b, r::SPI_SHADER_PGM_LO_HS, 2, 1, state_group::PROGRAMS);
    t = bind(t, b, r::SPI_SHADER_PGM_LO_LS, 2, 1, state_group::PROGRAMS);
    t = bind(t, b, r::COMPUTE_PGM_LO, 2, 1, state_group::COMPUTE_PROGRAM);
    // User data: 32 per graphics stage, 16 for compute.
    t = bind(t, b, r::SPI_SHADER_USER_DATA_PS_0, 32, 1, state_group::USER_DATA);
    t = bind(t, b, r::SPI_SHADER_USER_DATA_VS_0, 32, 1, state_group::USER_DATA);
    t = bind(t, b, r::SPI_SHADER_USER_DATA_GS_0, 32, 1, state_group::USER_DATA);
    t = bind(t, b, r::SPI_SHADER_USER_DATA_HS_0, 32, 1, state_group::USER_DATA);
    t = bind(t, b, r::COMPUTE_USER_DATA_0, 16, 1, state_group::USER_DATA);
    t
}

const fn uconfig_marks() -> RegisterMarks<{ space::UCONFIG_SIZE as usize }> {
    let b = space::UCONFIG;
    let mut t = [0u32; space::UCONFIG_SIZE as usize];
    t = bind(t, b, r::VGT_PRIMITIVE_TYPE, 1, 1, state_group::PRIMITIVE);
    t = bind(t, b, r::VGT_INDEX_TYPE, 1, 1, state_group::INDEX);
    t = bind(t, b, r::VGT_NUM_INSTANCES, 1, 1, state_group::INSTANCES);
    t
}

static CONTEXT_MARKS: RegisterMarks<{ space::CONTEXT_SIZE as usize }> = context_marks();
static SH_MARKS: RegisterMarks<{ space::SH_SIZE as usize }> = sh_marks();
static UCONFIG_MARKS: RegisterMarks<{ space::UCONFIG_SIZE as usize }> = uconfig_marks();

/// What writing `register` (absolute) marks; 0 outside the three tables.
#[inline]
pub(crate) fn register_marks(register: u32) -> u32 {
    let marks = match register {
        0x2C00..=0x2FFF => SH_MARKS.get((register - space::SH) as usize),
        0xA000..=0xA3FF => CONTEXT_MARKS.get((register - space::CONTEXT) as usize),
        0xC000..=0xFFFF => UCONFIG_MARKS.get((register - space::UCONFIG) as usize),
        _ => None,
    };
    marks.copied().unwrap_or(0)
}

/// What writing `register` (absolute) marks, at compile time (for the
/// registers handlers write by name).
const fn marks_of(register: u32) -> u32 {
    match register {
        0x2C00..=0x2FFF => sh_marks()[(register - space::SH) as usize],
        0xA000..=0xA3FF => context_marks()[(register - space::CONTEXT) as usize],
        0xC000..=0xFFFF => uconfig_marks()[(register - space::UCONFIG) as usize],
        _ => 0,
    }
}

/// Levels of a [`RangeMarks`] table: runs of up to 2^10 = 1024 registers.
const RANGE_LEVELS: usize = 11;

/// A [`RegisterMarks`] table as a sparse table for range ORs: level `k`,
/// entry `i` is the OR of the marks of registers `i..i + 2^k` (clamped to
/// the table), so any run's OR is the OR of two entries, with no loop.
type RangeMarks<const N: usize> = [[u32; N]; RANGE_LEVELS];

const fn range_marks_of<const N: usize>(marks: &RegisterMarks<N>) -> RangeMarks<N> {
    let mut t = [[0u32; N]; RANGE_LEVELS];
    t[0] = *marks;
    let mut k = 1;
    while k < RANGE_LEVELS {
        let half = 1usize << (k - 1);
        let mut i = 0;
        while i < N {
            t[k][i] = if i + half < N { t[k - 1][i] | t[k - 1][i + half] } else { t[k - 1][i] };
            i += 1;
        }
        k += 1;
    }
    t
}

/// The OR of `table`'s marks `start..start + count` (`None` past the table).
#[inline]
fn range_or<const N: usize>(table: &RangeMarks<N>, start: usize, count: usize) -> Option<u32> {
    if count == 0 {
        return Some(0);
    }
    let level = (usize::BITS - 1 - count.leading_zeros()) as usize;
    let level_table = table.get(level)?;
    let left = level_table.get(start)?;
    let right = level_table.get(start + count - (1 << level))?;
    Some(left | right)
}

/// For each register of a [`RegisterMarks`] table, the last register of
/// the run of equal marks it starts: a register run inside it has those
/// marks as its OR (most runs: user data, a viewport, a render target).
const fn spans_of<const N: usize>(marks: &RegisterMarks<N>) -> [u16; N] {
    let mut spans = [0u16; N];
    let mut i = N;
    while i > 0 {
        i -= 1;
        spans[i] = if i + 1 < N && marks[i + 1] == marks[i] { spans[i + 1] } else { i as u16 };
    }
    spans
}

/// The OR of the marks of `count` registers from `start` of a table: one
/// lookup when the run lies in one span of equal marks, two in the sparse
/// table otherwise.
#[inline]
fn run_marks<const N: usize>(ranges: &RangeMarks<N>, spans: &[u16; N], start: usize, count: usize) -> Option<u32> {
    match (ranges.first().and_then(|marks| marks.get(start)), spans.get(start)) {
        (Some(&marks), Some(&span)) if start + count <= usize::from(span) + 1 => Some(marks),
        _ => range_or(ranges, start, count),
    }
}

static CONTEXT_RANGE_MARKS: RangeMarks<{ space::CONTEXT_SIZE as usize }> = range_marks_of(&context_marks());
static SH_RANGE_MARKS: RangeMarks<{ space::SH_SIZE as usize }> = range_marks_of(&sh_marks());
static CONTEXT_MARK_SPANS: [u16; space::CONTEXT_SIZE as usize] = spans_of(&context_marks());
static SH_MARK_SPANS: [u16; space::SH_SIZE as usize] = spans_of(&sh_marks());

/// The OR of the marks of `count` consecutive registers from `first`
/// (absolute), clamped to the space `first` is in; 0 outside the three
/// tables.
#[inline]
fn register_run_marks(first: u32, count: usize) -> u32 {
    let clamp = |start: usize, size: u32| count.min((size as usize).saturating_sub(start));
    let marks = match first {
        0x2C00..=0x2FFF => {
            let start = (first - space::SH) as usize;
            run_marks(&SH_RANGE_MARKS, &SH_MARK_SPANS, start, clamp(start, space::SH_SIZE))
        }
        0xA000..=0xA3FF => {
            let start = (first - space::CONTEXT) as usize;
            run_marks(&CONTEXT_RANGE_MARKS, &CONTEXT_MARK_SPANS, start, clamp(start, space::CONTEXT_SIZE))
        }
        // Three UCONFIG registers mark anything: runs there are short.
        0xC000..=0xFFFF => {
            let start = (first - space::UCONFIG) as usize;
            let end = start.saturating_add(count).min(UCONFIG_MARKS.len());
            Some(UCONFIG_MARKS.get(start..end).unwrap_or(&[]).iter().fold(0, |acc, m| acc | m))
        }
        _ => None,
    };
    marks.unwrap_or(0)
}

/// Most values one packet of the view loop's inline store stores
/// ([`store_register_run`]).
const RUN_MAX_VALUES: u32 = 8;

/// A space's marks and how far an inline store may reach, in one word per
/// register: the low half is the register's marks, the high half the most
/// values a register writer starting at that register may store inline.
/// That is at most [`RUN_MAX_VALUES`] (`max_values` for a space stored
/// one value at a time), never past the run of equal marks the register
/// is in (so the packet's marks are its first register's) or its
/// 256-register page (so the store is one slice of one page). A packet of
/// `n` values fits when `n - 1 < limit`: one compare.
pub(crate) type RunSpans<const N: usize> = [u64; N];

const fn run_spans_of<const N: usize>(marks: &RegisterMarks<N>, max_values: u32) -> RunSpans<N> {
    let spans = spans_of(marks);
    let mut t = [0u64; N];
    let mut i = 0;
    while i < N {
        // Every space starts on a page boundary (0x2C00, 0xA000, 0xC000).
        let to_span_end = spans[i] as u32 + 1 - i as u32;
        let to_page_end = (crate::regs::REGISTER_PAGE - i % crate::regs::REGISTER_PAGE) as u32;
        let mut limit = max_values;
        if to_span_end < limit {
            limit = to_span_end;
        }
        if to_page_end < limit {
            limit = to_page_end;
        }
        t[i] = (limit as u64) << 32 | marks[i] as u64;
        i += 1;
    }
    t
}

/// The SH space's [`RunSpans`].
pub(crate) static SH_RUN_SPANS: RunSpans<{ space::SH_SIZE as usize }> = run_spans_of(&sh_marks(), RUN_MAX_VALUES);
/// The context space's [`RunSpans`].
pub(crate) static CONTEXT_RUN_SPANS: RunSpans<{ space::CONTEXT_SIZE as usize }> =
    run_spans_of(&context_marks(), RUN_MAX_VALUES);
/// UCONFIG registers are GPU-wide: the inline store stores one value.
static UCONFIG_RUN_SPANS: RunSpans<{ space::UCONFIG_SIZE as usize }> = run_spans_of(&uconfig_marks(), 1);

#[cold]
#[inline(never)]
fn outside_register_file(state: &ProcessorState, register: u32) {
    tracing::warn!(queue = %state.queue, "register write to {register:#x} is outside the register file");
}

#[cold]
fn run_leaves_space(state: &ProcessorState, first: u32, written: usize, total: usize) {
    tracing::warn!(queue = %state.queue, "register run from {first:#x} leaves its space after {written} of {total} values");
}

/// Stores a register value and marks what the register's write marks.
/// Indices past the register file are dropped (and logged).
#[inline]
pub(crate) fn write_register(state: &mut ProcessorState, register: u32, value: u32) {
    if !state.regs.set(register, value) {
        outside_register_file(state, register);
        return;
    }
    if register >= space::UCONFIG {
        state.global.set_uconfig(register, value);
    }
    state.dirty |= register_marks(register);
}

/// [`write_register`] for a register named at compile time: its marks are
/// a constant, no table lookup.
#[inline]
pub(crate) fn write_named_register<const REGISTER: u32>(state: &mut ProcessorState, value: u32) {
    if !state.regs.set(REGISTER, value) {
        outside_register_file(state, REGISTER);
        return;
    }
    if REGISTER >= space::UCONFIG {
        // UCONFIG registers are GPU-wide.
        state.global.set_uconfig(REGISTER, value);
    }
    state.dirty |= const { marks_of(REGISTER) };
}

/// Reads a register as a packet sees it: UCONFIG registers are GPU-wide
/// (another queue may have written them), everything else is this queue's.
/// The value read is kept in this queue's register file too.
#[inline]
pub(crate) fn read_register(state: &mut ProcessorState, register: u32) -> u32 {
    if (space::UCONFIG..space::END).contains(&register) {
        let value = state.global.uconfig(register);
        if state.regs.get(register) != value {
            state.regs.set(register, value);
        }
        value
    } else {
        state.regs.get(register)
    }
}

/// Writes `values` to consecutive registers of the space that starts at
/// `base` (`size` registers) from `offset`; values that would run past the
/// space's end are dropped and logged.
#[inline]
pub(crate) fn write_run(state: &mut ProcessorState, base: u32, size: u32, offset: u32, values: &[u32]) {
    let available = size.saturating_sub(offset) as usize;
    let values = if values.len() > available {
        run_leaves_space(state, base + offset, available, values.len());
        values.get(..available).unwrap_or(&[])
    } else {
        values
    };
    let first = base + offset;
    let marks = register_run_marks(first, values.len());
    let mut done = 0usize;
    while let Some(rest) = values.get(done..).filter(|r| !r.is_empty()) {
        let slots = state.regs.range_mut(first + done as u32, rest.len() as u32);
        let n = slots.len();
        match rest.get(..n) {
            Some(chunk) if n > 0 => {
                if !store_up_to_8(slots, chunk) {
                    slots.copy_from_slice(chunk);
                }
            }
            _ => break,
        }
        done += n;
    }
    state.dirty |= marks;
    if first >= space::UCONFIG {
        // UCONFIG registers are GPU-wide: the run goes to the shared file too.
        for (i, value) in values.get(..done).unwrap_or(&[]).iter().enumerate() {
            state.global.set_uconfig(first + i as u32, *value);
        }
    }
}

/// The view loop's inline store: the register writer at `at` in `words`
/// (a view of the window; header count `count`, not 0x3FFF),
/// writing the space at `base` whose run table is `spans`, when it is 1 to
/// 8 values in one span of equal marks and one register page (one compare
/// against the register's limit, see [`RunSpans`]), into an allocated page:
/// stores the values, marks the state groups and returns the packet's
/// length. Anything else (a packet the view does not hold whole, no body,
/// more values, an unallocated page) returns `None` having changed
/// nothing, for the packet's handler ([`write_run`]). Never a UCONFIG
/// writer: those are GPU-wide ([`store_uconfig`]). Inlined where the
/// space is a constant, its checks fold with it.
#[inline(always)]
pub(crate) fn store_register_run(
    words: &[u32],
    at: usize,
    count: usize,
    base: u32,
    spans: &[u64],
    state: &mut ProcessorState,
) -> Option<usize> {
    // The body: the register offset, then `count` values.
    let length = count + 2;
    let (first, values) = words.get(at + 1..at + length)?.split_first()?;
    let offset = (first & 0xFFFF) as usize;
    let span = *spans.get(offset)?;
    let n = values.len();
    if (n as u32).wrapping_sub(1) >= (span >> 32) as u32 {
        return None;
    }
    let slots = state.regs.allocated_range_mut(base + offset as u32, n as u32)?;
    if !store_up_to_8(slots, values) {
        return None;
    }
    state.dirty |= span as u32;
    Some(length)
}

/// [`store_register_run`] for SET_UCONFIG_REG and its _INDEX form: one
/// value, stored in the GPU-wide file's allocated page and then in the
/// queue's own copy (`None`, having changed nothing, for anything else).
#[inline(always)]
pub(crate) fn store_uconfig(words: &[u32], at: usize, count: usize, state: &mut ProcessorState) -> Option<usize> {
    let [first, value] = *words.get(at + 1..at + 3)?.first_chunk::<2>()?;
    if count != 1 {
        return None;
    }
    let offset = first & 0xFFFF;
    let span = *UCONFIG_RUN_SPANS.get(offset as usize)?;
    let register = space::UCONFIG + offset;
    let slot = state.regs.allocated_range_mut(register, 1)?.first_mut()?;
    if !state.global.set_uconfig_allocated(register, value) {
        return None;
    }
    *slot = value;
    state.dirty |= span as u32;
    Some(3)
}

/// Copies 1 to 8 values into as many slots without a loop or a call
/// (false, copying nothing, for any other length): two stores that may
/// overlap (the first and last one, two or four values), so a mix of
/// lengths costs two branches, not an indirect jump per length.
#[inline(always)]
fn store_up_to_8(slots: &mut [u32], values: &[u32]) -> bool {
    fn two<const K: usize>(slots: &mut [u32], values: &[u32]) -> bool {
        match (slots.first_chunk_mut::<K>(), values.first_chunk::<K>()) {
            (Some(s), Some(v)) => *s = *v,
            _ => return false,
        }
        match (slots.last_chunk_mut::<K>(), values.last_chunk::<K>()) {
            (Some(s), Some(v)) => *s = *v,
            _ => return false,
        }
        true
    }
    if slots.len() != values.len() {
        return false;
    }
    match values.len() {
        1..=2 => two::<1>(slots, values),
        3..=4 => two::<2>(slots, values),
        5..=8 => two::<4>(slots, values),
        _ => false,
    }
}

/// What CLEAR_STATE stores, built at compile time from
/// `regs::generated::clear_state::EXTENTS`: each extent cut at the
/// register file's pages, so that every piece is one slice of one page
/// (`(offset from 0xA000, count)`), and the state groups the extents'
/// registers mark. Storing the pieces and marking the groups is the whole
/// of writing the extents one register run at a time.
pub(crate) struct ClearStatePieces {
    pieces: [(u32, u32); 32],
    count: usize,
    /// The [`state_group`] bits the extents' registers mark.
    pub(crate) marks: u32,
}

impl ClearStatePieces {
    /// The pieces, in the extents' order.
    pub(crate) fn pieces(&self) -> &[(u32, u32)] {
        self.pieces.get(..self.count).unwrap_or(&[])
    }
}

/// CLEAR_STATE's pieces and marks (see [`ClearStatePieces`]).
pub(crate) static CLEAR_STATE_PIECES: ClearStatePieces = clear_state_pieces();

const fn clear_state_pieces() -> ClearStatePieces {
    use crate::regs::generated::clear_state::EXTENTS;
    use crate::regs::REGISTER_PAGE;
    let marks = context_marks();
    let mut out = ClearStatePieces { pieces: [(0, 0); 32], count: 0, marks: 0 };
    // The context space starts on a page: a cut relative to it is a cut of
    // the file.
    assert!(space::CONTEXT as usize % REGISTER_PAGE == 0);
    let mut e = 0;
    while e < EXTENTS.len() {
        let (first, count) = EXTENTS[e];
        let mut offset = (first - space::CONTEXT) as usize;
        let end = offset + count as usize;
        assert!(end <= space::CONTEXT_SIZE as usize);
        while offset < end {
            let page_end = (offset / REGISTER_PAGE + 1) * REGISTER_PAGE;
            let piece_end = if end < page_end { end } else { page_end };
            out.pieces[out.count] = (offset as u32, (piece_end - offset) as u32);
            out.count += 1;
            while offset < piece_end {
                out.marks |= marks[offset];
                offset += 1;
            }
        }
        e += 1;
    }
    out
}
