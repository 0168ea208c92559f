//! The spill folder: a project file may put it only inside the project or in toolgate's own
//! cache folder, and a spill folder outside the project lets tools read only the spill
//! files toolgate wrote there, never through a symlink.

use std::path::Path;
use std::process::Output;

use crate::{project, toolgate};

fn set_spill_dir(dir: &Path, spill: &str) {
    std::fs::create_dir_all(dir.join(".toolgate")).unwrap();
    std::fs::write(
        dir.join(".toolgate/config.toml"),
        format!("[budget]\nspill_dir = {}\n", toml_string(spill)),
    )
    .unwrap();
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `toolgate call` in `dir` with `home` as the home folder (outside the project, as a real
/// one is: inside it the project's own rules would apply).
fn call(dir: &Path, home: &Path, tool: &str, args: serde_json::Value) -> Output {
    toolgate(dir)
        .env("HOME", home)
        .args(["call", tool, &args.to_string()])
        .output()
        .unwrap()
}

#[test]
fn a_project_file_cannot_make_another_cache_folder_the_spill_folder() {
    let dir = project();
    let home = tempfile::tempdir().unwrap();
    let cache = home.path().join(".cache");
    std::fs::create_dir_all(cache.join("huggingface")).unwrap();
    std::fs::write(cache.join("huggingface/token"), "hf_SECRET\n").unwrap();
    let token = cache.join("huggingface/token");
    for spill in [
        cache.display().to_string(),
        cache.join("huggingface").display().to_string(),
        cache.join("toolgate").display().to_string(),
        "~/.cache".to_owned(),
    ] {
        set_spill_dir(dir.path(), &spill);
        let out = call(
            dir.path(),
            home.path(),
            "read_file",
            serde_json::json!({"path": token.display().to_string()}),
        );
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(!stdout.contains("hf_SECRET"), "{spill}: {stdout}");
        assert_eq!(out.status.code(), Some(2), "{spill}: {stderr}");
        assert!(
            stderr.contains("budget.spill_dir") && stderr.contains("toolgate"),
            "{spill}: {stderr}"
        );
    }
    // The same through $XDG_CACHE_HOME.
    let xdg = home.path().join(".xdg-cache");
    std::fs::create_dir_all(xdg.join("huggingface")).unwrap();
    std::fs::write(xdg.join("huggingface/token"), "hf_SECRET\n").unwrap();
    set_spill_dir(dir.path(), &xdg.join("huggingface").display().to_string());
    let out = toolgate(dir.path())
        .env("HOME", home.path())
        .env("XDG_CACHE_HOME", &xdg)
        .args([
            "call",
            "read_file",
            &serde_json::json!({"path": xdg.join("huggingface/token")}).to_string(),
        ])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("hf_SECRET"));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_spill_folder_outside_the_project_shows_only_the_spill_files_toolgate_wrote() {
    let dir = project();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "OUTSIDE_SECRET\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    let spill = home.path().join(".cache/toolgate/spill");
    std::fs::create_dir_all(&spill).unwrap();
    // Another program's file, a spill-named symlink out, and a real spill file.
    std::fs::write(spill.join("token"), "PLANTED_SECRET\n").unwrap();
    let link = "1700000000000-00001-0001-link.txt";
    std::os::unix::fs::symlink(outside.path().join("secret"), spill.join(link)).unwrap();
    std::os::unix::fs::symlink(outside.path(), spill.join("dir_link")).unwrap();
    let real = "1700000000000-00001-0002-run_shell.txt";
    std::fs::write(spill.join(real), "spilled output\n").unwrap();
    set_spill_dir(dir.path(), &spill.display().to_string());

    let read = |name: &str| {
        call(
            dir.path(),
            home.path(),
            "read_file",
            serde_json::json!({"path": spill.join(name).display().to_string()}),
        )
    };
    let out = read(real);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("spilled output"));
    for name in ["token", link, "dir_link/secret"] {
        let out = read(name);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            !stdout.contains("SECRET"),
            "{name} must not be readable: {stdout}"
        );
        assert_eq!(out.status.code(), Some(1), "{name}");
    }
    let out = read("token");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a spill file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = call(
        dir.path(),
        home.path(),
        "list_dir",
        serde_json::json!({"path": spill.display().to_string()}),
    );
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(listing.contains(real), "{listing}");
    for hidden in ["token", link, "dir_link"] {
        assert!(!listing.contains(hidden), "{hidden} listed: {listing}");
    }
    let out = call(
        dir.path(),
        home.path(),
        "grep",
        serde_json::json!({"pattern": "SECRET", "path": spill.display().to_string()}),
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("SECRET\n"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_spill_folder_reached_through_a_symlink_is_refused() {
    let dir = project();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("o.txt"), "OUTSIDE\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    let toolgate_cache = home.path().join(".cache/toolgate");
    std::fs::create_dir_all(&toolgate_cache).unwrap();
    std::os::unix::fs::symlink(outside.path(), toolgate_cache.join("link")).unwrap();
    set_spill_dir(
        dir.path(),
        &toolgate_cache.join("link").display().to_string(),
    );
    let out = call(
        dir.path(),
        home.path(),
        "read_file",
        serde_json::json!({"path": outside.path().join("o.txt").display().to_string()}),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("OUTSIDE"));
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("symlink"), "{stderr}");
}
