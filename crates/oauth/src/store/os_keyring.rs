//! The OS credential store: the Secret Service on Linux (or the kernel keyutils, for tests),
//! the Keychain on macOS, the Credential Manager on Windows.

use super::{KeyringKind, off_runtime};

/// Why the OS credential store failed.
pub(super) type Error = keyring::Error;

/// The keyring service name of toolgate's records.
const KEYRING_SERVICE: &str = "toolgate-mcp-oauth";

fn entry(kind: KeyringKind, url: &str) -> keyring::Result<keyring::Entry> {
    match kind {
        KeyringKind::Platform => keyring::Entry::new(KEYRING_SERVICE, url),
        #[cfg(target_os = "linux")]
        KeyringKind::Keyutils => {
            keyring::keyutils::KeyutilsCredential::new_with_target(None, KEYRING_SERVICE, url)
                .map(|c| keyring::Entry::new_with_credential(Box::new(c)))
        }
    }
}

pub(super) fn get(kind: KeyringKind, url: &str) -> keyring::Result<Option<String>> {
    off_runtime(|| match entry(kind, url)?.get_password() {
        Ok(text) => Ok(Some(text)),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(e),
    })
}

pub(super) fn set(kind: KeyringKind, url: &str, text: &str) -> keyring::Result<()> {
    off_runtime(|| entry(kind, url)?.set_password(text))
}

pub(super) fn delete(kind: KeyringKind, url: &str) -> keyring::Result<()> {
    off_runtime(|| match entry(kind, url)?.delete_credential() {
        Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(e) => Err(e),
    })
}

/// Whether the keyring answers: a read of an entry nobody writes.
pub(super) fn probe(kind: KeyringKind) -> keyring::Result<()> {
    get(kind, "toolgate-probe").map(|_| ())
}
