//! `write_file` and `edit_file` (the unique-match contract): atomic writes that keep
//! permissions, exact unique replacement, CRLF, literal `$` sequences, stale-file refusal
//! and failure injected between temp write and rename.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;
use toolgate_core::TypedTool;
use toolgate_fs::{BeforeRename, EditFileTool, WriteFileTool};

use crate::support::{Project, SECRET, assert_cut, field, str_field, u64_field};

fn mode(path: &Path) -> u32 {
    fs_err::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Names in `dir`, sorted (to see leftover temporary files).
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn write_file_creates_parents_and_replaces_keeping_permissions() {
    let p = Project::new();
    let s = p.session();
    let out = s
        .ok(
            "write_file",
            json!({ "path": "new/deep/a.txt", "content": "one\ntwo\n" }),
        )
        .await;
    assert_eq!(out.text, "Created `new/deep/a.txt` (2 lines, 8 bytes).");
    assert_eq!(
        fs_err::read_to_string(p.root.join("new/deep/a.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert_eq!(field(&out, "created"), Some(json!(true)));
    assert_eq!(u64_field(&out, "bytes"), Some(8));
    assert_cut(&out, None);

    let script = p.write("run.sh", "#!/bin/sh\n");
    fs_err::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    let out = s
        .ok(
            "write_file",
            json!({ "path": "run.sh", "content": "#!/bin/sh\necho hi\n" }),
        )
        .await;
    assert!(out.text.starts_with("Replaced `run.sh`"), "{}", out.text);
    assert_eq!(field(&out, "created"), Some(json!(false)));
    assert_eq!(mode(&script), 0o750, "permissions kept");
    assert_eq!(
        fs_err::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho hi\n"
    );
    assert_eq!(names(&p.root), ["new", "run.sh"], "no temporary files left");

    // A symlink inside the root is written through, and stays a symlink.
    p.symlink("run.sh", "link.sh");
    s.ok("write_file", json!({ "path": "link.sh", "content": "x\n" }))
        .await;
    assert!(
        fs_err::symlink_metadata(p.root.join("link.sh"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs_err::read_to_string(&script).unwrap(), "x\n");
}

#[tokio::test]
async fn write_file_refuses_what_it_must_not_touch() {
    let p = Project::new();
    fs_err::create_dir(p.root.join("dir")).unwrap();
    p.symlink(&p.outside, "out");
    let s = p.session();
    let err = s
        .err("write_file", json!({ "path": "dir", "content": "x" }))
        .await;
    assert!(err.contains("is a folder"), "{err}");
    for path in [
        "../outside/secret.txt",
        "out/secret.txt",
        "out/new.txt",
        "../root_evil/x",
    ] {
        let err = s
            .err("write_file", json!({ "path": path, "content": "pwned" }))
            .await;
        assert!(err.contains("outside the allowed roots"), "{path}: {err}");
    }
    assert_eq!(
        fs_err::read_to_string(p.outside.join("secret.txt")).unwrap(),
        format!("{SECRET}\n")
    );
    assert!(!p.outside.join("new.txt").exists());
}

#[tokio::test]
async fn edit_replaces_a_unique_match_and_returns_a_diff() {
    let p = Project::new();
    let file = p.write("src/lib.rs", "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n");
    let s = p.session();
    let out = s
        .ok(
            "edit_file",
            json!({ "path": "src/lib.rs", "old_string": "fn b() {\n    2", "new_string": "fn b() {\n    20" }),
        )
        .await;
    assert_eq!(
        fs_err::read_to_string(&file).unwrap(),
        "fn a() {\n    1\n}\n\nfn b() {\n    20\n}\n"
    );
    assert_eq!(
        out.text,
        "Edited `src/lib.rs`: 1 occurrence replaced at line 5.\n--- src/lib.rs\n+++ src/lib.rs\n@@ -3,5 +3,5 @@\n }\n \n fn b() {\n-    2\n+    20\n }\n"
    );
    assert_eq!(u64_field(&out, "replacements"), Some(1));
    assert_eq!(str_field(&out, "path").as_deref(), Some("src/lib.rs"));
    assert_cut(&out, None);
}

#[tokio::test]
async fn no_match_says_to_read_the_file_first() {
    let p = Project::new();
    p.write("a.txt", "alpha\nbeta\n");
    let s = p.session();
    let err = s
        .err(
            "edit_file",
            json!({ "path": "a.txt", "old_string": "gamma", "new_string": "x" }),
        )
        .await;
    assert!(err.contains("old_string was not found in `a.txt`"), "{err}");
    assert!(
        err.contains("Read the file first (read_file) and retry with its exact current text"),
        "{err}"
    );
    // Text copied with read_file's line numbers gets a pointed hint.
    let err = s
        .err(
            "edit_file",
            json!({ "path": "a.txt", "old_string": "     1\talpha", "new_string": "x" }),
        )
        .await;
    assert!(err.contains("line-number prefixes"), "{err}");
    let err = s
        .err(
            "edit_file",
            json!({ "path": "missing.txt", "old_string": "a", "new_string": "b" }),
        )
        .await;
    assert!(err.contains("use write_file to create one"), "{err}");
    let err = s
        .err(
            "edit_file",
            json!({ "path": "a.txt", "old_string": "", "new_string": "b" }),
        )
        .await;
    assert!(err.contains("old_string is empty"), "{err}");
    let err = s
        .err(
            "edit_file",
            json!({ "path": "a.txt", "old_string": "beta", "new_string": "beta" }),
        )
        .await;
    assert!(err.contains("identical"), "{err}");
    assert_eq!(
        fs_err::read_to_string(p.root.join("a.txt")).unwrap(),
        "alpha\nbeta\n"
    );
}

#[tokio::test]
async fn several_matches_need_context_or_replace_all() {
    let p = Project::new();
    let file = p.write("a.py", "x = 1\nprint(x)\ny = 2\nprint(x)\n\nprint(x)\n");
    let s = p.session();
    let err = s
        .err(
            "edit_file",
            json!({ "path": "a.py", "old_string": "print(x)", "new_string": "print(y)" }),
        )
        .await;
    assert!(
        err.contains(
            "old_string occurs 3 times in `a.py` (at lines 2, 4, 6); add surrounding lines"
        ),
        "{err}"
    );
    assert!(err.contains("replace_all: true"), "{err}");
    assert_eq!(
        fs_err::read_to_string(&file).unwrap(),
        "x = 1\nprint(x)\ny = 2\nprint(x)\n\nprint(x)\n"
    );
    // More context makes it unique.
    s.ok(
        "edit_file",
        json!({ "path": "a.py", "old_string": "y = 2\nprint(x)", "new_string": "y = 2\nprint(y)" }),
    )
    .await;
    assert_eq!(
        fs_err::read_to_string(&file).unwrap(),
        "x = 1\nprint(x)\ny = 2\nprint(y)\n\nprint(x)\n"
    );
    let out = s
        .ok("edit_file", json!({ "path": "a.py", "old_string": "print(x)", "new_string": "log(x)", "replace_all": true }))
        .await;
    assert_eq!(u64_field(&out, "replacements"), Some(2));
    assert!(
        out.text
            .starts_with("Edited `a.py`: 2 occurrences replaced at 2 places."),
        "{}",
        out.text
    );
    assert_eq!(
        fs_err::read_to_string(&file).unwrap(),
        "x = 1\nlog(x)\ny = 2\nprint(y)\n\nlog(x)\n"
    );
}

#[tokio::test]
async fn crlf_files_match_lf_text_and_stay_crlf() {
    let p = Project::new();
    let file = p.write("w.txt", "one\r\ntwo\r\nthree\r\n");
    let s = p.session();
    let out = s
        .ok("edit_file", json!({ "path": "w.txt", "old_string": "one\ntwo\n", "new_string": "one\nTWO\nand a half\n" }))
        .await;
    assert_eq!(
        fs_err::read(&file).unwrap(),
        b"one\r\nTWO\r\nand a half\r\nthree\r\n"
    );
    assert!(out.text.contains("CRLF line endings kept"), "{}", out.text);
    assert!(
        !out.text.contains('\r'),
        "the diff shows plain lines: {:?}",
        out.text
    );
    // A single-line old_string in a CRLF file: new lines in new_string become CRLF too.
    s.ok(
        "edit_file",
        json!({ "path": "w.txt", "old_string": "three", "new_string": "3\n4" }),
    )
    .await;
    assert_eq!(
        fs_err::read(&file).unwrap(),
        b"one\r\nTWO\r\nand a half\r\n3\r\n4\r\n"
    );
    // An LF file is left LF.
    let lf = p.write("u.txt", "a\nb\n");
    s.ok(
        "edit_file",
        json!({ "path": "u.txt", "old_string": "a\nb", "new_string": "a\nc" }),
    )
    .await;
    assert_eq!(fs_err::read(&lf).unwrap(), b"a\nc\n");
}

#[tokio::test]
async fn dollar_sequences_in_new_string_stay_literal() {
    let p = Project::new();
    let file = p.write("price.js", "const price = PRICE;\n");
    let s = p.session();
    s.ok(
        "edit_file",
        json!({ "path": "price.js", "old_string": "PRICE", "new_string": "`$& $1 $$ ${x} \\1`" }),
    )
    .await;
    assert_eq!(
        fs_err::read_to_string(&file).unwrap(),
        "const price = `$& $1 $$ ${x} \\1`;\n"
    );
}

#[tokio::test]
async fn bom_and_non_utf8() {
    let p = Project::new();
    let file = p.write("bom.txt", b"\xEF\xBB\xBFhello\n");
    let s = p.session();
    s.ok(
        "edit_file",
        json!({ "path": "bom.txt", "old_string": "hello", "new_string": "bye" }),
    )
    .await;
    assert_eq!(
        fs_err::read(&file).unwrap(),
        b"\xEF\xBB\xBFbye\n",
        "BOM kept"
    );
    p.write("latin1.txt", b"caf\xE9\n");
    let err = s
        .err(
            "edit_file",
            json!({ "path": "latin1.txt", "old_string": "caf", "new_string": "x" }),
        )
        .await;
    assert!(err.contains("not UTF-8"), "{err}");
}

#[tokio::test]
async fn a_file_changed_since_it_was_read_is_refused() {
    let p = Project::new();
    let file = p.write("a.txt", "alpha\nbeta\n");
    let s = p.session();
    s.ok("read_file", json!({ "path": "a.txt" })).await;
    // Someone else appends a line.
    fs_err::write(&file, "alpha\nbeta\ngamma\n").unwrap();
    let err = s
        .err(
            "edit_file",
            json!({ "path": "a.txt", "old_string": "beta", "new_string": "BETA" }),
        )
        .await;
    assert!(
        err.contains("`a.txt` changed on disk since this session last read or wrote it"),
        "{err}"
    );
    assert!(err.contains("read it again with read_file"), "{err}");
    assert_eq!(
        fs_err::read_to_string(&file).unwrap(),
        "alpha\nbeta\ngamma\n"
    );
    // After reading again, the edit goes through.
    s.ok("read_file", json!({ "path": "a.txt" })).await;
    s.ok(
        "edit_file",
        json!({ "path": "a.txt", "old_string": "beta", "new_string": "BETA" }),
    )
    .await;
    // Its own writes are not "changes": edits can follow each other, and write_file too.
    s.ok(
        "edit_file",
        json!({ "path": "a.txt", "old_string": "gamma", "new_string": "GAMMA" }),
    )
    .await;
    s.ok("write_file", json!({ "path": "a.txt", "content": "new\n" }))
        .await;
    s.ok(
        "edit_file",
        json!({ "path": "a.txt", "old_string": "new", "new_string": "newer" }),
    )
    .await;
    assert_eq!(fs_err::read_to_string(&file).unwrap(), "newer\n");

    // Same size, modification time set back: the change time still tells.
    let before = fs_err::metadata(&file).unwrap().modified().unwrap();
    fs_err::write(&file, "NEWER\n").unwrap();
    fs_err::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(before)
        .unwrap();
    let err = s
        .err(
            "edit_file",
            json!({ "path": "a.txt", "old_string": "NEWER", "new_string": "x" }),
        )
        .await;
    assert!(err.contains("changed on disk"), "{err}");
    // Replaced by rename (as editors save): a new inode.
    s.ok("read_file", json!({ "path": "a.txt" })).await;
    let other = p.write("other.txt", "NEWER\n");
    fs_err::rename(&other, &file).unwrap();
    let err = s
        .err(
            "edit_file",
            json!({ "path": "a.txt", "old_string": "NEWER", "new_string": "x" }),
        )
        .await;
    assert!(err.contains("changed on disk"), "{err}");
    // A session that never read the file may edit it: old_string is its proof of knowledge.
    let fresh = p.session();
    fresh
        .ok(
            "edit_file",
            json!({ "path": "a.txt", "old_string": "NEWER", "new_string": "x" }),
        )
        .await;
}

/// A `before_rename` hook that records what it saw and then fails.
fn failing_hook(seen: Arc<Mutex<Vec<(PathBuf, String)>>>) -> BeforeRename {
    Arc::new(move |tmp: &Path| {
        let content = fs_err::read_to_string(tmp).unwrap_or_default();
        seen.lock().unwrap().push((tmp.to_path_buf(), content));
        Err(std::io::Error::other("injected failure before rename"))
    })
}

#[tokio::test]
async fn a_failure_between_temp_write_and_rename_leaves_the_old_file() {
    let p = Project::new();
    let file = p.write("keep.txt", "original\n");
    fs_err::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = p
        .session()
        .with_tool(TypedTool::erased(
            EditFileTool::new(Arc::clone(&p.roots))
                .with_before_rename(failing_hook(Arc::clone(&seen))),
        ))
        .with_tool(TypedTool::erased(
            WriteFileTool::new(Arc::clone(&p.roots))
                .with_before_rename(failing_hook(Arc::clone(&seen))),
        ));

    let err = s
        .err(
            "edit_file",
            json!({ "path": "keep.txt", "old_string": "original", "new_string": "changed" }),
        )
        .await;
    assert!(
        err.contains("writing `keep.txt` failed, and the file was left as it was"),
        "{err}"
    );
    assert!(err.contains("injected failure"), "{err}");
    let err = s
        .err(
            "write_file",
            json!({ "path": "keep.txt", "content": "overwritten\n" }),
        )
        .await;
    assert!(err.contains("left as it was"), "{err}");
    let err = s
        .err(
            "write_file",
            json!({ "path": "fresh.txt", "content": "new\n" }),
        )
        .await;
    assert!(err.contains("left as it was"), "{err}");

    // The hook ran with the complete new content in a temporary file beside the target…
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].1, "changed\n");
    assert_eq!(seen[1].1, "overwritten\n");
    for (tmp, _) in seen.iter() {
        assert_eq!(tmp.parent(), Some(p.root.as_path()));
        assert!(!tmp.exists(), "temporary file removed after the failure");
    }
    // …and the target is untouched, with its permissions; no stray files.
    assert_eq!(fs_err::read_to_string(&file).unwrap(), "original\n");
    assert_eq!(mode(&file), 0o640);
    assert_eq!(names(&p.root), ["keep.txt"]);
}

#[tokio::test]
async fn model_written_control_files_are_refused() {
    // Regression: a model allowed only write_file wrote `.toolgate/config.toml` with
    // `deny = []` and a `.mcp.json` with a `sh -c …` server, loosening its own rules.
    let p = Project::new();
    p.write(".mcp.json", "{}\n");
    p.write("cfg_alias_target/.keep", "");
    std::os::unix::fs::symlink(p.root.join(".mcp.json"), p.root.join("alias.json")).unwrap();
    let s = p.session();
    for path in [
        ".toolgate/config.toml",
        ".mcp.json",
        "alias.json",
        "sub/project/.mcp.json",
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".codex/config.toml",
        ".cursor/mcp.json",
        ".TOOLGATE/config.toml",
    ] {
        let err = s
            .err(
                "write_file",
                json!({ "path": path, "content": "[permissions]\ndeny = []\n" }),
            )
            .await;
        assert!(err.contains("is a control file"), "{path}: {err}");
        assert!(
            err.contains("permissions.allow_control_files = true"),
            "names the rule: {err}"
        );
    }
    let err = s
        .err(
            "edit_file",
            json!({ "path": ".mcp.json", "old_string": "{}", "new_string": "{\"mcpServers\": {}}" }),
        )
        .await;
    assert!(err.contains("is a control file"), "{err}");
    assert_eq!(
        fs_err::read_to_string(p.root.join(".mcp.json")).unwrap(),
        "{}\n"
    );
    assert!(!p.root.join(".toolgate").exists());
    assert!(!p.root.join(".claude").exists());
    // Look-alikes are ordinary files.
    for path in [
        "mcp.json",
        ".claude/notes.json",
        "docs/.toolgate.md",
        ".cursor/rules.md",
    ] {
        s.ok("write_file", json!({ "path": path, "content": "x\n" }))
            .await;
    }
}

#[tokio::test]
async fn control_files_are_writable_when_the_user_allows_it() {
    let p = Project::new();
    let roots = std::sync::Arc::new(
        toolgate_fs::Roots::new([&p.root])
            .unwrap()
            .with_control_files(toolgate_fs::ControlFiles::Writable),
    );
    let s = crate::support::Session::new(&roots, toolgate_fs::SearchLimits::default());
    s.ok(
        "write_file",
        json!({ "path": ".mcp.json", "content": "{}\n" }),
    )
    .await;
    assert_eq!(
        fs_err::read_to_string(p.root.join(".mcp.json")).unwrap(),
        "{}\n"
    );
}

#[tokio::test]
async fn files_a_trusted_mcp_server_runs_are_refused_unless_the_user_allows_it() {
    // Regression: after `toolgate mcp trust`, rewriting the server's script (or planting
    // the package an `npx -y x` server would take) ran the model's code at the next start.
    let p = Project::new();
    p.write("server.sh", "exec srv\n");
    std::os::unix::fs::symlink(p.root.join("server.sh"), p.root.join("alias.sh")).unwrap();
    let launch = |path: &str, covers| toolgate_fs::LaunchFile {
        path: p.root.join(path),
        covers,
        server: "srv".to_owned(),
    };
    let files = vec![
        launch("server.sh", toolgate_fs::Covers::File),
        launch("node_modules/.bin/x", toolgate_fs::Covers::File),
        launch("node_modules/x", toolgate_fs::Covers::Folder),
    ];
    let roots = |control| {
        std::sync::Arc::new(
            toolgate_fs::Roots::new([&p.root])
                .unwrap()
                .with_control_files(control)
                .with_launch_files(files.clone()),
        )
    };
    let s = crate::support::Session::new(
        &roots(toolgate_fs::ControlFiles::Protected),
        toolgate_fs::SearchLimits::default(),
    );
    for path in [
        "server.sh",
        "./alias.sh",
        "node_modules/.bin/x",
        "node_modules/x/dist/index.js",
    ] {
        let err = s
            .err(
                "write_file",
                json!({ "path": path, "content": "touch pwned\n" }),
            )
            .await;
        assert!(
            err.contains(&format!("`{path}` is run by the MCP server `srv`"))
                && err.contains("toolgate mcp trust srv"),
            "{path}: {err}"
        );
    }
    let err = s
        .err(
            "edit_file",
            json!({ "path": "server.sh", "old_string": "exec", "new_string": "touch pwned; exec" }),
        )
        .await;
    assert!(err.contains("is run by the MCP server"), "{err}");
    assert_eq!(
        fs_err::read_to_string(p.root.join("server.sh")).unwrap(),
        "exec srv\n"
    );
    assert!(!p.root.join("node_modules").exists());
    // Neighbours are ordinary files.
    s.ok(
        "write_file",
        json!({ "path": "node_modules/xy/index.js", "content": "x\n" }),
    )
    .await;

    let s = crate::support::Session::new(
        &roots(toolgate_fs::ControlFiles::Writable),
        toolgate_fs::SearchLimits::default(),
    );
    s.ok(
        "edit_file",
        json!({ "path": "server.sh", "old_string": "exec", "new_string": "echo hi; exec" }),
    )
    .await;
    assert_eq!(
        fs_err::read_to_string(p.root.join("server.sh")).unwrap(),
        "echo hi; exec srv\n"
    );
}
