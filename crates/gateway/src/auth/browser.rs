//! Opening the authorization URL: `$BROWSER` when set (the command gets the URL as its
//! argument, or in place of a `%s`), else the platform opener (`xdg-open`, `open`,
//! `start`). The browser is started and left alone; a task reaps it.

use std::process::Stdio;

/// Starts a browser on `url`.
pub(crate) fn open(url: &str) -> Result<(), String> {
    let (program, args) = command(std::env::var("BROWSER").ok().as_deref(), url)?;
    let mut child = tokio::process::Command::new(&program)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    Ok(())
}

/// The program and arguments that open `url`, from `$BROWSER` (its first `:`-separated
/// command) or the platform's opener.
fn command(browser: Option<&str>, url: &str) -> Result<(String, Vec<String>), String> {
    if let Some(first) = browser.and_then(|b| b.split(':').map(str::trim).find(|c| !c.is_empty())) {
        let mut words = first.split_whitespace().map(str::to_owned);
        let program = words.next().ok_or("`$BROWSER` is empty")?;
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
        Ok((
            "cmd".to_owned(),
            vec![
                "/C".to_owned(),
                "start".to_owned(),
                String::new(),
                url.to_owned(),
            ],
        ))
    } else {
        Ok(("xdg-open".to_owned(), vec![url.to_owned()]))
    }
}

#[cfg(test)]
mod tests {
    use super::command;

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
