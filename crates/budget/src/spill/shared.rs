//! The shared spill store (`[budget] spill_store`, team mode): replicas of `serve --http`
//! behind one load balancer share their spill files through object storage (S3 or a
//! shared disk, through the `object_store` crate).
//!
//! The local spill folder stays the working copy: writes stream to disk, the quota and
//! eviction work as before. A finished spill file is copied up in the background (a failed
//! copy is a warning, never a failed call); a spill file written by another replica is
//! copied down, temp file + rename, the first time `read_file` asks for it here.
//!
//! A path from the model becomes an object key only when its file name passes
//! [`is_spill_name`] (an alphabet without `/` or `.` runs) and it lies directly in the spill
//! folder; the key is then `PREFIX/NAME`, so nothing but spill files under the prefix is
//! ever fetched.

//!
//! The store is in builds with the `shared-spill` feature (part of `team`); without it
//! [`SharedSpills`] has no value and `[budget] spill_store` is refused with how to get a
//! build that has it.

use std::path::PathBuf;
use std::time::Duration;

#[cfg(feature = "shared-spill")]
mod store;
#[cfg(feature = "shared-spill")]
pub use store::SharedSpills;

#[cfg(not(feature = "shared-spill"))]
mod off;
#[cfg(not(feature = "shared-spill"))]
pub use off::SharedSpills;

/// Longest wait of a `read_file` for a spill file another replica wrote (the whole copy).
pub(super) const FETCH_TIMEOUT: Duration = Duration::from_secs(60);

/// What a failed transfer says about the store, besides its own error.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why the shared spill store could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SharedError {
    /// `[budget] spill_store` is not a store toolgate can open.
    #[error(
        "budget.spill_store = \"{url}\": {reason}; use s3://BUCKET/PREFIX (endpoint and credentials from the AWS_* environment variables) or file:///ABSOLUTE/FOLDER"
    )]
    Config {
        /// As configured.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The spill file is neither here nor in the shared store.
    #[error(
        "not found: `{path}` is neither on this replica nor in the shared spill store {url}; if another replica wrote it moments ago its upload may still be running — read it again in a few seconds, otherwise rerun the command to regenerate it"
    )]
    Missing {
        /// The local path asked for.
        path: PathBuf,
        /// The store, as configured.
        url: String,
    },
    /// The shared store did not answer, or the copy failed.
    #[error(
        "could not copy `{path}` from the shared spill store {url} ({endpoint}): {source}; read it again in a moment, or rerun the command to regenerate it"
    )]
    Fetch {
        /// The local path asked for.
        path: PathBuf,
        /// The store, as configured.
        url: String,
        /// Where its requests go.
        endpoint: String,
        /// What failed.
        source: BoxError,
    },
    /// The start-up check found the store unreachable.
    #[error(
        "the shared spill store {url} at {endpoint} cannot be reached: {source}; serving with local spill files for now (another replica cannot read them until the store answers) — check AWS_ENDPOINT_URL, AWS_REGION, the credentials and that the bucket exists"
    )]
    Unreachable {
        /// The store, as configured.
        url: String,
        /// Where its requests go.
        endpoint: String,
        /// What failed.
        source: BoxError,
    },
}
