//! A build without the shared spill store: [`SharedSpills`] has no value, so a spill store
//! never has one attached and `[budget] spill_store` is refused when the runtime is built.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;

use super::SharedError;

/// The shared spill store, left out of this build (the `shared-spill` feature, part of
/// `team`): no value of it exists.
#[derive(Debug)]
pub enum SharedSpills {}

impl SharedSpills {
    /// Refuses every store: this build cannot open one.
    pub fn from_url(url: &str) -> Result<Self, SharedError> {
        Err(SharedError::Config {
            url: url.to_owned(),
            reason: "this build of toolgate has no shared spill store; install one that has (`cargo install toolgate --features team`) or remove the setting".to_owned(),
        })
    }

    /// Unreachable: no value exists.
    pub fn url(&self) -> &str {
        match *self {}
    }

    /// Unreachable: no value exists.
    pub fn endpoint(&self) -> &str {
        match *self {}
    }

    /// Unreachable: no value exists.
    pub async fn check(&self) -> Result<(), SharedError> {
        match *self {}
    }

    /// Unreachable: no value exists.
    pub async fn finish_uploads(&self, _timeout: Duration) {
        match *self {}
    }

    pub(in crate::spill) fn runtime(&self) -> Option<Handle> {
        match *self {}
    }

    pub(in crate::spill) fn upload(self: &Arc<Self>, _name: &str, _local: PathBuf) {
        match **self {}
    }

    pub(in crate::spill) async fn fetch(
        self: Arc<Self>,
        _name: String,
        _dir: PathBuf,
    ) -> Result<u64, SharedError> {
        match *self {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shared_spill_store_is_refused_with_the_feature_that_has_it() {
        let refused = super::SharedSpills::from_url("s3://bucket/spill").unwrap_err();
        assert!(refused.to_string().contains("--features team"), "{refused}");
    }
}
