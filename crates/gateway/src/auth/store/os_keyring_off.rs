//! A build without the OS credential store (the `keyring` feature): every call says so, and
//! `auto` keeps tokens in the 0600 file.

use super::KeyringKind;

/// What every call answers.
const ABSENT: &str = "this build of toolgate has no OS credential store (install one that has: `cargo install toolgate --features keyring`)";

pub(super) fn get(_kind: KeyringKind, _url: &str) -> Result<Option<String>, String> {
    Err(ABSENT.to_owned())
}

pub(super) fn set(_kind: KeyringKind, _url: &str, _text: &str) -> Result<(), String> {
    Err(ABSENT.to_owned())
}

pub(super) fn delete(_kind: KeyringKind, _url: &str) -> Result<(), String> {
    Err(ABSENT.to_owned())
}

pub(super) fn probe(_kind: KeyringKind) -> Result<(), String> {
    Err(ABSENT.to_owned())
}
