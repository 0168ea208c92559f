//! The catalog cache replicas share in Redis.

use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub(super) use redis::Client;

/// How long a Redis read or write of the cache may take: it only speeds up a start.
const REDIS_TIMEOUT: Duration = Duration::from_secs(2);

/// Saves `bytes` under `key` in the background (a blocking round trip, off the async
/// workers when there are some); `down` is cleared when it works, and a failure is logged
/// once while the server stays down.
pub(super) fn save(
    client: &Client,
    key: String,
    bytes: Vec<u8>,
    server: String,
    down: Arc<AtomicBool>,
) {
    let client = client.clone();
    let set = move || match set(&client, &key, &bytes) {
        Ok(()) => down.store(false, Ordering::Relaxed),
        Err(e) if !down.swap(true, Ordering::Relaxed) => {
            tracing::warn!(%server, "could not save the shared tool catalog: {e}");
        }
        Err(_) => {}
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn_blocking(set)),
        Err(_) => set(),
    }
}

/// The client of the Redis server at `url`, or why it is not a Redis URL.
pub(super) fn open(url: &str) -> Result<Client, toolgate_oauth::SharedStoreUrlError> {
    Client::open(url).map_err(|source| toolgate_oauth::SharedStoreUrlError::NotRedis {
        url: url.to_owned(),
        source,
    })
}

fn connection(client: &Client) -> redis::RedisResult<redis::Connection> {
    let connection = client.get_connection_with_timeout(REDIS_TIMEOUT)?;
    connection.set_read_timeout(Some(REDIS_TIMEOUT))?;
    connection.set_write_timeout(Some(REDIS_TIMEOUT))?;
    Ok(connection)
}

pub(super) fn get(client: &Client, key: &str) -> redis::RedisResult<Option<String>> {
    redis::cmd("GET").arg(key).query(&mut connection(client)?)
}

fn set(client: &Client, key: &str, value: &[u8]) -> redis::RedisResult<()> {
    redis::cmd("SET")
        .arg(key)
        .arg(value)
        .query(&mut connection(client)?)
}
