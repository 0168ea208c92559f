//! What of toolgate's own the processes it starts (`run_shell` commands, mounted stdio
//! servers) never see: the variables holding its secrets, withheld from their environment,
//! and the files holding them, hidden from their sandbox's view. Which ones is decided here,
//! from the config; `toolgate-contain`'s `Sandbox` enforces it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use toolgate_config::Config;
use toolgate_contain::Sandbox;
use toolgate_fs::Roots;
use toolgate_providers::Kind;

/// toolgate's secret variables: its token's (`[server] token_env`), the provider keys (the
/// well-known defaults and every `api_key_env`), and the variables `[mcp_servers]` read
/// OAuth client secrets and bearer tokens from. `TOOLGATE_*` variables that look secret are
/// withheld without being named here (`Sandbox::withholds`).
pub fn secret_variables(config: &Config) -> BTreeSet<String> {
    let mut names = BTreeSet::from([config.server.token_env.clone()]);
    names.extend([Kind::OpenAi, Kind::Anthropic].map(|k| k.default_key_env().to_owned()));
    names.extend(
        config
            .providers
            .values()
            .filter_map(|p| p.api_key_env.clone()),
    );
    for server in config.mcp_servers.values() {
        names.extend(server.bearer_token_env.clone());
        let oauth = server.oauth.as_ref();
        names.extend(oauth.and_then(|o| o.client_secret_env.clone()));
    }
    names
}

/// toolgate's own stores: its config folder (`~/.config/toolgate`: the user config, which
/// may hold servers' `env` and `headers`, the OAuth tokens in `mcp-oauth/`, the trust store)
/// and the trust file wherever it is configured.
pub fn secret_paths(config: &Config) -> Vec<PathBuf> {
    let dirs = toolgate_core::UserDirs::from_env();
    let own = dirs.config().map(|c| c.join("toolgate"));
    let trust = config
        .trust_file
        .clone()
        .filter(|file| own.as_ref().is_none_or(|own| !file.starts_with(own)));
    own.into_iter().chain(trust).collect()
}

/// The sandbox of `run_shell` commands: `[shell]`'s, with toolgate's secrets kept out.
pub fn shell_sandbox(config: &Config, roots: &Roots) -> Sandbox {
    config
        .shell
        .sandbox(&roots.roots())
        .withholding(secret_variables(config))
        .hiding(secret_paths(config))
}

/// The sandbox of mounted stdio servers (`[mcp] sandbox`): the modes of `[shell] sandbox`,
/// writing where commands may write, hiding what commands cannot read, with toolgate's
/// secrets kept out (a server's own `env` still sets what it names).
pub fn mcp_sandbox(config: &Config, roots: &Roots) -> Sandbox {
    Sandbox::new(
        config.mcp.sandbox,
        config.mcp.sandbox_network,
        &roots.roots(),
        &config.shell.sandbox_writable,
    )
    .for_section("mcp")
    .withholding(secret_variables(config))
    .hiding(secret_paths(config))
    .hiding(config.shell.sandbox_hide.iter().cloned())
}
