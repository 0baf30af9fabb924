//! Framing's tests: the strict walk names the first bad frame, the
//! lenient one steps over what is not a record, blocks of any size frame
//! the same records, trailing data must fit.

use super::*;
use std::io::Cursor;

fn record(t: u32, size: u16, body: &[u8]) -> Vec<u8> {
    let mut r = t.to_le_bytes().to_vec();
    r.extend(0u16.to_le_bytes());
    r.extend(size.to_le_bytes());
    r.extend(body);
    r
}

fn section(data: &[u8], offset: u64) -> Section {
    Section {
        offset,
        size: data.len() as u64 - offset,
    }
}

#[test]
fn strict_walk_names_the_first_bad_frame() {
    let mut data = vec![0u8; 16];
    data.extend(record(9, 16, &[1; 8]));
    data.extend(record(3, 64, &[2; 8]));
    let s = section(&data, 16);
    match first_problem(&mut Cursor::new(&data), s, Endian::Little).unwrap() {
        Some((
            32,
            LayoutError::TruncatedRecord {
                offset: 32,
                record_type: 3,
                needed: 64,
                left: 16,
            },
        )) => {}
        other => panic!("{other:?}"),
    }
    let mut tiny = vec![0u8; 16];
    tiny.extend(record(9, 4, &[]));
    let found = first_problem(&mut Cursor::new(&tiny), section(&tiny, 16), Endian::Little);
    assert!(matches!(
        found,
        Ok(Some((16, LayoutError::BadRecordSize { offset: 16, .. })))
    ));
}

/// Garbage between records is stepped over to the next record that
/// could be one; a cut record at the end is skipped; a refused record is
/// left out whole. Each is counted with its first offset.
#[test]
fn lenient_walk_steps_over_what_is_not_a_record() {
    let mut data = record(9, 16, &[1; 8]); // 0
    data.extend(record(3, 0, &[0xee; 16])); // 16: size 0, then junk
    data.extend([0xffu8; 8]); // 40: junk
    data.extend(record(9, 24, &[2; 16])); // 48
    let mut mmap2 = vec![0u8; 40];
    mmap2[32] = 200; // build-id size
    let mut refused = record(10, 48, &mmap2); // 72: refused
    refused[5] = 0x40; // misc: MMAP_BUILD_ID
    data.extend(refused);
    data.extend(record(9, 16, &[3; 8])); // 120
    data.extend(record(9, 64, &[4; 8])); // 136: cut by the end
    let mut seen = Vec::new();
    let skipped = walk_records(
        &mut Cursor::new(&data),
        section(&data, 0),
        Endian::Little,
        |f, body| {
            seen.push((f.offset, body[0]));
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(seen, [(0, 1), (48, 2), (120, 3)]);
    assert_eq!((skipped.spans, skipped.span_bytes), (2, 32 + 16));
    assert_eq!(skipped.first_span.as_ref().unwrap().0, 16);
    assert_eq!((skipped.records, skipped.record_bytes), (1, 48));
    let line = skipped.describe().unwrap();
    assert!(
        line.contains("skipped 1 malformed record (48 bytes), the first at offset 0x48: PERF_RECORD_MMAP2: build-id size 200"),
        "{line}"
    );
    assert!(
        line.contains(
            "skipped 48 bytes that are not whole records (2 stretches), the first at offset 0x10"
        ),
        "{line}"
    );
}

/// Read in blocks of any size (a header or a body split between two
/// reads, the read-ahead moved to a new buffer between records), the
/// walk finds the same records, bodies and skips as in one read.
#[test]
fn blocks_of_any_size_frame_the_same_records() {
    let mut data = record(9, 16, &[1; 8]);
    data.extend(record(3, 0, &[0xee; 16])); // size 0, then junk
    data.extend([0xffu8; 8]);
    for i in 0..40u8 {
        data.extend(record(
            9,
            8 + 8 * u16::from(i % 5),
            &vec![i; 8 * usize::from(i % 5)],
        ));
    }
    data.extend(record(9, 64, &[4; 8])); // cut by the end
    let s = section(&data, 0);
    let walk = |block: usize, moves: bool| {
        let mut cursor = RecordCursor::new(Cursor::new(&data), s, Endian::Little, block, true);
        let mut buf = ReadBuf::default();
        let mut seen = Vec::new();
        while let Some((frame, at)) = cursor.next_in(&mut buf).unwrap() {
            let len = usize::from(frame.size) - 8;
            seen.push((frame.offset, buf.get(at..at + len).unwrap().to_vec()));
            if moves && seen.len() % 3 == 0 {
                // As the sorter does at a round's end.
                let end = cursor.at();
                buf.keep_from(end);
                cursor.rebase(end);
            }
        }
        let skipped = &cursor.skipped;
        (seen, skipped.spans, skipped.span_bytes, skipped.records)
    };
    let whole = walk(1 << 16, false);
    assert_eq!(whole.0.len(), 41);
    assert_eq!((whole.1, whole.2), (2, 32 + 16));
    for block in [8, 16, 24, 40, 1000] {
        assert_eq!(walk(block, false), whole, "block {block}");
        assert_eq!(walk(block, true), whole, "block {block}, moved");
    }
}

#[test]
fn trailing_data_must_fit() {
    let mut data = record(PERF_RECORD_AUXTRACE, 16, &u64::MAX.to_le_bytes());
    data.extend([0; 8]);
    let found = first_problem(&mut Cursor::new(&data), section(&data, 0), Endian::Little);
    assert!(matches!(
        found,
        Ok(Some((0, LayoutError::TruncatedRecord { offset: 0, .. })))
    ));
    // A stream: the tracing data blob after its record is kept.
    let mut stream = record(
        PERF_RECORD_HEADER_TRACING_DATA,
        16,
        &[8, 0, 0, 0, 0, 0, 0, 0],
    );
    stream.extend(b"formats!");
    stream.extend(record(9, 16, &[5; 8]));
    let s = Section {
        offset: 0,
        size: u64::MAX,
    };
    let mut cursor = RecordCursor::new(Cursor::new(&stream), s, Endian::Little, 64, true);
    let mut body = Vec::new();
    let first = cursor.next_into(&mut body).unwrap().unwrap();
    assert_eq!((first.record_type, first.next), (66, 24));
    assert_eq!(cursor.tracing_data.as_deref(), Some(&b"formats!"[..]));
    body.clear();
    assert_eq!(cursor.next_into(&mut body).unwrap().unwrap().offset, 24);
    assert!(cursor.next_into(&mut body).unwrap().is_none());
    assert!(cursor.skipped.is_empty());
}
