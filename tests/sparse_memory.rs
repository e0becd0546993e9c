//! `SparseMemory` against a flat model: every write, fill and copy (whole
//! pages kept as a repeated pattern, pages written for the first time,
//! copies across regions and within one) leaves exactly the bytes a plain
//! byte array would hold.

use std::sync::Arc;

use pm4core::memory::{GuestMemory, MemoryError, SparseMemory, PAGE_SIZE};
use proptest::prelude::*;

const PAGE: u64 = PAGE_SIZE as u64;
/// Three regions, each four pages: zero, shared bytes, zero. The second
/// starts right after the first, so accesses may cross from one to the
/// other.
const REGIONS: [u64; 3] = [0x10_0000, 0x10_0000 + 4 * PAGE, 0x20_0000];
const REGION_LEN: u64 = 4 * PAGE;

/// The memory under test and its model: one byte vector per region.
fn memories() -> (SparseMemory, Vec<Vec<u8>>) {
    let memory = SparseMemory::new();
    // Bytes that differ from page to page (the page number in the mix).
    let shared: Vec<u8> = (0..REGION_LEN).map(|i| ((i * 7 + 3) ^ (i / PAGE)) as u8).collect();
    memory.map_zeroed(REGIONS[0], REGION_LEN).unwrap();
    memory.map_shared(REGIONS[1], Arc::from(&shared[..]), 0, shared.len()).unwrap();
    memory.map_zeroed(REGIONS[2], REGION_LEN).unwrap();
    (memory, vec![vec![0; REGION_LEN as usize], shared, vec![0; REGION_LEN as usize]])
}

/// The model's byte at `address`, if mapped.
fn model_byte(model: &mut [Vec<u8>], address: u64) -> Option<&mut u8> {
    let region = REGIONS.iter().position(|&start| (start..start + REGION_LEN).contains(&address))?;
    model.get_mut(region)?.get_mut((address - REGIONS[region]) as usize)
}

fn model_read(model: &mut [Vec<u8>], address: u64, len: u64) -> Option<Vec<u8>> {
    (address..address + len).map(|a| model_byte(model, a).map(|b| *b)).collect()
}

fn model_write(model: &mut [Vec<u8>], address: u64, data: &[u8]) {
    for (a, &v) in (address..).zip(data) {
        *model_byte(model, a).unwrap() = v;
    }
}

#[derive(Debug, Clone)]
enum Op {
    Write {
        address: u64,
        data: Vec<u8>,
    },
    Fill {
        address: u64,
        len: u64,
        pattern: u32,
    },
    Copy {
        dst: u64,
        src: u64,
        len: u64,
    },
    /// `write_u32` (or `write_u64` when `wide`) of `value`.
    Word {
        address: u64,
        value: u64,
        wide: bool,
    },
}

/// An address in or near a region, often on a page boundary.
fn address() -> impl Strategy<Value = u64> {
    (0usize..3, 0u64..5, prop_oneof![Just(0u64), 0u64..PAGE, Just(PAGE - 4), Just(1)])
        .prop_map(|(region, page, offset)| REGIONS[region] + page * PAGE + offset)
}

fn length() -> impl Strategy<Value = u64> {
    prop_oneof![1u64..64, Just(PAGE), Just(2 * PAGE), Just(3 * PAGE + 8), 0u64..3 * PAGE]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (address(), proptest::collection::vec(any::<u8>(), 1..40))
            .prop_map(|(address, data)| Op::Write { address, data }),
        (address(), length(), prop_oneof![Just(0u32), Just(0xDEAD_BEEF), any::<u32>()])
            .prop_map(|(address, len, pattern)| Op::Fill { address, len, pattern }),
        (address(), address(), length()).prop_map(|(dst, src, len)| Op::Copy { dst, src, len }),
        (address(), any::<u64>(), any::<bool>()).prop_map(|(address, value, wide)| Op::Word { address, value, wide }),
    ]
}

