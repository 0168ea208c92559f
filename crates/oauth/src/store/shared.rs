//! The token store replicas share in Redis: records are keys, locks are Redis locks.

use std::time::UNIX_EPOCH;

pub(crate) use redis::Client;

use super::{FileLock, SharedStoreUrlError, StoreError, off_runtime};

/// Why a command to the shared store failed.
pub(super) type Error = redis::RedisError;

/// How long a Redis lock lives when its holder dies without releasing it; a refresh (one
/// token request) takes far less.
const REDIS_LOCK_MS: u64 = 30_000;
/// How long a Redis command of the store may take.
const REDIS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The client of the Redis server at `url`, or why it is not a Redis URL.
pub(crate) fn open(url: &str) -> Result<Client, SharedStoreUrlError> {
    Client::open(url).map_err(|source| SharedStoreUrlError::NotRedis {
        url: url.to_owned(),
        source,
    })
}

/// Where the server is, for messages.
pub(super) fn addr(client: &Client) -> String {
    client.get_connection_info().addr().to_string()
}

pub(super) fn set(client: &Client, key: &str, text: &str) -> Result<(), StoreError> {
    query(client, redis::cmd("SET").arg(key).arg(text))
}

pub(super) fn delete(client: &Client, key: &str) -> Result<(), StoreError> {
    query(client, redis::cmd("DEL").arg(key))
}

/// Releases the lock `key` when it is still ours (`token`): one that expired and was taken
/// by another replica stays theirs.
pub(super) fn release(client: &Client, key: &str, token: &str) {
    let release = redis::cmd("EVAL")
        .arg("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end")
        .arg(1)
        .arg(key)
        .arg(token)
        .clone();
    if let Err(e) = query::<i64>(client, &release) {
        tracing::warn!(
            "could not release the shared OAuth lock (it expires in {} s): {e}",
            REDIS_LOCK_MS / 1000
        );
    }
}

fn query<T: redis::FromRedisValue + Send>(
    client: &Client,
    command: &redis::Cmd,
) -> Result<T, StoreError> {
    let run = || -> redis::RedisResult<T> {
        let mut connection = client.get_connection_with_timeout(REDIS_TIMEOUT)?;
        connection.set_read_timeout(Some(REDIS_TIMEOUT))?;
        connection.set_write_timeout(Some(REDIS_TIMEOUT))?;
        command.query(&mut connection)
    };
    off_runtime(run).map_err(|source| StoreError::Redis {
        addr: client.get_connection_info().addr().to_string(),
        source,
    })
}

pub(super) fn get(client: &Client, key: &str) -> Result<Option<String>, StoreError> {
    query(client, redis::cmd("GET").arg(key))
}

/// Takes the Redis lock `key`, waiting while another holder has it (at most until it
/// expires, [`REDIS_LOCK_MS`], and then some).
pub(super) fn lock(client: &Client, key: String) -> Result<FileLock, StoreError> {
    let token = format!("{}-{}", std::process::id(), rand_token());
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(2 * REDIS_LOCK_MS);
    loop {
        let taken: Option<String> = query(
            client,
            redis::cmd("SET")
                .arg(&key)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(REDIS_LOCK_MS),
        )?;
        if taken.is_some() {
            return Ok(FileLock::Redis {
                client: client.clone(),
                key,
                token,
            });
        }
        if std::time::Instant::now() > deadline {
            return Err(StoreError::RedisLockTaken {
                key,
                secs: 2 * REDIS_LOCK_MS / 1000,
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(20)); // a poll interval
    }
}

/// 128 random bits, hex: who holds a Redis lock.
fn rand_token() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes = nanos.to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
