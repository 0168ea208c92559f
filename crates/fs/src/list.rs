//! `list_dir`: one folder's entries with type and size, paged like `read_file`.

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use rustix::fs::FileType;

use toolgate_core::TruncationReason;

use crate::confine::{Shown, door};
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

/// Lists the open folder `dir` (reached through a root's descriptor) from entry `offset`
/// (1-based), the entries `shown` keeps. Entries are read and looked at through `dir`, never
/// by path.
pub(crate) fn list_dir(
    dir: &OwnedFd,
    shown: Shown,
    offset: u64,
    limit: usize,
    limits: &ReadLimits,
) -> std::io::Result<ListPage> {
    let (mut read, scan_cut) = door::read_entries(dir, limits.max_scan_entries)?;
    read.retain(|e| shown.keeps(&e.name, e.kind));
    let scanned = read.len() as u64;
    let mut entries: Vec<(Vec<u8>, String)> = Vec::with_capacity(read.len());
    for entry in read {
        let name_os = OsStr::from_bytes(&entry.name);
        let mut name = name_os.to_string_lossy().into_owned();
        if std::str::from_utf8(&entry.name).is_err() {
            name.push_str("  [name is not UTF-8; shown lossily]");
        }
        let line = match door::stat_at(dir.as_fd(), name_os) {
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => format!("{name}/"),
                FileType::Symlink => match door::read_link_at(dir.as_fd(), name_os) {
                    Ok(target) => format!("{name} -> {}", String::from_utf8_lossy(&target)),
                    Err(_) => format!("{name} -> ?"),
                },
                FileType::RegularFile => {
                    format!("{name}  ({})", human_size(st.st_size.max(0) as u64))
                }
                FileType::Fifo => format!("{name}  [fifo]"),
                FileType::Socket => format!("{name}  [socket]"),
                _ => format!("{name}  [device]"),
            },
            Err(_) => format!("{name}  [unreadable]"),
        };
        entries.push((entry.name, line));
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