/// Runs `ops` on both; each op succeeds on the memory exactly when its
/// whole range is mapped in the model, and the bytes agree after each.
fn check(ops: &[Op]) {
    let (memory, mut model) = memories();
    for op in ops {
        match op {
            Op::Write { address, data } => {
                let mapped = model_read(&mut model, *address, data.len() as u64).is_some();
                assert_eq!(memory.write_bytes(*address, data).is_ok(), mapped, "{op:?}");
                if mapped {
                    model_write(&mut model, *address, data);
                }
            }
            Op::Fill { address, len, pattern } => {
                let mapped = model_read(&mut model, *address, *len).is_some();
                assert_eq!(memory.fill(*address, *len, *pattern).is_ok(), mapped, "{op:?}");
                if mapped {
                    let bytes: Vec<u8> = (0..*len as usize).map(|i| pattern.to_le_bytes()[i % 4]).collect();
                    model_write(&mut model, *address, &bytes);
                }
            }
            Op::Copy { dst, src, len } => {
                let source = model_read(&mut model, *src, *len);
                let mapped = source.is_some() && model_read(&mut model, *dst, *len).is_some();
                assert_eq!(memory.copy(*dst, *src, *len).is_ok(), mapped, "{op:?}");
                if let (true, Some(bytes)) = (mapped, source) {
                    model_write(&mut model, *dst, &bytes);
                }
            }
            Op::Word { address, value, wide } => {
                let len = if *wide { 8 } else { 4 };
                let mapped = model_read(&mut model, *address, len).is_some();
                let written =
                    if *wide { memory.write_u64(*address, *value) } else { memory.write_u32(*address, *value as u32) };
                assert_eq!(written.is_ok(), mapped, "{op:?}");
                if mapped {
                    model_write(&mut model, *address, &value.to_le_bytes()[..len as usize]);
                }
            }
        }
        // Dword and qword reads where the op was and around it (page ends,
        // region ends, unmapped bytes) read what the model holds.
        let at = match op {
            Op::Write { address, .. } | Op::Fill { address, .. } | Op::Word { address, .. } => *address,
            Op::Copy { dst, .. } => *dst,
        };
        for address in [at, at.wrapping_sub(2), at + 4, at | (PAGE - 4), at | (PAGE - 2), (at | (PAGE - 1)) + 1] {
            let want = model_read(&mut model, address, 8);
            let got = memory.read_u64(address).ok().map(u64::to_le_bytes);
            assert_eq!(got.map(|b| b.to_vec()), want, "qword at {address:#x} after {op:?}");
            let want = model_read(&mut model, address, 4);
            let got = memory.read_u32(address).ok().map(u32::to_le_bytes);
            assert_eq!(got.map(|b| b.to_vec()), want, "dword at {address:#x} after {op:?}");
        }
        for (region, want) in REGIONS.iter().zip(&model) {
            let mut got = vec![0u8; REGION_LEN as usize];
            memory.read_bytes(*region, &mut got).unwrap();
            assert!(got == *want, "region {region:#x} differs after {op:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn writes_fills_and_copies_match_a_flat_model(ops in proptest::collection::vec(op(), 1..12)) {
        check(&ops);
    }
}

#[test]
fn a_whole_page_fill_is_kept_as_its_pattern_until_part_of_the_page_is_written() {
    let (memory, _) = memories();
    let base = REGIONS[0];
    // Two whole pages and a part of a third, starting one byte in: the
    // whole pages keep the pattern from their own first byte's phase.
    memory.fill(base + 1, 2 * PAGE + 10, 0x4433_2211).unwrap();
    let mut page = vec![0u8; PAGE_SIZE];
    memory.read_bytes(base + PAGE, &mut page).unwrap();
    // Byte 0 of the second page is byte PAGE - 1 of the fill: phase 3.
    assert_eq!(page[..8], [0x44, 0x11, 0x22, 0x33, 0x44, 0x11, 0x22, 0x33]);
    assert!(page.chunks(4).all(|c| c == [0x44, 0x11, 0x22, 0x33]));
    // Three pages copied because they were written, whole or not.
    assert_eq!(memory.allocated_page_bytes(), 3 * PAGE_SIZE);
    // A dword written into the pattern page: the rest keeps the pattern.
    memory.write_u32(base + PAGE + 8, 0xAABB_CCDD).unwrap();
    memory.read_bytes(base + PAGE, &mut page).unwrap();
    assert_eq!(page[4..16], [0x44, 0x11, 0x22, 0x33, 0xDD, 0xCC, 0xBB, 0xAA, 0x44, 0x11, 0x22, 0x33]);
    assert_eq!(page[PAGE_SIZE - 4..], [0x44, 0x11, 0x22, 0x33]);
    assert_eq!(memory.allocated_page_bytes(), 3 * PAGE_SIZE);
}

#[test]
fn a_whole_page_copy_takes_a_pattern_or_zero_page_as_it_is() {
    let (memory, _) = memories();
    let (zero, shared, other) = (REGIONS[0], REGIONS[1], REGIONS[2]);
    memory.fill(other, 2 * PAGE, 0x0102_0304).unwrap();
    // A pattern page, an unwritten zero page and a shared page, each
    // copied whole over the first region's written pages.
    memory.fill(zero, 3 * PAGE, 0xFFFF_FFFF).unwrap();
    memory.copy(zero, other, PAGE).unwrap();
    memory.copy(zero + PAGE, other + 3 * PAGE, PAGE).unwrap();
    memory.copy(zero + 2 * PAGE, shared, PAGE).unwrap();
    let mut got = vec![0u8; 3 * PAGE_SIZE];
    memory.read_bytes(zero, &mut got).unwrap();
    assert!(got[..PAGE_SIZE].chunks(4).all(|c| c == [4, 3, 2, 1]));
    assert!(got[PAGE_SIZE..2 * PAGE_SIZE].iter().all(|&b| b == 0));
    assert!(got[2 * PAGE_SIZE..].iter().enumerate().all(|(i, &b)| b == (i * 7 + 3) as u8));
    // Every byte copied counts against the write budget as before.
    assert_eq!(memory.bytes_written(), 2 * PAGE + 3 * PAGE + 3 * PAGE);
}

#[test]
fn a_run_of_pages_written_before_takes_each_page_from_its_own_place_in_the_source() {
    // Pages a fill wrote in one go sit in consecutive places: a later
    // write of the same pages whole goes through them in one loop.
    let (memory, _) = memories();
    let (zero, shared, other) = (REGIONS[0], REGIONS[1], REGIONS[2]);
    let source: Vec<u8> = (0..3 * PAGE).map(|i| ((i * 7 + 3) ^ (i / PAGE)) as u8).collect();
    let read = |address: u64, len: usize| {
        let mut got = vec![0u8; len];
        memory.read_bytes(address, &mut got).unwrap();
        got
    };
    memory.fill(zero, 3 * PAGE, 0xFFFF_FFFF).unwrap();
    // A copy of another region's bytes (each page its own), then a fill
    // from an odd phase (each whole page the same rotation), then a
    // write of bytes, each over the three pages.
    memory.copy(zero, shared, 3 * PAGE).unwrap();
    assert_eq!(read(zero, 3 * PAGE_SIZE), source);
    memory.fill(zero + 2, 3 * PAGE - 2, 0x4433_2211).unwrap();
    let got = read(zero, 3 * PAGE_SIZE);
    assert_eq!(got[..2], source[..2]);
    assert!(got[2..].chunks(4).all(|c| *c == [0x11, 0x22, 0x33, 0x44][..c.len()]));
    let bytes: Vec<u8> = (0..2 * PAGE_SIZE).map(|i| (i % 251) as u8).collect();
    memory.write_bytes(zero + PAGE, &bytes).unwrap();
    assert_eq!(read(zero + PAGE, 2 * PAGE_SIZE), bytes);
    // Pages of bytes copied from one run of written pages into another.
    memory.fill(other, PAGE, 0x0102_0304).unwrap();
    memory.fill(other + PAGE, PAGE, 0x0506_0708).unwrap();
    memory.copy(other, zero + PAGE, 2 * PAGE).unwrap();
    assert_eq!(read(other, 2 * PAGE_SIZE), bytes);
    // A copy of pattern pages over them, one with bytes written over its
    // pattern: each takes its source page as it is.
    memory.fill(other, PAGE, 0x0102_0304).unwrap();
    memory.fill(other + PAGE, PAGE, 0x0506_0708).unwrap();
    memory.write_u32(other + 8, 0xAABB_CCDD).unwrap();
    memory.copy(zero + PAGE, other, 2 * PAGE).unwrap();
    let got = read(zero + PAGE, 2 * PAGE_SIZE);
    assert_eq!(got[8..12], [0xDD, 0xCC, 0xBB, 0xAA]);
    assert!(got[..8].chunks(4).chain(got[12..PAGE_SIZE].chunks(4)).all(|c| c == [4, 3, 2, 1]));
    assert!(got[PAGE_SIZE..].chunks(4).all(|c| c == [8, 7, 6, 5]));
    // No page was added by the writes over written pages.
    assert_eq!(memory.allocated_page_bytes(), 5 * PAGE_SIZE);
}

#[test]
fn a_whole_page_fill_past_the_written_limit_stops_at_the_first_page_past_it() {
    let (memory, _) = memories();
    memory.set_written_limit(PAGE);
    // Refused as a whole, the fill goes on in 256-byte writes: the first
    // page is filled, the write into the second is refused by name.
    assert_eq!(
        memory.fill(REGIONS[0], 2 * PAGE, 0x1111_1111),
        Err(MemoryError::WrittenLimit { address: REGIONS[0] + PAGE, len: 256, limit: PAGE })
    );
    assert_eq!(memory.read_u32(REGIONS[0] + PAGE - 4).unwrap(), 0x1111_1111);
    assert_eq!(memory.read_u32(REGIONS[0] + PAGE).unwrap(), 0);
    assert_eq!(memory.allocated_page_bytes(), PAGE_SIZE);
    // A whole-page fill of the page written: no new page, the pattern.
    memory.fill(REGIONS[0], PAGE, 0x2222_2222).unwrap();
    assert_eq!(memory.read_u32(REGIONS[0] + 8).unwrap(), 0x2222_2222);
    assert_eq!(memory.allocated_page_bytes(), PAGE_SIZE);
}

#[test]
fn a_fill_or_copy_reaching_unmapped_memory_is_refused_whole_by_its_own_range() {
    let (memory, _) = memories();
    let (zero, shared, other) = (REGIONS[0], REGIONS[1], REGIONS[2]);
    // From the last page of the third region on past its end.
    let tail = other + REGION_LEN - PAGE;
    assert_eq!(memory.fill(tail, 2 * PAGE, 0x1111_1111), Err(MemoryError::Unmapped { address: tail, len: 2 * PAGE }));
    assert_eq!(memory.read_u32(tail).unwrap(), 0);
    // The source, then the destination, past a region's end: nothing lands.
    assert_eq!(memory.copy(zero, tail, 2 * PAGE), Err(MemoryError::Unmapped { address: tail, len: 2 * PAGE }));
    assert_eq!(memory.copy(tail, shared, 2 * PAGE), Err(MemoryError::Unmapped { address: tail, len: 2 * PAGE }));
    assert_eq!(memory.read_u32(zero).unwrap(), 0);
    assert_eq!(memory.read_u32(tail).unwrap(), 0);
    assert_eq!(memory.bytes_written(), 0);
    assert_eq!(memory.allocated_page_bytes(), 0);
}

#[test]
fn writes_into_a_cleared_page_keep_its_pattern_around_them() {
    let (memory, _) = memories();
    let base = REGIONS[0];
    let page = |memory: &SparseMemory| {
        let mut got = vec![0u8; PAGE_SIZE];
        memory.read_bytes(base, &mut got).unwrap();
        got
    };
    let mut want: Vec<u8> = (0..PAGE_SIZE).map(|i| [0x11, 0x22, 0x33, 0x44][i % 4]).collect();
    memory.fill(base, PAGE, 0x4433_2211).unwrap();
    // A write, one after it with a gap (pattern in between), one before
    // it, then one overlapping the range at an odd offset.
    for (at, bytes) in
        [(0x200usize, vec![0xA0u8; 8]), (0x300, vec![0xB0; 5]), (0x101, vec![0xC0; 3]), (0x1FE, vec![0xD0; 16])]
    {
        memory.write_bytes(base + at as u64, &bytes).unwrap();
        want[at..at + bytes.len()].copy_from_slice(&bytes);
        assert_eq!(page(&memory), want, "after the write at {at:#x}");
    }
    assert_eq!(memory.read_u32(base + 0x104).unwrap(), 0x4433_2211);
    assert_eq!(memory.read_u64(base + 0x2FC).unwrap(), 0xB0B0_B0B0_4433_2211);
    // A write that makes the range cover most of the page: the page holds
    // its bytes from then on, the pattern kept around them.
    let long = vec![0xE0u8; 0x900];
    memory.write_bytes(base + 0x400, &long).unwrap();
    want[0x400..0xD00].copy_from_slice(&long);
    memory.write_u32(base + 0xFFC, 7).unwrap();
    want[0xFFC..].copy_from_slice(&7u32.to_le_bytes());
    assert_eq!(page(&memory), want);
    assert_eq!(memory.allocated_page_bytes(), PAGE_SIZE);
}
