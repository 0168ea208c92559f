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

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::path::Path as Key;
use object_store::{BackoffConfig, ClientConfigKey, ObjectStore, ObjectStoreExt, RetryConfig};
use tokio::io::AsyncWriteExt;
use tokio::runtime::Handle;
use tokio_util::task::TaskTracker;

use super::name::is_spill_name;

/// Longest wait of a `read_file` for a spill file another replica wrote (the whole copy).
pub(super) const FETCH_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest wait of the start-up check.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

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

/// The object store spill files are copied to and fetched from. Built from
/// `[budget] spill_store`; attached with [`super::SpillStore::with_shared`].
#[derive(Debug)]
pub struct SharedSpills {
    store: Arc<dyn ObjectStore>,
    prefix: Key,
    /// As configured (`s3://bucket/prefix`), for messages.
    url: String,
    /// Where requests go, for messages.
    endpoint: String,
    /// Uploads in flight: [`SharedSpills::finish_uploads`] waits for them at shutdown.
    uploads: TaskTracker,
    /// False after a failed upload until one succeeds: one warning per outage, not per file.
    healthy: AtomicBool,
    /// The runtime transfers run on, kept from the first call made inside one, for a spill
    /// file finished on a plain thread.
    runtime: OnceLock<Handle>,
}

impl SharedSpills {
    /// Opens `s3://BUCKET/PREFIX` (endpoint, region and credentials from the standard
    /// `AWS_*` environment variables: `AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP`) or `file:///ABSOLUTE/FOLDER` (a shared
    /// disk; created if missing). Nothing is contacted yet: see [`SharedSpills::check`].
    pub fn from_url(url: &str) -> Result<Self, SharedError> {
        let config = |reason: String| SharedError::Config {
            url: url.to_owned(),
            reason,
        };
        let parsed = url::Url::parse(url).map_err(|e| config(format!("not a URL ({e})")))?;
        match parsed.scheme() {
            "s3" => {
                if parsed.host_str().is_none_or(str::is_empty) {
                    return Err(config("no bucket".to_owned()));
                }
                // The S3 client's TLS (rustls without a bundled provider); as elsewhere in
                // toolgate, ring. A provider installed earlier wins.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let mut builder = AmazonS3Builder::from_env()
                    .with_url(url)
                    // A read_file waits for a fetch: fail within seconds, not minutes.
                    .with_retry(RetryConfig {
                        backoff: BackoffConfig::default(),
                        max_retries: 3,
                        retry_timeout: Duration::from_secs(20),
                    });
                // Key by key: replacing the client options would drop the environment's
                // (`AWS_ALLOW_HTTP`, proxies).
                for (key, value) in [
                    (ClientConfigKey::ConnectTimeout, "5s"),
                    (ClientConfigKey::Timeout, "30s"),
                ] {
                    let key = AmazonS3ConfigKey::Client(key);
                    if builder.get_config_value(&key).is_none() {
                        builder = builder.with_config(key, value);
                    }
                }
                let endpoint = builder
                    .get_config_value(&AmazonS3ConfigKey::Endpoint)
                    .unwrap_or_else(|| {
                        let region = builder
                            .get_config_value(&AmazonS3ConfigKey::Region)
                            .unwrap_or_else(|| "us-east-1".to_owned());
                        format!("AWS S3 in {region} (no AWS_ENDPOINT_URL)")
                    });
                let store = builder.build().map_err(|e| config(e.to_string()))?;
                let prefix = Key::parse(parsed.path().trim_matches('/'))
                    .map_err(|e| config(format!("bad prefix: {e}")))?;
                Ok(Self::with_endpoint(Arc::new(store), prefix, url, endpoint))
            }
            "file" => {
                let folder = parsed
                    .to_file_path()
                    .map_err(|()| config("not an absolute folder path".to_owned()))?;
                fs_err::create_dir_all(&folder).map_err(|e| config(e.to_string()))?;
                let store =
                    LocalFileSystem::new_with_prefix(&folder).map_err(|e| config(e.to_string()))?;
                let endpoint = format!("folder {}", folder.display());
                Ok(Self::with_endpoint(
                    Arc::new(store),
                    Key::default(),
                    url,
                    endpoint,
                ))
            }
            other => Err(config(format!("unknown scheme `{other}:`"))),
        }
    }

