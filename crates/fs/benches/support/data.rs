//! Bench inputs, generated once into `target/bench-data` (or `$TOOLGATE_BENCH_DATA`) and
//! reused while their size is right. Shared by `benches/read_file.rs` and
//! `examples/read_rss.rs`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Size of the single-line file: 40 MiB.
pub const LONG_LINE_BYTES: u64 = 40 * 1024 * 1024;
/// The log file is at least this big: 1 GiB.
pub const LOG_BYTES: u64 = 1 << 30;
/// The line read deep inside the log file.
pub const DEEP_LINE: u64 = 5_000_000;

/// Name of the single-line file inside [`dir`].
pub const LONG_LINE_NAME: &str = "long_line_40MiB.txt";
/// Name of the log file inside [`dir`].
pub const LOG_NAME: &str = "app_1GiB.log";

/// The folder holding the inputs (created if needed).
pub fn dir() -> io::Result<PathBuf> {
    let dir = match std::env::var_os("TOOLGATE_BENCH_DATA") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data"),
    };
    fs_err::create_dir_all(&dir)?;
    dir.canonicalize()
}

/// One line of 40 MiB (ASCII, no newline inside, one at the end).
pub fn long_line(dir: &Path) -> io::Result<PathBuf> {
    generate(dir, LONG_LINE_NAME, |out| {
        let chunk: Vec<u8> = (0..1024u32).map(|i| b'a' + (i % 26) as u8).collect();
        for _ in 0..(LONG_LINE_BYTES / 1024 - 1) {
            out.write_all(&chunk)?;
        }
        out.write_all(&chunk[..1023])?;
        out.write_all(b"\n")
    })
}

/// A log of about 1 GiB, ~14.3 M lines like
/// `2026-11-30T04:09:50Z INFO request id=12345 path=/api/v1/items status=200`.
pub fn log(dir: &Path) -> io::Result<PathBuf> {
    generate(dir, LOG_NAME, |out| {
        let mut written = 0u64;
        let mut n = 0u64;
        while written < LOG_BYTES {
            let s = n % 86_400;
            let line = format!(
                "2026-11-30T{:02}:{:02}:{:02}Z INFO request id={n} path=/api/v1/items status={}\n",
                s / 3600,
                s / 60 % 60,
                s % 60,
                if n.is_multiple_of(97) { 500 } else { 200 },
            );
            out.write_all(line.as_bytes())?;
            written += line.len() as u64;
            n += 1;
        }
        Ok(())
    })
}

/// Writes `name` with `fill` unless a complete copy exists (written to a temp name, then
/// renamed, so an interrupted run leaves nothing half-written behind under `name`).
fn generate(
    dir: &Path,
    name: &str,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<PathBuf> {
    let path = dir.join(name);
    if path.exists() {
        return Ok(path);
    }
    let tmp = dir.join(format!("{name}.partial.{}", std::process::id()));
    let file = fs_err::File::create(&tmp)?;
    let mut out = io::BufWriter::with_capacity(1 << 20, file);
    fill(&mut out)?;
    out.flush()?;
    drop(out);
    fs_err::rename(&tmp, &path)?;
    Ok(path)
}
