//! A build without the Redis cache (the `redis` feature, part of `team`): no client exists,
//! and `[mcp] shared_store` is refused with how to get a build that has it.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// A Redis client: none exists in this build.
#[derive(Debug, Clone)]
pub(super) enum Client {}

pub(super) fn open(url: &str) -> Result<Client, toolgate_oauth::SharedStoreUrlError> {
    Err(toolgate_oauth::SharedStoreUrlError::NotBuilt {
        url: url.to_owned(),
    })
}

pub(super) fn get(client: &Client, _key: &str) -> Result<Option<String>, std::convert::Infallible> {
    match *client {}
}

pub(super) fn save(
    client: &Client,
    _key: String,
    _bytes: Vec<u8>,
    _server: String,
    _down: Arc<AtomicBool>,
) {
    match *client {}
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shared_store_is_refused_with_the_feature_that_has_it() {
        let refused = crate::CatalogCache::redis("redis://127.0.0.1:6379/0").unwrap_err();
        assert!(refused.to_string().contains("--features team"), "{refused}");
    }
}