    /// A shared store over `store` (any `object_store` implementation, e.g. `InMemory` in
    /// tests), keeping spill files under `prefix`; `url` names it in messages.
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &str, url: &str) -> Self {
        let prefix = Key::from(prefix.trim_matches('/'));
        Self::with_endpoint(store, prefix, url, url.to_owned())
    }

    fn with_endpoint(
        store: Arc<dyn ObjectStore>,
        prefix: Key,
        url: &str,
        endpoint: String,
    ) -> Self {
        Self {
            store,
            prefix,
            url: url.to_owned(),
            endpoint,
            uploads: TaskTracker::new(),
            healthy: AtomicBool::new(true),
            runtime: OnceLock::new(),
        }
    }

    /// The store as configured (`s3://bucket/prefix`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Where its requests go (the S3 endpoint, or the shared folder).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Lists the prefix once, to say at start-up whether the store answers (an error
    /// names the endpoint and what to check). Serving goes on either way.
    pub async fn check(&self) -> Result<(), SharedError> {
        let _ = self.runtime();
        let unreachable = |source: BoxError| SharedError::Unreachable {
            url: self.url.clone(),
            endpoint: self.endpoint.clone(),
            source,
        };
        let listed = tokio::time::timeout(
            CHECK_TIMEOUT,
            self.store.list_with_delimiter(Some(&self.prefix)),
        )
        .await
        .map_err(|_| unreachable(format!("no answer in {CHECK_TIMEOUT:?}").into()))?;
        listed.map(|_| ()).map_err(|e| unreachable(e.into()))
    }

    /// Waits (at most `timeout`) for the uploads in flight: at shutdown, so a spill file
    /// written just before still reaches the other replicas.
    pub async fn finish_uploads(&self, timeout: Duration) {
        self.uploads.close();
        if tokio::time::timeout(timeout, self.uploads.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                store = %self.url,
                "{} spill file uploads still running after {timeout:?}; those files stay on this replica only",
                self.uploads.len()
            );
        }
        self.uploads.reopen();
    }

    /// The current runtime, else the one kept from an earlier call.
    pub(super) fn runtime(&self) -> Option<Handle> {
        match Handle::try_current() {
            Ok(current) => Some(self.runtime.get_or_init(|| current).clone()),
            Err(_) => self.runtime.get().cloned(),
        }
    }

    /// The object key of the spill file `name`; `None` for any other name.
    fn key(&self, name: &str) -> Option<Key> {
        is_spill_name(name).then(|| self.prefix.clone().join(name))
    }

    /// Copies the finished spill file `local` (named `name`) up, in the background.
    pub(super) fn upload(self: &Arc<Self>, name: &str, local: PathBuf) {
        let Some(key) = self.key(name) else {
            return;
        };
        let Some(runtime) = self.runtime() else {
            tracing::warn!(
                store = %self.url,
                "spill file `{}` not copied to the shared spill store: no async runtime here",
                local.display()
            );
            return;
        };
        let shared = Arc::clone(self);
        self.uploads.spawn_on(
            async move {
                match put_file(&shared.store, &key, &local).await {
                    Ok(()) => {
                        if !shared.healthy.swap(true, Ordering::Relaxed) {
                            tracing::info!(store = %shared.url, "the shared spill store takes uploads again");
                        }
                    }
                    // Evicted by the quota before its upload ran: nothing left to share.
                    Err(e)
                        if e.downcast_ref::<std::io::Error>()
                            .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound) =>
                    {
                        tracing::debug!(file = %local.display(), "spill file gone before its upload");
                    }
                    Err(e) if shared.healthy.swap(false, Ordering::Relaxed) => {
                        tracing::warn!(
                            "could not copy spill file `{}` to the shared spill store {} ({}): {e}; it stays readable on this replica only (further failures are logged at debug level until an upload succeeds)",
                            local.display(),
                            shared.url,
                            shared.endpoint
                        );
                    }
                    Err(e) => {
                        tracing::debug!(file = %local.display(), %e, "spill upload failed");
                    }
                }
            },
            &runtime,
        );
    }

    /// Copies the spill file `name` into `dir` (temp file + rename); its size in bytes.
    pub(super) async fn fetch(
        self: Arc<Self>,
        name: String,
        dir: PathBuf,
    ) -> Result<u64, SharedError> {
        let path = dir.join(&name);
        let failed = |source: BoxError| SharedError::Fetch {
            path: path.clone(),
            url: self.url.clone(),
            endpoint: self.endpoint.clone(),
            source,
        };
        let missing = || SharedError::Missing {
            path: path.clone(),
            url: self.url.clone(),
        };
        let Some(key) = self.key(&name) else {
            return Err(missing());
        };
        let got = match self.store.get(&key).await {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Err(missing()),
            Err(e) => return Err(failed(e.into())),
        };
        // Not a spill name, so never listed or read half-written; unique per fetch, so two
        // reads of one file racing here each rename a whole copy.
        let tmp = dir.join(format!("{name}.{:016x}.partial", super::name::nonce()));
        let copied = async {
            let mut file = tokio::fs::File::create(&tmp).await?;
            let mut bytes = 0u64;
            let mut stream = got.into_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                file.write_all(&chunk).await?;
                bytes += chunk.len() as u64;
            }
            file.flush().await?;
            drop(file);
            tokio::fs::rename(&tmp, &path).await?;
            Ok::<u64, BoxError>(bytes)
        }
        .await;
        if copied.is_err() {
            let _ = tokio::fs::remove_file(&tmp).await;
        }
        copied.map_err(failed)
    }
}

