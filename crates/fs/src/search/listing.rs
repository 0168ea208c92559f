//! One folder's entries as the walk reads them (through its descriptor, sorted by name);
//! the walk ([`super::walk`]) steps through them and the ignore rules ([`super::rules`]) look
//! in them for `.ignore` and `.gitignore`.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::BorrowedFd;

use crate::confine::door::{self, Kind};

/// One folder's entries, sorted by name, their names in one buffer (one allocation per
/// folder rather than one per entry).
#[derive(Debug, Default)]
pub(crate) struct Listing {
    names: Vec<u8>,
    entries: Vec<Slot>,
}

/// One entry of a [`Listing`]: where its name lies in the buffer, and its type.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    start: usize,
    end: usize,
    pub(super) kind: Kind,
}

impl Listing {
    /// Reads the folder `fd` (a descriptor opened for this read: its position moves) with
    /// the getdents buffer `buf`, sorted by name.
    pub(super) fn read(fd: BorrowedFd<'_>, buf: &mut [MaybeUninit<u8>]) -> io::Result<Self> {
        let mut listing = Self::default();
        door::each_entry(fd, buf, |name, kind| {
            let start = listing.names.len();
            listing.names.extend_from_slice(name);
            listing.entries.push(Slot {
                start,
                end: listing.names.len(),
                kind,
            });
        })?;
        let names = &listing.names;
        listing
            .entries
            .sort_unstable_by(|a, b| names[a.start..a.end].cmp(&names[b.start..b.end]));
        Ok(listing)
    }

    /// The entry at `index`, in name order.
    pub(super) fn slot(&self, index: usize) -> Option<Slot> {
        self.entries.get(index).copied()
    }

    /// The name of `slot`'s entry.
    pub(super) fn name(&self, slot: &Slot) -> &[u8] {
        &self.names[slot.start..slot.end]
    }

    /// Whether the folder holds `name` (of type `kind`, when given).
    pub(crate) fn has(&self, name: &[u8], kind: Option<Kind>) -> bool {
        self.entries
            .iter()
            .any(|e| self.name(e) == name && kind.is_none_or(|k| e.kind == k))
    }
}
