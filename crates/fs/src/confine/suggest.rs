//! "Did you mean …?" for a path that does not exist: the names beside it, read through the
//! root's descriptor like everything else.

use std::os::fd::AsFd;

use rustix::fs::OFlags;

use super::{Located, door};

/// "; did you mean …?" from the names beside a missing path, read through the root's
/// descriptor like everything else.
pub(super) fn suggest(missing: &Located) -> String {
    let (Some(parent), Some(name)) = (missing.rel.parent(), missing.rel.file_name()) else {
        return String::new();
    };
    let name = name.to_string_lossy().to_lowercase();
    let listed = door::open_beneath(
        missing.base.as_fd(),
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY,
    )
    .and_then(|dir| door::read_entries(&dir, 5_000));
    let Ok((entries, _)) = listed else {
        return "; check the folder with list_dir".to_owned();
    };
    let mut best: Vec<(f64, String)> = entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .map(|n| (strsim_ratio(&name, &n.to_lowercase()), n))
        .filter(|(s, _)| *s >= 0.6)
        .collect();
    best.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    if best.is_empty() {
        "; check the folder with list_dir".to_owned()
    } else {
        let names: Vec<String> = best.iter().take(3).map(|(_, n)| format!("`{n}`")).collect();
        format!("; did you mean {} in the same folder?", names.join(", "))
    }
}

/// Similarity by shared characters (cheap; good enough for typos and case).
fn strsim_ratio(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let (la, lb) = (a.chars().count(), b.chars().count());
    if la == 0 || lb == 0 {
        return 0.0;
    }
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
        + a.chars()
            .rev()
            .zip(b.chars().rev())
            .take_while(|(x, y)| x == y)
            .count();
    (common.min(la.max(lb)) as f64) / (la.max(lb) as f64)
}