/// Streams the local file to `key` (one PUT when small, a multipart upload when large).
async fn put_file(store: &Arc<dyn ObjectStore>, key: &Key, local: &Path) -> Result<(), BoxError> {
    let mut file = tokio::fs::File::open(local).await?;
    let mut writer = object_store::buffered::BufWriter::new(Arc::clone(store), key.clone());
    match tokio::io::copy(&mut file, &mut writer).await {
        Ok(_) => writer.shutdown().await.map_err(Into::into),
        Err(e) => {
            let _ = writer.abort().await;
            Err(e.into())
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read files back with std::fs
mod tests {
    use object_store::memory::InMemory;

    use super::*;
    use crate::SpillStore;

    /// Two replicas' spill stores, each with its own folder, sharing one object store.
    fn replicas(store: &Arc<dyn ObjectStore>, dir: &Path) -> (Arc<SpillStore>, Arc<SpillStore>) {
        let replica = |n: &str| {
            Arc::new(
                SpillStore::new(dir.join(n), 1 << 20).with_shared(SharedSpills::new(
                    Arc::clone(store),
                    "team/spill",
                    "mem://",
                )),
            )
        };
        (replica("a"), replica("b"))
    }

    /// `fetch_shared` as read_file calls it: from a blocking thread.
    async fn fetch(store: &Arc<SpillStore>, path: PathBuf) -> Result<bool, SharedError> {
        let store = Arc::clone(store);
        tokio::task::spawn_blocking(move || store.fetch_shared(&path))
            .await
            .unwrap()
    }

    async fn uploaded(store: &SpillStore) {
        store
            .shared()
            .unwrap()
            .finish_uploads(Duration::from_secs(10))
            .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_spill_written_on_one_replica_is_read_through_another() {
        let dir = tempfile::tempdir().unwrap();
        let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let (a, b) = replicas(&objects, dir.path());
        let content = "row\n".repeat(50_000);
        let file = a.write("run_shell", content.as_bytes()).unwrap();
        uploaded(&a).await;
        let name = file.path.file_name().unwrap().to_str().unwrap().to_owned();
        let key = Key::from(format!("team/spill/{name}"));
        assert!(
            objects.head(&key).await.is_ok(),
            "uploaded under PREFIX/NAME"
        );

        let on_b = dir.path().join("b").join(&name);
        assert!(fetch(&b, on_b.clone()).await.unwrap(), "copied down");
        assert_eq!(std::fs::read_to_string(&on_b).unwrap(), content);
        assert_eq!(b.used_bytes(), content.len() as u64, "counted in B's quota");
        assert!(
            !fetch(&b, on_b).await.unwrap(),
            "already here: no second copy"
        );
        // No temp file left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path().join("b"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".partial"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stream_is_shared_once_it_is_finished() {
        let dir = tempfile::tempdir().unwrap();
        let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let (a, b) = replicas(&objects, dir.path());
        let mut stream = a.stream("job-1-stdout").unwrap();
        stream.write(b"first\n").unwrap();
        let name = stream
            .path()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        let on_b = dir.path().join("b").join(&name);
        uploaded(&a).await;
        assert!(
            matches!(
                fetch(&b, on_b.clone()).await,
                Err(SharedError::Missing { .. })
            ),
            "an open stream stays on its replica"
        );
        stream.write(b"second\n").unwrap();
        drop(stream);
        uploaded(&a).await;
        assert!(fetch(&b, on_b.clone()).await.unwrap());
        assert_eq!(std::fs::read_to_string(&on_b).unwrap(), "first\nsecond\n");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_missing_spill_file_says_to_retry_or_rerun() {
        let dir = tempfile::tempdir().unwrap();
        let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let (_, b) = replicas(&objects, dir.path());
        let path = dir
            .path()
            .join("b/1700000000000-00001-0001-0123456789abcdef-run_shell.txt");
        let err = fetch(&b, path.clone()).await.unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("read it again in a few seconds")
                && message.contains("rerun the command")
                && message.contains("mem://"),
            "{message}"
        );
        assert!(!path.exists());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hostile_path_never_fetches_anything_but_a_spill_file_under_the_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let spill = "1700000000000-00001-0001-0123456789abcdef-x.txt";
        for key in [
            "secret".to_owned(),
            "team/secret".to_owned(),
            "team/spill/secret".to_owned(),
            "team/spill/.evicted".to_owned(),
            "team/spill/notes.txt".to_owned(),
            format!("other/{spill}"),
            format!("team/{spill}"),
            format!("team/spill/sub/{spill}"),
        ] {
            objects
                .put(&Key::from(key.as_str()), "PLANTED".into())
                .await
                .unwrap();
        }
        let (_, b) = replicas(&objects, dir.path());
        let b_dir = dir.path().join("b");
        std::fs::create_dir_all(b_dir.join("sub")).unwrap();
        for path in [
            b_dir.join("secret"),
            b_dir.join(".evicted"),
            b_dir.join("notes.txt"),
            b_dir.join("sub").join(spill),
            b_dir.join("..").join(spill),
            dir.path().join(spill),
            PathBuf::from("/etc/passwd"),
        ] {
            assert!(
                !fetch(&b, path.clone()).await.unwrap(),
                "{}",
                path.display()
            );
            assert!(
                !path.exists() || std::fs::read_to_string(&path).unwrap() != "PLANTED",
                "{}",
                path.display()
            );
        }
        // The one spill name in the folder is looked up under the prefix only.
        assert!(matches!(
            fetch(&b, b_dir.join(spill)).await,
            Err(SharedError::Missing { .. })
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_shared_folder_works_like_a_bucket() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}/shared", dir.path().display());
        let replica = |n: &str| {
            Arc::new(
                SpillStore::new(dir.path().join(n), 1 << 20)
                    .with_shared(SharedSpills::from_url(&url).unwrap()),
            )
        };
        let (a, b) = (replica("a"), replica("b"));
        a.shared().unwrap().check().await.unwrap();
        let file = a.write("dump", b"shared disk\n").unwrap();
        uploaded(&a).await;
        let name = file.path.file_name().unwrap().to_owned();
        assert!(dir.path().join("shared").join(&name).is_file());
        let on_b = dir.path().join("b").join(&name);
        assert!(fetch(&b, on_b.clone()).await.unwrap());
        assert_eq!(std::fs::read_to_string(on_b).unwrap(), "shared disk\n");
    }

    #[test]
    fn a_store_url_toolgate_cannot_open_says_what_to_write() {
        for url in ["ftp://host/x", "s3:///prefix", "not a url", "file://host/x"] {
            let message = SharedSpills::from_url(url).unwrap_err().to_string();
            assert!(
                message.contains("s3://BUCKET/PREFIX") && message.contains(url),
                "{url}: {message}"
            );
        }
    }
}
