//! [`Pm4Execution`]: everything a queue needs to stop and resume a
//! submission: the cursor into the current buffer, the indirect-buffer
//! stack, predication and why it is suspended. (A COND_EXEC / PRED_EXEC
//! skip moves the cursor at once: the skipped dwords are never parsed.)
//! It is a plain value, never a thread's stack.

use crate::packet::body::{CompareFunction, PollTarget};
use crate::packet::PacketLocation;

/// A position in one command buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Cursor {
    /// GPU address of the buffer's first dword.
    pub buffer: u64,
    /// Buffer size in dwords.
    pub size_dw: u32,
    /// Dword offset of the next packet.
    pub offset_dw: u32,
}

impl Cursor {
    /// A cursor at the start of a buffer.
    pub fn new(buffer: u64, size_dw: u32) -> Self {
        Self { buffer, size_dw, offset_dw: 0 }
    }

    /// Dwords left in the buffer.
    #[inline]
    pub fn remaining_dw(&self) -> u32 {
        self.size_dw.saturating_sub(self.offset_dw)
    }

    /// GPU address of the next packet.
    #[inline]
    pub fn address(&self) -> u64 {
        self.buffer.wrapping_add(u64::from(self.offset_dw) * 4)
    }

    /// The location of the packet at the cursor.
    #[inline]
    pub fn location(&self) -> PacketLocation {
        PacketLocation { buffer: self.buffer, buffer_size_dw: self.size_dw, offset_dw: self.offset_dw }
    }
}

/// Why a processor stopped before the end of its submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuspendReason {
    /// WAIT_REG_MEM / WAIT_REG_MEM64 whose compare is false.
    WaitRegMem {
        target: PollTarget,
        function: CompareFunction,
        reference: u64,
        mask: u64,
        /// The value read at the last check.
        current: u64,
        is_64: bool,
    },
    /// ATOMIC_MEM with COMMAND = loop whose compare has not succeeded.
    AtomicLoop { address: u64, compare: u64, current: u64 },
    /// REWIND whose VALID bit is not set yet (address of its body dword).
    Rewind { address: u64 },
    /// MEM_SEMAPHORE wait on a zero semaphore.
    MemSemaphore { address: u64 },
    /// SET_PREDICATION with HINT = wait on ZPASS data not yet final.
    Predication { address: u64 },
    /// WAIT_ON_CE_COUNTER: the constant engine has not produced yet.
    WaitOnCeCounter { ce: u32, de: u32 },
    /// WAIT_ON_DE_COUNTER_DIFF on the constant engine.
    WaitOnDeCounterDiff { ce: u32, de: u32, diff: u32 },
}

impl SuspendReason {
    /// The guest address whose change may end the wait, if any.
    pub fn watched_address(&self) -> Option<u64> {
        match *self {
            SuspendReason::WaitRegMem { target: PollTarget::Memory(a), .. } => Some(a),
            SuspendReason::AtomicLoop { address, .. }
            | SuspendReason::Rewind { address }
            | SuspendReason::MemSemaphore { address }
            | SuspendReason::Predication { address } => Some(address),
            _ => None,
        }
    }
}

impl std::fmt::Display for SuspendReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            SuspendReason::WaitRegMem { target, function, reference, mask, current, is_64 } => {
                let what = match target {
                    PollTarget::Memory(a) => format!("memory {a:#x}"),
                    PollTarget::Register(r) => format!("register {r:#x}"),
                };
                write!(
                    f,
                    "WAIT_REG_MEM{} on {what}: (value {current:#x} & mask {mask:#x}) {} reference {reference:#x} is false",
                    if is_64 { "64" } else { "" },
                    function.symbol()
                )
            }
            SuspendReason::AtomicLoop { address, compare, current } => {
                write!(f, "ATOMIC_MEM loop at {address:#x}: value {current:#x} != compare {compare:#x}")
            }
            SuspendReason::Rewind { address } => write!(f, "REWIND at {address:#x}: VALID not set"),
            SuspendReason::MemSemaphore { address } => write!(f, "MEM_SEMAPHORE wait on {address:#x}: zero"),
            SuspendReason::Predication { address } => {
                write!(f, "SET_PREDICATION waits for final ZPASS data at {address:#x}")
            }
            SuspendReason::WaitOnCeCounter { ce, de } => {
                write!(f, "WAIT_ON_CE_COUNTER: CE counter {ce} not ahead of DE counter {de}")
            }
            SuspendReason::WaitOnDeCounterDiff { ce, de, diff } => {
                write!(f, "WAIT_ON_DE_COUNTER_DIFF: CE {ce} - DE {de} >= {diff}")
            }
        }
    }
}

