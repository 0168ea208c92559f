//! `list_dir`: one folder's entries with type and size, paged like `read_file`.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use toolgate_core::TruncationReason;

use crate::read::ReadLimits;

/// One page of a folder listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    /// One entry per line: `name/` for folders, `name  (N bytes)` for files,
    /// `name -> target` for symlinks.
    pub text: String,
    /// Entries shown.
    pub shown: u64,
    /// Total entries, when all were scanned.
    pub total: Option<u64>,
    /// Entries scanned.
    pub scanned: u64,
    /// Where the next page starts (1-based entry number), only when cut.
    pub next_offset: Option<u64>,
    /// Why it was cut.
    pub reason: Option<TruncationReason>,
}

/// Lists `dir` (a real path already confined) from entry `offset` (1-based).
pub fn list_dir(
    dir: &Path,
    offset: u64,
    limit: usize,
    limits: &ReadLimits,
) -> std::io::Result<ListPage> {
    let mut entries: Vec<(Vec<u8>, String)> = Vec::new();
    let mut scanned = 0u64;
    let mut scan_cut = false;
    for entry in fs_err::read_dir(dir)? {
        if scanned as usize >= limits.max_scan_entries {
            scan_cut = true;
            break;
        }
        scanned += 1;
        let Ok(entry) = entry else { continue };
        let name_os = entry.file_name();
        let raw = std::os::unix::ffi::OsStrExt::as_bytes(name_os.as_os_str()).to_vec();
        let mut name = name_os.to_string_lossy().into_owned();
        if std::str::from_utf8(&raw).is_err() {
            name.push_str("  [name is not UTF-8; shown lossily]");
        }
        let line = match std::fs::symlink_metadata(entry.path()) {
            Ok(meta) => {
                let ft = meta.file_type();
                if ft.is_dir() {
                    format!("{name}/")
                } else if ft.is_symlink() {
                    match std::fs::read_link(entry.path()) {
                        Ok(target) => format!("{name} -> {}", target.to_string_lossy()),
                        Err(_) => format!("{name} -> ?"),
                    }
                } else if ft.is_file() {
                    format!("{name}  ({})", human_size(meta.len()))
                } else if ft.is_fifo() {
                    format!("{name}  [fifo]")
                } else if ft.is_socket() {
                    format!("{name}  [socket]")
                } else {
                    format!("{name}  [device]")
                }
            }
            Err(_) => format!("{name}  [unreadable]"),
        };
        entries.push((raw, line));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let total = entries.len() as u64;
    let offset = offset.max(1);
    if offset > total.max(1) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("offset {offset} is past the end: the folder has {total} entries"),
        ));
    }
    let limit = limit.clamp(1, limits.max_lines.max(1));
    let mut text = String::new();
    let mut shown = 0u64;
    let mut reason = None;
    let mut next_offset = None;
    for (i, (_, line)) in entries.iter().enumerate().skip(offset as usize - 1) {
        let number = i as u64 + 1;
        if shown as usize >= limit {
            reason = Some(TruncationReason::ResultLimit);
            next_offset = Some(number);
            break;
        }
        if shown > 0 && text.len() + line.len() + 1 > limits.max_bytes {
            reason = Some(TruncationReason::PayloadLimit);
            next_offset = Some(number);
            break;
        }
        text.push_str(line);
        text.push('\n');
        shown += 1;
    }
    if scan_cut && reason.is_none() {
        reason = Some(TruncationReason::ScanLimit);
    }
    Ok(ListPage {
        text,
        shown,
        total: (!scan_cut).then_some(total),
        scanned,
        next_offset,
        reason,
    })
}

/// `1234` → `1.2 KiB`.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
