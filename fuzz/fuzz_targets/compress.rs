//! The log compressor on arbitrary text: never panics, never grows the text, and the stream
//! compressor agrees that it never loses more than it folds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_budget::{CompressOptions, LogCompressor, LogOptions, compress_log};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Some(compressed) = compress_log(text, &CompressOptions::default())
    {
        assert!(
            compressed.text.len() < text.len(),
            "compression grew the log"
        );
    }
    // The streaming compressor over the same bytes, fed in two pieces.
    let mut stream = LogCompressor::new(LogOptions::default());
    let (a, b) = data.split_at(data.len() / 2);
    stream.push(a);
    stream.push(b);
    let log = stream.finish();
    assert!(log.anchors_shown <= log.anchors);
});
