//! Fuzz target: tracepoint `format` files, TRACING_DATA blobs and print-fmt
//! rendering. The input is `FORMAT TEXT \0 RECORD BYTES`: the text goes
//! through `parse_format` (and its print fmt through the expression
//! parser); when it parses, the record bytes are rendered with it, with its
//! id forced into `common_type` so the renderer always runs. The whole input
//! is also read as a TRACING_DATA blob. Nothing may panic; every error is
//! one line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scry::event::format::parse_format;
use scry::event::format_cache::FormatCache;
use scry::event::tracing_data_parse::parse_tracing_data;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = parse_tracing_data(data) {
        assert!(!e.to_string().contains('\n'), "multi-line error: {e}");
    }
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (text, raw) = data.split_at(split);
    let raw = raw.get(1..).unwrap_or(&[]);
    let text = String::from_utf8_lossy(text);
    let _ = scry::event::print_fmt::parse(&text);
    match parse_format("fuzz", &text) {
        Ok(format) => {
            let id = format.id as u16;
            let cache = FormatCache::default();
            cache.insert(format);
            let mut record = id.to_le_bytes().to_vec();
            record.extend_from_slice(raw);
            let mut out = String::new();
            cache.render(&record, &mut out);
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
});
