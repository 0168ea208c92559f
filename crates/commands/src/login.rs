//! `toolgate mcp login NAME` and `toolgate mcp logout NAME`: a human logs toolgate in to a
//! remote MCP server that needs OAuth, or forgets that login.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;
use toolgate_gateway::{AuthStatus, LoginOptions, ServerSpec, Transport};
use toolgate_runtime::Runtime;

/// Arguments of `toolgate mcp login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Server name, as in `toolgate mcp list`.
    name: String,
    /// Only print the URL to open (for a remote shell); do not start a browser. The
    /// callback still arrives on this machine's loopback, so forward its port
    /// (`oauth.callback_port`) when the browser runs elsewhere.
    #[arg(long)]
    no_browser: bool,
}

/// Arguments of `toolgate mcp logout`.
#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// Server name, as in `toolgate mcp list`.
    name: String,
}

/// The remote server named `name`, or the error already printed.
fn remote(runtime: &Runtime, name: &str) -> Result<ServerSpec, ExitCode> {
    let Some(spec) = runtime.gateway.servers().find(|s| s.name == name) else {
        let names: Vec<String> = runtime.gateway.servers().map(|s| s.name).collect();
        eprintln!(
            "toolgate: no MCP server named `{name}` ({})",
            if names.is_empty() {
                "none is configured".to_owned()
            } else {
                format!("configured: {}", names.join(", "))
            }
        );
        return Err(ExitCode::from(crate::USAGE_ERROR));
    };
    if !matches!(spec.transport, Transport::Http { .. }) {
        eprintln!(
            "toolgate: `{name}` is a stdio server; only remote (url) servers log in with OAuth"
        );
        return Err(ExitCode::from(crate::USAGE_ERROR));
    }
    Ok(spec)
}

pub async fn login(runtime: &Runtime, args: &LoginArgs) -> ExitCode {
    let spec = match remote(runtime, &args.name) {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    let Some(store) = runtime.gateway.token_store() else {
        eprintln!(
            "toolgate: no place to keep OAuth tokens: no OS credential store answers and no user config folder is known (set HOME or XDG_CONFIG_HOME)"
        );
        return ExitCode::FAILURE;
    };
    let options = LoginOptions {
        open_browser: !args.no_browser,
        ..LoginOptions::default()
    };
    let say = |line: &str| outln!("{line}");
    match toolgate_gateway::login(&spec, &store, &options, &say).await {
        Ok(status) => {
            outln!(
                "logged in to `{}`{}; tokens kept in {}",
                spec.name,
                describe_status(&status)
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default(),
                store.describe()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("toolgate: login to `{}` failed: {e}", spec.name);
            ExitCode::FAILURE
        }
    }
}

pub fn logout(runtime: &Runtime, args: &LogoutArgs) -> ExitCode {
    let spec = match remote(runtime, &args.name) {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    let Transport::Http { url, .. } = &spec.transport else {
        return ExitCode::FAILURE;
    };
    let Some(store) = runtime.gateway.token_store() else {
        eprintln!("toolgate: no OAuth token store; nothing to log out of");
        return ExitCode::FAILURE;
    };
    match store.forget(url) {
        Ok(true) => {
            outln!(
                "logged out of `{}`: its tokens were removed from {}",
                spec.name,
                store.describe()
            );
            ExitCode::SUCCESS
        }
        Ok(false) => {
            outln!("`{}` had no login kept; nothing to do", spec.name);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("toolgate: logout of `{}` failed: {e}", spec.name);
            ExitCode::FAILURE
        }
    }
}

/// `logged in as ada@example.com, expires 2026-12-02 07:10 UTC`, `needs login`.
pub fn describe_status(status: &AuthStatus) -> Option<String> {
    match status {
        AuthStatus::LoggedIn {
            subject,
            expires_at,
            refreshable,
        } => {
            let mut text = match subject {
                Some(who) => format!("logged in as {who}"),
                None => "logged in".to_owned(),
            };
            if let Some(at) = expires_at {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or_default();
                let word = if *at <= now { "expired" } else { "expires" };
                text.push_str(&format!(", {word} {}", utc(*at)));
                if *refreshable {
                    text.push_str(" (renewed by its refresh token)");
                }
            }
            Some(text)
        }
        AuthStatus::NeedsLogin => Some("needs login".to_owned()),
        _ => None,
    }
}

/// `2026-12-02 07:10 UTC` from seconds since the epoch (civil-from-days, proleptic
/// Gregorian).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rem / 3_600,
        rem % 3_600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn utc_dates_read_as_calendar_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_798_761_600 + 3_660), "2027-01-01 01:01 UTC");
    }
}
