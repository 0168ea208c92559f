//! Opening the authorization URL: `$BROWSER` when set (the command gets the URL as its
//! argument, or in place of a `%s`), else the platform opener (`xdg-open`, `open`,
//! `rundll32 url.dll,FileProtocolHandler`), never through a shell. The browser is started
//! and left alone; a task reaps it.
//!
//! The URL comes from a remote authorization server's metadata, so it is hostile until
//! checked: only `https:`, or `http:` to this machine, reaches a browser or a page
//! ([`browsable`]). A `file:` or `javascript:` URL, or a scheme bound to another program, is
//! how a server runs code on the user's machine (mcp-remote's CVE-2025-6514).

use std::process::Stdio;

/// Why a login URL is not given to a browser or a page.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginUrlError {
    /// It does not parse.
    #[error("`{url}` is not a URL: {source}")]
    NotAUrl {
        /// The URL as the authorization server gave it.
        url: String,
        /// Why it does not parse.
        #[source]
        source: url::ParseError,
    },
    /// Its scheme (or host) is not safe to open: only `https:`, or `http:` to this machine.
    #[error(
        "the authorization server's login URL uses `{scheme}:`{}, which toolgate does not open: only https (or http to this machine) is safe to give a browser. Check the server's OAuth metadata (`authorization_endpoint`) with its operator",
        if scheme == "http" { " to another host" } else { "" }
    )]
    Unsafe {
        /// The URL's scheme.
        scheme: String,
    },
}

/// Why no browser was started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// The URL may not be opened.
    #[error(transparent)]
    Url(#[from] LoginUrlError),
    /// `$BROWSER` names no command.
    #[error("`$BROWSER` is empty")]
    EmptyBrowser,
    /// The browser's program did not start.
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why it did not start.
        #[source]
        source: std::io::Error,
    },
}

/// `url` normalised, when it may be opened in a browser or linked from a page: `https:`,
/// or `http:` to a loopback host (a test or local authorization server). Else why not.
pub(crate) fn browsable(url: &str) -> Result<String, LoginUrlError> {
    let parsed = url::Url::parse(url).map_err(|source| LoginUrlError::NotAUrl {
        url: url.to_owned(),
        source,
    })?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" if parsed.host().is_some() => Ok(parsed.into()),
        "http" if loopback => Ok(parsed.into()),
        scheme => Err(LoginUrlError::Unsafe {
            scheme: scheme.to_owned(),
        }),
    }
}

/// Starts a browser on `url`, when it is [`browsable`].
pub(crate) fn open(url: &str) -> Result<(), OpenError> {
    let url = browsable(url)?;
    let (program, args) = command(std::env::var("BROWSER").ok().as_deref(), &url)?;
    let mut child = tokio::process::Command::new(&program)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| OpenError::Spawn {
            program: program.clone(),
            source,
        })?;
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    Ok(())
}

/// The program and arguments that open `url`, from `$BROWSER` (its first `:`-separated
/// command) or the platform's opener.
fn command(browser: Option<&str>, url: &str) -> Result<(String, Vec<String>), OpenError> {
    if let Some(first) = browser.and_then(|b| b.split(':').map(str::trim).find(|c| !c.is_empty())) {
        let mut words = first.split_whitespace().map(str::to_owned);
        let program = words.next().ok_or(OpenError::EmptyBrowser)?;
        let mut args: Vec<String> = words.collect();
        if args.iter().any(|a| a.contains("%s")) {
            args = args.into_iter().map(|a| a.replace("%s", url)).collect();
        } else {
            args.push(url.to_owned());
        }
        return Ok((program, args));
    }
    if cfg!(target_os = "macos") {
        Ok(("open".to_owned(), vec![url.to_owned()]))
    } else if cfg!(windows) {
        // Not `cmd /C start`: cmd parses the line, and the `&` of every OAuth URL would
        // end the command and start the next.
        Ok((
            "rundll32".to_owned(),
            vec!["url.dll,FileProtocolHandler".to_owned(), url.to_owned()],
        ))
    } else {
        Ok(("xdg-open".to_owned(), vec![url.to_owned()]))
    }
}

#[cfg(test)]
mod tests {
    use super::{browsable, command};

    #[test]
    fn only_https_and_loopback_http_urls_reach_a_browser() {
        for good in [
            "https://as.example/auth?a=1&state=s",
            "http://127.0.0.1:9/auth",
            "http://localhost/auth",
            "http://[::1]:8/auth",
        ] {
            assert!(browsable(good).is_ok(), "{good}");
        }
        for bad in [
            "file:///etc/passwd?response_type=code",
            "javascript:alert(1)//?state=s",
            "http://as.example/auth",
            "ms-settings:display",
            "data:text/html,<script>1</script>",
            "not a url",
            "HTTPS://[::1",
        ] {
            let why = browsable(bad).unwrap_err().to_string();
            assert!(
                why.contains("not") || why.contains("does not open"),
                "{bad}: {why}"
            );
        }
        // Refused before any program starts.
        assert!(super::open("file:///etc/passwd").is_err());
    }

    #[test]
    fn browser_variable_gets_the_url_as_argument_or_in_place_of_percent_s() {
        let (p, a) = command(Some("my-browser --new-tab"), "http://x/a").unwrap();
        assert_eq!(
            (p.as_str(), a),
            (
                "my-browser",
                vec!["--new-tab".to_owned(), "http://x/a".to_owned()]
            )
        );
        let (p, a) = command(Some("w3m %s:firefox"), "http://x/a").unwrap();
        assert_eq!((p.as_str(), a), ("w3m", vec!["http://x/a".to_owned()]));
        let (p, _) = command(None, "http://x").unwrap();
        assert!(!p.is_empty());
    }
}
