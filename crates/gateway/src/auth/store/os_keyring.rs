//! The OS credential store: the Secret Service on Linux (or the kernel keyutils, for tests),
//! the Keychain on macOS, the Credential Manager on Windows.

use super::{KeyringKind, off_runtime};

/// The keyring service name of toolgate's records.
const KEYRING_SERVICE: &str = "toolgate-mcp-oauth";

fn entry(kind: KeyringKind, url: &str) -> Result<keyring::Entry, String> {
    match kind {
        KeyringKind::Platform => {
            keyring::Entry::new(KEYRING_SERVICE, url).map_err(|e| e.to_string())
        }
        #[cfg(target_os = "linux")]
        KeyringKind::Keyutils => {
            keyring::keyutils::KeyutilsCredential::new_with_target(None, KEYRING_SERVICE, url)
                .map(|c| keyring::Entry::new_with_credential(Box::new(c)))
                .map_err(|e| e.to_string())
        }
    }
}

pub(super) fn get(kind: KeyringKind, url: &str) -> Result<Option<String>, String> {
    off_runtime(|| match entry(kind, url)?.get_password() {
        Ok(text) => Ok(Some(text)),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(e.to_string()),
    })
}

pub(super) fn set(kind: KeyringKind, url: &str, text: &str) -> Result<(), String> {
    off_runtime(|| {
        entry(kind, url)?
            .set_password(text)
            .map_err(|e| e.to_string())
    })
}

pub(super) fn delete(kind: KeyringKind, url: &str) -> Result<(), String> {
    off_runtime(|| match entry(kind, url)?.delete_credential() {
        Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(e) => Err(e.to_string()),
    })
}

/// Whether the keyring answers: a read of an entry nobody writes.
pub(super) fn probe(kind: KeyringKind) -> Result<(), String> {
    get(kind, "toolgate-probe").map(|_| ())
}
