//! toolgate's own secrets stay out of what it starts: its
//! token and provider keys out of the environment of `run_shell` commands and mounted stdio
//! servers, its OAuth tokens and the `[shell] sandbox_hide` paths out of a sandboxed
//! command's or server's view. Each attack first runs where it must succeed (a variable
//! passed by name, the sandbox off), so a miss below proves the defence.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::{project, run_shell, toolgate, user_config};

/// toolgate with secrets in its environment, as in team mode.
fn with_secrets(dir: &Path) -> Command {
    let mut cmd = toolgate(dir);
    cmd.env("TOOLGATE_TOKEN", "team-token-secret")
        .env("OPENAI_API_KEY", "sk-openai-secret")
        .env("ANTHROPIC_API_KEY", "sk-anthropic-secret")
        .env("MINE_KEY", "sk-configured-secret")
        .env(
            "TOOLGATE_MCP__SHARED_STORE",
            "redis://:store-secret@localhost",
        )
        .env("USERS_OWN_TOOL_SETTING", "users-own-value");
    cmd
}

#[test]
fn run_shell_env_shows_no_toolgate_secret_but_what_env_pass_names() {
    let dir = project();
    let config = "[shell]\nenv_pass = [\"OPENAI_API_KEY\"]\n\
                  [providers.mine]\nkind = \"openai\"\napi_key_env = \"MINE_KEY\"\n";
    user_config(dir.path(), config);
    // Only the lines that matter: the whole of `env` would come back as a compressed log.
    let text = run_shell(
        &mut with_secrets(dir.path()),
        "env | grep -E 'secret|users-own|^PATH=|^HOME='",
    );
    for secret in [
        "team-token-secret",
        "sk-anthropic-secret",
        "sk-configured-secret",
        "store-secret",
    ] {
        assert!(
            !text.contains(secret),
            "{secret} reached the command: {text}"
        );
    }
    // Passed on by name; the user's own environment stays whole.
    for kept in [
        "OPENAI_API_KEY=sk-openai-secret",
        "USERS_OWN_TOOL_SETTING=users-own-value",
        "PATH=",
        "HOME=",
    ] {
        assert!(text.contains(kept), "{kept} missing: {text}");
    }
}

#[test]
fn a_mounted_stdio_server_gets_no_toolgate_secret_but_what_its_env_sets() {
    let dir = project();
    let dump = dir.path().join("server-env");
    user_config(
        dir.path(),
        &format!(
            "[mcp_servers.dump]\ncommand = \"sh\"\nargs = [\"-c\", \"env > {}; exit 3\"]\n\
             env = {{ ANTHROPIC_API_KEY = \"set-by-env-table\" }}\nstartup_timeout_sec = 30\n",
            dump.display()
        ),
    );
    let out = with_secrets(dir.path())
        .args(["mcp", "list", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("exit status 3"), "the server ran: {text}");
    let env = std::fs::read_to_string(&dump).unwrap();
    for secret in [
        "team-token-secret",
        "sk-openai-secret",
        "sk-anthropic-secret",
    ] {
        assert!(!env.contains(secret), "{secret} reached the server: {env}");
    }
    for kept in [
        "ANTHROPIC_API_KEY=set-by-env-table",
        "USERS_OWN_TOOL_SETTING=users-own-value",
        "PATH=",
        "HOME=",
    ] {
        assert!(env.contains(kept), "{kept} missing: {env}");
    }
}

/// An OAuth token file in toolgate's store, a key in a folder `sandbox_hide` names and an
/// ordinary file, all under the test's home and config folders.
struct Stores {
    token: std::path::PathBuf,
    key: std::path::PathBuf,
    notes: std::path::PathBuf,
}

impl Stores {
    fn new(dir: &Path) -> Self {
        let oauth = dir.join(".no-user-config/toolgate/mcp-oauth");
        let ssh = dir.join(".no-home/.ssh");
        std::fs::create_dir_all(&oauth).unwrap();
        std::fs::create_dir_all(&ssh).unwrap();
        let stores = Self {
            token: oauth.join("server.json"),
            key: ssh.join("id_ed25519"),
            notes: dir.join(".no-home/notes.txt"),
        };
        std::fs::write(
            &stores.token,
            "{\"refresh_token\":\"oauth-refresh-secret\"}",
        )
        .unwrap();
        std::fs::write(&stores.key, "private-key-secret").unwrap();
        std::fs::write(&stores.notes, "ordinary-notes").unwrap();
        stores
    }

    /// Reads each file, also through `/proc/1/root` and the parent's root (another mount
    /// namespace's view), and lists the hidden folder.
    fn probe(&self) -> String {
        let (t, k, n) = (
            self.token.display(),
            self.key.display(),
            self.notes.display(),
        );
        format!(
            "cat {t} {k} {n}; echo listing:$(ls -A {ssh}):; cat /proc/1/root{t} /proc/$PPID/root{t} 2>&1; true",
            ssh = self.key.parent().unwrap_or(&self.key).display()
        )
    }
}

#[test]
fn sandboxed_commands_read_no_oauth_token_nor_a_sandbox_hide_path() {
    let dir = project();
    let stores = Stores::new(dir.path());
    let hide = "sandbox_hide = [\"~/.ssh\"]\n";
    user_config(dir.path(), &format!("[shell]\n{hide}"));
    let open = run_shell(&mut with_secrets(dir.path()), &stores.probe());
    for readable in [
        "oauth-refresh-secret",
        "private-key-secret",
        "ordinary-notes",
    ] {
        assert!(
            open.contains(readable),
            "sandbox off reads everything: {open}"
        );
    }
    for mode in ["read-only", "workspace-write"] {
        user_config(
            dir.path(),
            &format!("[shell]\nsandbox = \"{mode}\"\n{hide}"),
        );
        let text = run_shell(&mut with_secrets(dir.path()), &stores.probe());
        assert!(text.contains("ordinary-notes"), "{mode}: {text}");
        assert!(
            text.contains("listing::"),
            "{mode} lists the hidden folder: {text}"
        );
        for secret in ["oauth-refresh-secret", "private-key-secret"] {
            assert!(!text.contains(secret), "{mode} read {secret}: {text}");
        }
    }
}

#[test]
fn a_sandboxed_mounted_server_reads_no_oauth_token_nor_a_sandbox_hide_path() {
    let dir = project();
    let stores = Stores::new(dir.path());
    let server = |sandbox: &str| {
        user_config(
            dir.path(),
            &format!(
                "[shell]\nsandbox_hide = [\"~/.ssh\"]\n[mcp]\nsandbox = \"{sandbox}\"\n\
                 [mcp_servers.reader]\ncommand = \"sh\"\nargs = [\"-c\", {probe}]\n\
                 startup_timeout_sec = 30\n",
                probe = json!(format!("({}) >&2; exit 3", stores.probe()))
            ),
        );
        let out = with_secrets(dir.path())
            .args(["mcp", "list", "--json"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(text.contains("exit status 3"), "the server ran: {text}");
        text
    };
    let open = server("off");
    assert!(open.contains("ordinary-notes"), "{open}");
    assert!(open.contains("oauth-refresh-secret"), "{open}");
    let text = server("read-only");
    assert!(text.contains("ordinary-notes"), "{text}");
    for secret in ["oauth-refresh-secret", "private-key-secret"] {
        assert!(!text.contains(secret), "read-only read {secret}: {text}");
    }
}
