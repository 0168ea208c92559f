//! The roots a mounted server gets when it asks (`roots/list`, or a `ListRoots` request of
//! an `input_required` result).
//!
//! During a call from a session whose client offers roots (a 2025 client that declared
//! `roots` at `initialize`), the server gets that client's roots: what the user has open
//! is what the server should work on. Outside a call, for a client without roots, or when
//! the client does not answer, it gets toolgate's own: `roots` in the config, else the
//! folder `serve` runs in. When roots are given (`roots` in the config, or `--root`) the
//! user has drawn the project's borders, so the client's roots are cut to them
//! ([`ClientRoots::WithinConfigured`]).
//!
//! Roots only tell a server where to look: they widen nothing. toolgate's own file tools
//! stay confined to the configured roots whatever a client says, and a stdio server's
//! sandbox (`[mcp] sandbox`) is drawn from them too.

use std::path::PathBuf;
use std::sync::Arc;

#[allow(deprecated)] // roots: deprecated by SEP-2577, used by 2025 servers and clients
use rmcp::model::{ListRootsResult, Root};
use toolgate_core::{ClientAsk, ClientLink};

/// What a mounted server gets of a client's roots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientRoots {
    /// The client's roots as it gives them (`roots` not set in the config: toolgate's own
    /// root is just the folder it was started in). The default.
    #[default]
    Relayed,
    /// Only the parts of the client's roots inside the configured roots (`roots` set in
    /// the config): a client root inside a configured one is kept, a configured root
    /// inside a client's replaces it, the rest is dropped; nothing left means the
    /// configured roots.
    WithinConfigured,
}

/// `dirs` as MCP roots: `file://` URIs named after their folders.
#[allow(deprecated)]
pub(crate) fn roots_of(dirs: &[PathBuf]) -> Vec<Root> {
    dirs.iter()
        .filter_map(|dir| {
            let uri = url::Url::from_directory_path(dir).ok()?;
            let root = Root::new(uri.as_str());
            Some(match dir.file_name() {
                Some(name) => root.with_name(name.to_string_lossy()),
                None => root,
            })
        })
        .collect()
}

/// The roots for a request of `server`: `link`'s client's (as `mode` allows) when it can
/// be asked, else `configured`.
#[allow(deprecated)]
pub(crate) async fn roots_for(
    server: &str,
    link: Option<Arc<dyn ClientLink>>,
    configured: &[PathBuf],
    mode: ClientRoots,
) -> Vec<Root> {
    let Some(link) = link.filter(|link| link.can_ask(ClientAsk::Roots).is_ok()) else {
        return roots_of(configured);
    };
    let answer = link
        .request(ClientAsk::Roots, serde_json::Value::Null)
        .await
        .map_err(crate::relay::RelayError::from)
        .and_then(|v| Ok(serde_json::from_value::<ListRootsResult>(v)?));
    let client = match answer {
        Ok(result) => result.roots,
        Err(e) => {
            tracing::debug!(%server, %e, "the client's roots could not be had; the configured ones are given");
            return roots_of(configured);
        }
    };
    match mode {
        ClientRoots::Relayed => client,
        ClientRoots::WithinConfigured => within(&client, configured),
    }
}

/// The parts of `client`'s roots inside `configured` (see [`ClientRoots::WithinConfigured`]).
#[allow(deprecated)]
fn within(client: &[Root], configured: &[PathBuf]) -> Vec<Root> {
    let mut out: Vec<Root> = Vec::new();
    let mut push = |root: Root| {
        if !out.iter().any(|r| r.uri == root.uri) {
            out.push(root);
        }
    };
    for root in client {
        let Some(path) = file_path(&root.uri) else {
            continue;
        };
        for dir in configured {
            if path.starts_with(dir) {
                push(root.clone());
            } else if dir.starts_with(&path) {
                roots_of(std::slice::from_ref(dir))
                    .into_iter()
                    .for_each(&mut push);
            }
        }
    }
    if out.is_empty() {
        return roots_of(configured);
    }
    out
}

/// The folder a `file://` root names, resolved as far as it exists (configured roots are).
fn file_path(uri: &str) -> Option<PathBuf> {
    let path = url::Url::parse(uri).ok()?.to_file_path().ok()?;
    Some(fs_err::canonicalize(&path).unwrap_or(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(deprecated)]
    fn uris(roots: &[Root]) -> Vec<&str> {
        roots.iter().map(|r| r.uri.as_str()).collect()
    }

    #[test]
    #[allow(deprecated)]
    fn client_roots_are_cut_to_the_configured_ones() {
        let configured = vec![PathBuf::from("/nonexistent-tg/project")];
        let client = vec![
            Root::new("file:///nonexistent-tg/project/sub/"),
            Root::new("file:///nonexistent-tg/"),
            Root::new("file:///elsewhere-tg/"),
            Root::new("https://example.com/repo"),
        ];
        let kept = within(&client, &configured);
        assert_eq!(
            uris(&kept),
            [
                "file:///nonexistent-tg/project/sub/",
                "file:///nonexistent-tg/project/"
            ]
        );
        // Nothing of the client's inside: the configured roots.
        let kept = within(&[Root::new("file:///elsewhere-tg/")], &configured);
        assert_eq!(uris(&kept), ["file:///nonexistent-tg/project/"]);
    }
}
