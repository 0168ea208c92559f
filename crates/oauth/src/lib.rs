//! MCP authorization (OAuth 2.1) for remote servers that need a login, on rmcp's `auth`
//! feature (its `AuthorizationManager` and credential-store trait), per the
//! MCP authorization spec (MCP 2025-11-25 and 2026-07-28, Authorization). A server is what
//! [`Server`] says of it (name, URL, headers, [`OAuthConfig`]); nothing here knows the
//! gateway that mounts it.
//!
//! - [`login`]: `toolgate mcp login NAME`, the authorization-code flow with PKCE, run by a
//!   human with a browser (`login.rs`, `callback.rs`, `browser.rs`); [`start`] is its first
//!   half, for a login whose browser comes back elsewhere.
//! - [`TokenStore`]: tokens in the OS credential store or a 0600 file, keyed by server URL
//!   and issuer (`store.rs`, and `bound.rs` for rmcp's side of it).
//! - [`authorized_client`]: what a mount uses: an HTTP client over the stored tokens which
//!   refreshes before expiry and on a `401`, once per token across processes and replicas
//!   (`client.rs`). A server with no usable tokens needs a login; `serve` never waits
//!   for a human.
//! - [`WebLogins`]: logins a remote user completes in their own browser through
//!   `serve --http` (`web_login.rs`): the gateway starts them, the HTTP listener serves
//!   their pages, and both hold the same table.
//!
//! What rmcp 3.11 lacks and this crate adds around it (wrapping, not forking): persistent
//! stores keyed by issuer, the client secret of a dynamic registration kept for refreshes
//! (rmcp's `initialize_from_store` forgets it), refreshes that re-read the store under its
//! lock (rmcp's `AuthClient` refreshes again what another process just renewed), a
//! loopback callback and a browser opener,
//! step-up scopes remembered across processes, and the union of granted and challenged
//! scopes for a login made by a later process.

#![deny(missing_docs)]

mod bound;
mod browser;
mod callback;
mod client;
mod config;
mod login;
mod store;
mod web_login;

pub use browser::LoginUrlError;
pub use callback::CallbackError;
pub use client::{Authorized, ClientError, authorized_client};
pub use config::{CredentialStoreMode, OAuthConfig, Server};
pub use login::{LoginError, LoginOptions, Started, login, remember_challenge, start};
pub use store::{AuthStatus, SharedStoreUrlError, StoreError, TokenStore};
pub use web_login::{
    Arrival, CALLBACK_PATH, Finished, NoCode, Page, Pending, Redirect, START_PATH, TooManyLogins,
    WebLogins, provider_text,
};

/// Installs rustls' process-wide crypto provider (ring) once; reqwest's TLS needs one
/// before its first client.
fn tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another part of the process installed one first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
