//! A build without the OS credential store (the `keyring` feature): every call says so, and
//! `auto` keeps tokens in the 0600 file.

use super::KeyringKind;

/// Why the OS credential store failed: this build has none.
#[derive(Debug, thiserror::Error)]
#[error(
    "this build of toolgate has no OS credential store (install one that has: `cargo install toolgate --features keyring`)"
)]
pub struct Error;

pub(super) fn get(_kind: KeyringKind, _url: &str) -> Result<Option<String>, Error> {
    Err(Error)
}

pub(super) fn set(_kind: KeyringKind, _url: &str, _text: &str) -> Result<(), Error> {
    Err(Error)
}

pub(super) fn delete(_kind: KeyringKind, _url: &str) -> Result<(), Error> {
    Err(Error)
}

pub(super) fn probe(_kind: KeyringKind) -> Result<(), Error> {
    Err(Error)
}

#[cfg(test)]
mod tests {
    use crate::TokenStore;
    use crate::config::CredentialStoreMode;

    #[test]
    fn the_keyring_is_refused_with_the_feature_that_has_it_and_auto_keeps_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let refused = TokenStore::in_dir(dir.path().to_path_buf(), CredentialStoreMode::Keyring)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("--features keyring"), "{refused}");
        let auto = TokenStore::in_dir(dir.path().to_path_buf(), CredentialStoreMode::Auto).unwrap();
        assert!(auto.describe().contains("0600"), "{}", auto.describe());
    }
}
