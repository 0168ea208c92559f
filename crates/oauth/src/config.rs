//! The OAuth settings a remote server's entry carries (`[mcp_servers.NAME.oauth]`) and
//! where tokens are kept (`[mcp] oauth_credentials_store`), and [`Server`], what a login
//! needs to know of a server.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A remote MCP server as the OAuth client sees it: what a login and an authorized client
/// need, borrowed from whoever configured it.
#[derive(Debug, Clone, Copy)]
pub struct Server<'a> {
    /// The server's name, for messages (`toolgate mcp login NAME`).
    pub name: &'a str,
    /// Its Streamable HTTP endpoint, the resource the tokens are for.
    pub url: &'a str,
    /// Extra headers sent with the unauthenticated probe that fetches its challenge (an
    /// `Authorization` header among them is left out).
    pub headers: &'a BTreeMap<String, String>,
    /// `[mcp_servers.NAME.oauth]`.
    pub oauth: &'a OAuthConfig,
}

/// `[mcp_servers.NAME.oauth]`: how toolgate identifies itself to the server's
/// authorization server. Every key is optional: with none, toolgate registers itself
/// dynamically (or uses its Client ID Metadata Document where supported).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct OAuthConfig {
    /// A client id registered with the authorization server beforehand (used first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The environment variable holding that client's secret (confidential clients).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<String>,
    /// Scopes to ask for, instead of those the server advertises.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = &["read"])]
    pub scopes: Option<Vec<String>>,
    /// The loopback port of the login callback (`http://localhost:PORT/callback`); default:
    /// any free port. Set it when a pre-registered client allows one redirect URI only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = 8976)]
    pub callback_port: Option<u16>,
    /// The HTTPS URL of toolgate's Client ID Metadata Document, used as the client id where
    /// the authorization server supports such documents.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"https://example.com/toolgate-client.json")]
    pub client_metadata_url: Option<String>,
    /// Each caller of `serve --http` who has an identity (`[server.auth]`) uses the server
    /// as themselves: their own login, made in their browser through toolgate's
    /// `/oauth/callback` the first time they call one of its tools, and kept apart from
    /// everyone else's. Sessions without an identity (stdio, the static token) and the tool
    /// list use toolgate's own login (`toolgate mcp login NAME`). Default false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub per_user: bool,
}

impl OAuthConfig {
    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// `[mcp] oauth_credentials_store`: where OAuth tokens are kept.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum CredentialStoreMode {
    /// The OS credential store when one answers, else the file. Default.
    #[default]
    Auto,
    /// The OS credential store only; an error when there is none.
    Keyring,
    /// The 0600 file under the user config folder.
    File,
}
