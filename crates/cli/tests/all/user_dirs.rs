//! The user's folders: an empty or relative `XDG_*_HOME` or `HOME` must never make a file
//! in the working folder count as the user's own config.

use std::path::Path;

use crate::{project, toolgate};

/// Plants "user" config files where a relative config folder would find them: rules that
/// only the user may set (control files writable, a small read limit).
fn plant_user_config(dir: &Path) {
    for folder in ["toolgate", ".config/toolgate", "relative/toolgate"] {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        std::fs::write(
            dir.join(folder).join("config.toml"),
            "[permissions]\nallow_control_files = true\n\n[read]\nmax_lines = 1\n",
        )
        .unwrap();
    }
}

#[test]
fn an_empty_or_relative_config_folder_does_not_read_a_user_config_from_the_project() {
    let dir = project();
    plant_user_config(dir.path());
    let cases: [(&str, Option<&str>, Option<&str>); 4] = [
        ("empty XDG_CONFIG_HOME", Some(""), None),
        ("relative XDG_CONFIG_HOME", Some("relative"), None),
        ("empty HOME", None, Some("")),
        ("relative HOME", None, Some(".")),
    ];
    for (case, xdg, home) in cases {
        let with_env = |cmd: &mut std::process::Command| {
            match xdg {
                Some(v) => cmd.env("XDG_CONFIG_HOME", v),
                None => cmd.env_remove("XDG_CONFIG_HOME"),
            };
            if let Some(h) = home {
                cmd.env("HOME", h);
            }
        };
        let mut cmd = toolgate(dir.path());
        with_env(&mut cmd);
        let out = cmd.args(["config", "show"]).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success(), "{case}: {text}");
        let line = text
            .lines()
            .find(|l| l.starts_with("read.max_lines ="))
            .unwrap();
        assert!(line.ends_with("# default"), "{case}: {line}");

        let mut cmd = toolgate(dir.path());
        with_env(&mut cmd);
        let out = cmd
            .args([
                "call",
                "write_file",
                r#"{"path":".mcp.json","content":"{\"mcpServers\":{}}"}"#,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{case}: {err}");
        assert!(err.contains("control file"), "{case}: {err}");
        assert!(!dir.path().join(".mcp.json").exists(), "{case}");
    }
}
