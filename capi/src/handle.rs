//! Handles: what a C caller holds for a library object.
//!
//! A handle is not a pointer to the object: it is a number (cast to an
//! opaque pointer type) that names a slot of one table and the slot's
//! generation. Looking a handle up checks both, so a handle that this
//! library never made, one that was freed (its slot's generation moved on),
//! or one of another kind is an error with a message, never a read of
//! freed memory. The table holds each object in an `Arc`: a call in
//! progress keeps its object alive while another thread frees the handle.
//!
//! Encoding: the low [`INDEX_BITS`] bits are the slot's index plus one (so
//! NULL is never a handle), the bits above the slot's generation (from 1;
//! a slot's generation grows at each free).

use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::{pm4_status, Error};

#[cfg(not(target_pointer_width = "64"))]
compile_error!("pm4core-capi encodes handles in 64-bit pointers");

/// Bits of a handle that hold the slot index plus one.
const INDEX_BITS: u32 = 24;
const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;
/// Largest generation a handle can hold.
const GENERATION_MAX: u64 = (1 << (64 - INDEX_BITS)) - 1;

/// A library object a handle names.
pub(crate) trait Object: Send + Sync + 'static {
    /// The C type's name, for messages (`pm4_gpu`).
    const KIND: &'static str;
    /// The opaque C type its handles point to.
    type Handle;
    /// Wraps the object for the table.
    fn into_entry(object: Arc<Self>) -> Entry;
    /// The object, if `entry` holds one of this kind.
    fn from_entry(entry: &Entry) -> Option<&Arc<Self>>;
}

/// What a table slot holds.
pub(crate) enum Entry {
    Gpu(Arc<crate::gpu::GpuObject>),
    Memory(Arc<crate::memory::MemoryObject>),
    Submission(Arc<crate::submission::SubmissionObject>),
    HostWrite(Arc<crate::submission::HostWriteObject>),
    Interrupts(Arc<crate::signal::InterruptsObject>),
    Stalls(Arc<crate::signal::StallsObject>),
    StallReport(Arc<crate::signal::StallReportObject>),
    Recorder(Arc<crate::recorder::RecorderObject>),
}

impl Entry {
    fn kind(&self) -> &'static str {
        match self {
            Entry::Gpu(_) => "pm4_gpu",
            Entry::Memory(_) => "pm4_memory",
            Entry::Submission(_) => "pm4_submission",
            Entry::HostWrite(_) => "pm4_host_write",
            Entry::Interrupts(_) => "pm4_interrupts",
            Entry::Stalls(_) => "pm4_stalls",
            Entry::StallReport(_) => "pm4_stall_report",
            Entry::Recorder(_) => "pm4_recorder",
        }
    }
}