/// Predication state set by SET_PREDICATION.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Predication {
    /// True while predicated packets (header bit 0) are skipped.
    pub skip: bool,
    /// Accumulated condition for CONTINUE packets (ZPASS sum != 0 /
    /// no overflow seen).
    pub accumulated: bool,
    /// A ZPASS block of this predicate was not final and HINT = 1 asked to
    /// draw anyway: predicated packets run whatever PRED_BOOL says, until
    /// the next SET_PREDICATION without CONTINUE.
    pub not_final: bool,
}

/// A resumable execution of one submission: its IB stack, predication,
/// why it is suspended and the packets it ran. The processor's loop is the
/// one thing that changes it; the host reads it.
#[derive(Clone, Debug)]
pub struct Pm4Execution {
    /// The indirect-buffer stack; the last cursor is the current one.
    stack: Vec<Cursor>,
    /// Most buffers that may be on the stack at once.
    max_depth: usize,
    /// Predication state.
    pub(crate) predication: Predication,
    /// Why the execution is suspended, if it is.
    pub(crate) suspended: Option<SuspendReason>,
    /// Packets executed or skipped in this submission (the work budget).
    pub(crate) packets: u64,
}

impl Pm4Execution {
    /// An idle execution allowing `max_depth` nested buffers.
    pub fn new(max_depth: usize) -> Self {
        let max_depth = max_depth.max(1);
        Self { stack: Vec::new(), max_depth, predication: Predication::default(), suspended: None, packets: 0 }
    }

    /// True when there is nothing left to run.
    pub fn is_idle(&self) -> bool {
        self.stack.is_empty()
    }

    /// Predication as the stream has it.
    pub fn predication(&self) -> Predication {
        self.predication
    }

    /// Why the execution is suspended, if it is.
    pub fn suspended(&self) -> Option<SuspendReason> {
        self.suspended
    }

    /// Packets executed or skipped in this submission, charged to its work
    /// budget (sub-draws of multi-draw packets included; a wait's attempts
    /// are not).
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Starts a submission (the root buffer).
    pub(crate) fn start(&mut self, buffer: u64, size_dw: u32) {
        // Reserved once, on the first submission: pushes never allocate.
        if self.stack.capacity() < self.max_depth {
            self.stack.reserve_exact(self.max_depth);
        }
        self.stack.clear();
        self.stack.push(Cursor::new(buffer, size_dw));
        self.suspended = None;
        self.packets = 0;
    }

    /// Drops whatever is running.
    pub(crate) fn reset(&mut self) {
        self.stack.clear();
        self.suspended = None;
        self.packets = 0;
    }

    /// The IB stack, outermost first.
    pub fn stack(&self) -> &[Cursor] {
        &self.stack
    }

    /// Current nesting depth (1 = the submitted buffer).
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// The most buffers the stack may hold.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// The current cursor.
    #[inline]
    pub fn top(&self) -> Option<&Cursor> {
        self.stack.last()
    }

    /// Cursor at `depth` (0 = root), mutably.
    #[inline]
    pub(crate) fn at_mut(&mut self, depth: usize) -> Option<&mut Cursor> {
        self.stack.get_mut(depth)
    }

    /// Calls into a buffer; `false` when the stack is full. Never allocates:
    /// the stack's capacity is reserved by [`Self::start`].
    pub(crate) fn push(&mut self, buffer: u64, size_dw: u32) -> bool {
        if self.stack.len() >= self.max_depth {
            return false;
        }
        self.stack.push(Cursor::new(buffer, size_dw));
        true
    }

    /// Jumps: the current buffer is replaced (CHAIN).
    pub(crate) fn chain(&mut self, buffer: u64, size_dw: u32) {
        if let Some(top) = self.stack.last_mut() {
            *top = Cursor::new(buffer, size_dw);
        }
    }

    /// Pops finished buffers; returns false when the stack is empty.
    #[inline]
    pub(crate) fn pop_finished(&mut self) -> bool {
        while let Some(top) = self.stack.last() {
            if top.offset_dw < top.size_dw {
                return true;
            }
            self.stack.pop();
        }
        false
    }
}
