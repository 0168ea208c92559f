//! A build without the Redis store (the `redis` feature, part of `team`): no client exists,
//! and `[mcp] shared_store` is refused with how to get a build that has it.

use super::{FileLock, SharedStoreUrlError, StoreError};

/// A Redis client: none exists in this build.
#[derive(Debug, Clone)]
pub(crate) enum Client {}

/// Why a command to the shared store failed: none runs in this build.
pub(super) type Error = std::convert::Infallible;

pub(crate) fn open(url: &str) -> Result<Client, SharedStoreUrlError> {
    Err(SharedStoreUrlError::NotBuilt {
        url: url.to_owned(),
    })
}

pub(super) fn addr(client: &Client) -> String {
    match *client {}
}

pub(super) fn get(client: &Client, _key: &str) -> Result<Option<String>, StoreError> {
    match *client {}
}

pub(super) fn set(client: &Client, _key: &str, _text: &str) -> Result<(), StoreError> {
    match *client {}
}

pub(super) fn delete(client: &Client, _key: &str) -> Result<(), StoreError> {
    match *client {}
}

pub(super) fn release(client: &Client, _key: &str, _token: &str) {
    match *client {}
}

pub(super) fn lock(client: &Client, _key: String) -> Result<FileLock, StoreError> {
    match *client {}
}