/// Implements [`Object`] for a type and its entry variant.
macro_rules! object {
    ($ty:ty, $handle:ty, $variant:ident, $kind:literal) => {
        impl $crate::handle::Object for $ty {
            const KIND: &'static str = $kind;
            type Handle = $handle;
            fn into_entry(object: std::sync::Arc<Self>) -> $crate::handle::Entry {
                $crate::handle::Entry::$variant(object)
            }
            fn from_entry(entry: &$crate::handle::Entry) -> Option<&std::sync::Arc<Self>> {
                match entry {
                    $crate::handle::Entry::$variant(object) => Some(object),
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use object;

struct Slot {
    generation: u64,
    entry: Option<Entry>,
}

struct Table {
    slots: Vec<Slot>,
    /// Indices of empty slots.
    free: Vec<usize>,
}

static TABLE: RwLock<Table> = RwLock::new(Table { slots: Vec::new(), free: Vec::new() });

/// Puts `object` in the table and returns its handle.
pub(crate) fn insert<T: Object>(object: T) -> Result<*mut T::Handle, Error> {
    let entry = T::into_entry(Arc::new(object));
    let mut table = TABLE.write();
    let index = match table.free.pop() {
        Some(index) => index,
        None => {
            let index = table.slots.len();
            if index >= INDEX_MASK {
                return Err(Error::new(
                    pm4_status::PM4_STATUS_ERROR,
                    format_args!("too many live handles ({index}); free some"),
                ));
            }
            table.slots.push(Slot { generation: 1, entry: None });
            index
        }
    };
    let slot = &mut table.slots[index];
    slot.entry = Some(entry);
    let value = ((slot.generation as usize) << INDEX_BITS) | (index + 1);
    Ok(value as *mut T::Handle)
}

/// Where a handle would point in the table.
fn decode(handle: usize) -> Option<(usize, u64)> {
    let index = (handle & INDEX_MASK).checked_sub(1)?;
    Some((index, (handle >> INDEX_BITS) as u64))
}

/// The object `handle` names, if it is a live handle of kind `T`.
/// `what` names the argument in messages.
#[inline]
pub(crate) fn get<T: Object>(handle: *mut T::Handle, what: &str) -> Result<Arc<T>, Error> {
    let value = handle as usize;
    if value == 0 {
        return Err(Error::null(what));
    }
    let bad =
        |why: String| Error::new(pm4_status::PM4_STATUS_INVALID_HANDLE, format_args!("{what} ({value:#x}) {why}"));
    let Some((index, generation)) = decode(value) else {
        return Err(bad(format!("is not a {} this library made", T::KIND)));
    };
    let table = TABLE.read();
    let Some(slot) = table.slots.get(index) else {
        return Err(bad(format!("is not a {} this library made", T::KIND)));
    };
    if generation == 0 || generation > slot.generation {
        return Err(bad(format!("is not a {} this library made", T::KIND)));
    }
    if generation < slot.generation {
        return Err(bad(format!("is a {} that was freed", T::KIND)));
    }
    match &slot.entry {
        Some(entry) => match T::from_entry(entry) {
            Some(object) => Ok(Arc::clone(object)),
            None => Err(bad(format!("is a {}, not a {}", entry.kind(), T::KIND))),
        },
        None => Err(bad(format!("is a {} that was freed", T::KIND))),
    }
}

/// Frees `handle` if it is a live handle of kind `T` and returns its
/// object; NULL, a freed handle and one of another kind give `None`
/// (freeing is a no-op for them).
pub(crate) fn remove<T: Object>(handle: *mut T::Handle) -> Option<Arc<T>> {
    let (index, generation) = decode(handle as usize)?;
    let mut table = TABLE.write();
    let slot = table.slots.get_mut(index)?;
    if slot.generation != generation || slot.entry.as_ref().is_none_or(|e| T::from_entry(e).is_none()) {
        return None;
    }
    let entry = slot.entry.take()?;
    if slot.generation < GENERATION_MAX {
        slot.generation += 1;
        table.free.push(index);
    }
    // A slot whose generation is spent is never used again.
    drop(table);
    T::from_entry(&entry).map(Arc::clone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signal::StallReportObject;
    use crate::submission::pm4_submission;
    use pm4core::gpu::StallReport;

    fn report() -> StallReportObject {
        StallReportObject(StallReport::default())
    }

    #[test]
    fn a_handle_names_its_object_until_it_is_freed_and_never_after() {
        let h = insert(report()).unwrap();
        assert!(get::<StallReportObject>(h, "report").is_ok());
        assert!(remove::<StallReportObject>(h).is_some());
        let e = get::<StallReportObject>(h, "report").unwrap_err();
        assert_eq!(e.status, pm4_status::PM4_STATUS_INVALID_HANDLE);
        assert!(e.message.contains("pm4_stall_report that was freed"), "{}", e.message);
        // Freeing again, and freeing NULL, do nothing.
        assert!(remove::<StallReportObject>(h).is_none());
        assert!(remove::<StallReportObject>(std::ptr::null_mut()).is_none());
        // The slot is reused under a new generation: the old handle stays dead.
        let again = insert(report()).unwrap();
        assert_ne!(again, h);
        assert!(get::<StallReportObject>(h, "report").is_err());
        assert!(get::<StallReportObject>(again, "report").is_ok());
        remove::<StallReportObject>(again);
    }

    #[test]
    fn a_handle_of_another_kind_or_one_never_made_is_refused_with_its_reason() {
        let h = insert(report()).unwrap();
        let as_submission = h as usize as *mut pm4_submission;
        let e = get::<crate::submission::SubmissionObject>(as_submission, "submission").unwrap_err();
        assert!(e.message.contains("is a pm4_stall_report, not a pm4_submission"), "{}", e.message);
        // Removing it as the wrong kind frees nothing.
        assert!(remove::<crate::submission::SubmissionObject>(as_submission).is_none());
        assert!(get::<StallReportObject>(h, "report").is_ok());
        remove::<StallReportObject>(h);
        for forged in [1usize << 60 | 1, INDEX_MASK, 0x1234] {
            let e = get::<StallReportObject>(forged as *mut _, "report").unwrap_err();
            assert_eq!(e.status, pm4_status::PM4_STATUS_INVALID_HANDLE);
            assert!(e.message.contains("not a pm4_stall_report this library made"), "{}", e.message);
        }
        let e = get::<StallReportObject>(std::ptr::null_mut(), "report").unwrap_err();
        assert_eq!((e.status, e.message.as_str()), (pm4_status::PM4_STATUS_NULL_ARGUMENT, "report is NULL"));
    }
}
