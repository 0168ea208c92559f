//! Adversarial confinement: every escape is refused, and no result — text, structured
//! fields, media or error — ever contains a byte of the secret planted outside the root.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate_fs::{Access, Roots};

use crate::support::{Project, SECRET, everything, tools};

/// `read_file path` must be refused without leaking; returns the error text.
async fn read_refused(p: &Project, path: &str) -> String {
    let result = p.read(json!({ "path": path })).await;
    assert!(
        !everything(&result).contains(SECRET),
        "read_file {path:?} leaked the secret: {}",
        everything(&result)
    );
    match result {
        Ok(out) => panic!("read_file {path:?} was allowed: {}", out.text),
        Err(e) => e.to_string(),
    }
}

/// `list_dir path` must be refused without leaking; returns the error text.
async fn list_refused(p: &Project, path: &str) -> String {
    let result = p.list(json!({ "path": path })).await;
    assert!(
        !everything(&result).contains(SECRET),
        "list_dir {path:?} leaked: {}",
        everything(&result)
    );
    match result {
        Ok(out) => panic!("list_dir {path:?} was allowed: {}", out.text),
        Err(e) => e.to_string(),
    }
}

fn assert_outside(msg: &str) {
    assert!(msg.contains("outside the allowed roots"), "{msg}");
}

#[tokio::test]
async fn dotdot_escapes_are_refused() {
    let p = Project::new();
    p.write("file.txt", "inside\n");
    for path in [
        "../outside/secret.txt",
        "./../outside/secret.txt",
        "../../../../../../../../outside/secret.txt",
        "..//outside//secret.txt",
        "../root_evil/secret.txt",
    ] {
        assert_outside(&read_refused(&p, path).await);
    }
    for path in ["..", "../outside", "../..", "../root_evil"] {
        assert_outside(&list_refused(&p, path).await);
    }
}

#[tokio::test]
async fn absolute_paths_outside_are_refused() {
    let p = Project::new();
    let secret = p.outside.join("secret.txt");
    assert_outside(&read_refused(&p, secret.to_str().unwrap()).await);
    assert_outside(&list_refused(&p, p.outside.to_str().unwrap()).await);
    assert_outside(&list_refused(&p, "/").await);
    assert_outside(&read_refused(&p, "/etc/hostname").await);
    // Absolute paths that go in and out again by `..`.
    let sneaky = format!("{}/../outside/secret.txt", p.root.display());
    assert_outside(&read_refused(&p, &sneaky).await);
}

#[tokio::test]
async fn absolute_path_inside_the_root_is_allowed() {
    let p = Project::new();
    let file = p.write("file.txt", "inside\n");
    let out = p.read_ok(json!({ "path": file.to_str().unwrap() })).await;
    assert_eq!(out.text, "     1\tinside\n");
}

#[tokio::test]
async fn sibling_sharing_the_roots_prefix_is_refused() {
    // `/x/root_evil` starts with the string `/x/root` but is not inside it (CVE-2025-53110).
    let p = Project::new();
    let evil = p.base.join("root_evil");
    let evil_secret = evil.join("secret.txt");
    assert_outside(&read_refused(&p, evil_secret.to_str().unwrap()).await);
    assert_outside(&list_refused(&p, evil.to_str().unwrap()).await);
    let err = p
        .roots
        .resolve(evil_secret.to_str().unwrap(), Access::Write);
    assert!(err.is_err(), "write into root_evil allowed: {err:?}");
    let err = p
        .roots
        .resolve(evil.join("new.txt").to_str().unwrap(), Access::Write);
    assert!(err.is_err(), "new file in root_evil allowed: {err:?}");
    // And via a symlink into the sibling.
    p.symlink(&evil, "evil_link");
    assert_outside(&read_refused(&p, "evil_link/secret.txt").await);
    assert_outside(&list_refused(&p, "evil_link").await);
}

#[tokio::test]
async fn symlink_to_a_file_outside_is_refused() {
    // CVE-2025-53109: a link inside the root that points outside.
    let p = Project::new();
    p.symlink(p.outside.join("secret.txt"), "leak.txt");
    p.symlink("../outside/secret.txt", "leak_rel.txt");
    assert_outside(&read_refused(&p, "leak.txt").await);
    assert_outside(&read_refused(&p, "leak_rel.txt").await);
    assert_outside(&read_refused(&p, "./leak.txt").await);
    // A chain: inside -> inside -> outside.
    p.symlink("leak.txt", "chain.txt");
    assert_outside(&read_refused(&p, "chain.txt").await);
    assert!(p.roots.resolve("leak.txt", Access::Write).is_err());
    assert!(p.roots.resolve("chain.txt", Access::Write).is_err());
}

#[tokio::test]
async fn symlink_to_a_folder_outside_is_refused() {
    let p = Project::new();
    p.symlink(&p.outside, "linkdir");
    assert_outside(&list_refused(&p, "linkdir").await);
    assert_outside(&list_refused(&p, "linkdir/").await);
    assert_outside(&list_refused(&p, "linkdir/sub").await);
    assert_outside(&read_refused(&p, "linkdir/secret.txt").await);
    assert_outside(&read_refused(&p, "linkdir/sub/secret.txt").await);
    assert_outside(&read_refused(&p, "linkdir/./sub/../secret.txt").await);
    // `linkdir/..` is the link target's parent, not the root.
    assert_outside(&read_refused(&p, "linkdir/../outside/secret.txt").await);
    // Listing the root shows the link but nothing behind it.
    let out = p.list_ok(json!({})).await;
    assert!(out.text.contains("linkdir -> "), "{}", out.text);
    assert!(!out.text.contains(SECRET));
}

#[tokio::test]
async fn new_file_under_a_symlinked_parent_pointing_outside_is_refused() {
    let p = Project::new();
    p.symlink(&p.outside, "linkdir");
    for path in [
        "linkdir/new.txt",
        "linkdir/newdir/new.txt",
        "linkdir/sub/new.txt",
        "linkdir/secret.txt",
    ] {
        let r = p.roots.resolve(path, Access::Write);
        assert!(r.is_err(), "write to {path} allowed: {r:?}");
    }
    // The same paths inside a real folder are fine.
    fs_err::create_dir(p.root.join("real")).unwrap();
    let ok = p
        .roots
        .resolve("real/newdir/new.txt", Access::Write)
        .unwrap();
    assert_eq!(ok, p.root.join("real/newdir/new.txt"));
}

#[tokio::test]
async fn missing_folder_then_dotdot_then_symlink_outside_is_refused() {
    // Regression: `missing/../linkdir/x` used to be resolved lexically past the missing folder,
    // so the symlink `linkdir` after the `..` was never followed and the path looked inside.
    let p = Project::new();
    p.symlink(&p.outside, "linkdir");
    p.symlink(p.outside.join("secret.txt"), "leak.txt");
    assert_outside(&read_refused(&p, "missing/../linkdir/secret.txt").await);
    assert_outside(&read_refused(&p, "missing/../leak.txt").await);
    assert_outside(&read_refused(&p, "a/b/../../linkdir/sub/secret.txt").await);
    assert_outside(&list_refused(&p, "missing/../linkdir").await);
    for path in [
        "missing/../linkdir/new.txt",
        "missing/../linkdir/secret.txt",
        "missing/../leak.txt",
    ] {
        let r = p.roots.resolve(path, Access::Write);
        assert!(r.is_err(), "write to {path} allowed: {r:?}");
    }
    // Going through a missing folder and back to a real one inside stays allowed.
    p.write("sub/file.txt", "ok\n");
    let out = p
        .read_ok(json!({ "path": "missing/../sub/file.txt" }))
        .await;
    assert_eq!(out.text, "     1\tok\n");
    let ok = p
        .roots
        .resolve("missing/../sub/new.txt", Access::Write)
        .unwrap();
    assert_eq!(ok, p.root.join("sub/new.txt"));
}

#[tokio::test]
async fn symlink_loops_are_refused_promptly() {
    let p = Project::new();
    p.symlink("loop_b", "loop_a");
    p.symlink("loop_a", "loop_b");
    p.symlink("self", "self");
    for path in ["loop_a", "loop_b", "self", "loop_a/x", "self/../x"] {
        let msg = tokio::time::timeout(Duration::from_secs(5), read_refused(&p, path))
            .await
            .unwrap_or_else(|_| panic!("read_file {path} hung"));
        assert!(msg.contains("loops or dangles"), "{path}: {msg}");
        let r = p.roots.resolve(path, Access::Write);
        assert!(r.is_err(), "write to {path} allowed: {r:?}");
    }
    let msg = list_refused(&p, "loop_a").await;
    assert!(msg.contains("loops or dangles"), "{msg}");
}

#[tokio::test]
async fn dangling_symlink_is_refused_for_write() {
    let p = Project::new();
    // Writing through these would create a file outside the root (or wherever they point).
    p.symlink(p.outside.join("created_by_write.txt"), "dangling_out");
    p.symlink("nowhere.txt", "dangling_in");
    for path in ["dangling_out", "dangling_in", "./dangling_out"] {
        let r = p.roots.resolve(path, Access::Write);
        assert!(r.is_err(), "write to {path} allowed: {r:?}");
        let msg = read_refused(&p, path).await;
        assert!(
            msg.contains("loops or dangles") || msg.contains("outside"),
            "{path}: {msg}"
        );
    }
    assert!(!p.outside.join("created_by_write.txt").exists());
}

#[tokio::test]
async fn fifo_is_refused_without_blocking() {
    let p = Project::new();
    let fifo = p.root.join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    // A reader that opened the FIFO would block until a writer appears: never.
    let msg = tokio::time::timeout(Duration::from_secs(5), p.read(json!({ "path": "pipe" })))
        .await
        .expect("read_file on a FIFO must not block")
        .expect_err("read_file on a FIFO must be refused")
        .to_string();
    assert!(msg.contains("FIFO"), "{msg}");
    // A symlink to it is refused the same way.
    p.symlink("pipe", "pipe_link");
    let msg = tokio::time::timeout(
        Duration::from_secs(5),
        p.read(json!({ "path": "pipe_link" })),
    )
    .await
    .expect("read_file on a FIFO link must not block")
    .expect_err("read_file on a FIFO link must be refused")
    .to_string();
    assert!(msg.contains("FIFO"), "{msg}");
    // list_dir shows it for what it is.
    let out = p.list_ok(json!({})).await;
    assert!(out.text.contains("pipe  [fifo]"), "{}", out.text);
}

#[tokio::test]
async fn devices_are_refused() {
    let roots = Arc::new(Roots::new(["/dev"]).unwrap());
    let (read, _) = tools(roots);
    for path in ["null", "zero", "/dev/zero", "urandom"] {
        let result = tokio::time::timeout(
            Duration::from_secs(5),
            crate::support::call(&read, json!({ "path": path })),
        )
        .await
        .unwrap_or_else(|_| panic!("read_file {path} hung"));
        let msg = result.expect_err("a device must be refused").to_string();
        assert!(msg.contains("device"), "{path}: {msg}");
    }
    // Inside an ordinary root, a link to a device points outside anyway.
    let p = Project::new();
    p.symlink("/dev/zero", "zero");
    assert_outside(&read_refused(&p, "zero").await);
}

#[tokio::test]
async fn dotdot_that_stays_inside_is_allowed() {
    let p = Project::new();
    p.write("file.txt", "top\n");
    p.write("sub/deeper/inner.txt", "inner\n");
    for path in [
        "sub/../file.txt",
        "sub/deeper/../../file.txt",
        "./sub/./deeper/.././../file.txt",
        "../root/file.txt",
    ] {
        let out = p.read_ok(json!({ "path": path })).await;
        assert_eq!(out.text, "     1\ttop\n", "{path}");
    }
    let out = p.list_ok(json!({ "path": "sub/deeper/.." })).await;
    assert_eq!(out.text, "deeper/\n");
    assert_outside(&read_refused(&p, "sub/../../outside/secret.txt").await);
    assert_outside(&read_refused(&p, "sub/deeper/../../../outside/secret.txt").await);
    assert_outside(&list_refused(&p, "sub/../..").await);
}

#[tokio::test]
async fn symlink_to_a_file_inside_is_allowed() {
    let p = Project::new();
    p.write("sub/target.txt", "linked content\n");
    p.symlink("sub/target.txt", "alias.txt");
    p.symlink(p.root.join("sub"), "subalias");
    let out = p.read_ok(json!({ "path": "alias.txt" })).await;
    assert_eq!(out.text, "     1\tlinked content\n");
    // Shown by its real path.
    assert_eq!(out.structured["path"], json!("sub/target.txt"));
    let out = p.read_ok(json!({ "path": "subalias/target.txt" })).await;
    assert_eq!(out.text, "     1\tlinked content\n");
    let out = p.list_ok(json!({ "path": "subalias" })).await;
    assert_eq!(out.text, "target.txt  (15 bytes)\n");
    let w = p.roots.resolve("subalias/new.txt", Access::Write).unwrap();
    assert_eq!(w, p.root.join("sub/new.txt"));
}

#[tokio::test]
async fn non_utf8_file_names_are_listed_lossily() {
    let p = Project::new();
    let name = OsStr::from_bytes(b"caf\xe9.txt");
    fs_err::write(p.root.join(name), "latin-1 name\n").unwrap();
    p.write("plain.txt", "x\n");
    let out = p.list_ok(json!({})).await;
    assert_eq!(
        out.text,
        "caf\u{FFFD}.txt  [name is not UTF-8; shown lossily]  (13 bytes)\nplain.txt  (2 bytes)\n"
    );
    assert_eq!(out.field("total"), Some(json!(2)));
}

#[tokio::test]
async fn unusable_paths_are_refused() {
    let p = Project::new();
    for path in ["", "a\0b"] {
        let msg = p.read_err(json!({ "path": path })).await;
        assert!(msg.contains("not a usable path"), "{path:?}: {msg}");
    }
    // Arguments are parsed strictly.
    let msg = p.read_err(json!({ "path": "x", "unexpected": true })).await;
    assert!(msg.contains("unexpected"), "{msg}");
    let msg = p.read_err(json!({ "offset": 3 })).await;
    assert!(msg.contains("path"), "{msg}");
}

#[tokio::test]
async fn read_only_roots_can_be_read_but_not_written() {
    let p = Project::new();
    let spill = p.base.join("spill");
    fs_err::create_dir(&spill).unwrap();
    fs_err::write(spill.join("out.txt"), "spilled\n").unwrap();
    let roots = Arc::new(Roots::new([&p.root]).unwrap().with_read_only(&spill));
    let (read, _) = tools(Arc::clone(&roots));
    let path = spill.join("out.txt");
    let out = crate::support::call(&read, json!({ "path": path.to_str().unwrap() }))
        .await
        .unwrap();
    assert_eq!(out.text, "     1\tspilled\n");
    let msg = roots
        .resolve(path.to_str().unwrap(), Access::Write)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("read-only"), "{msg}");
    // The secret beside it is still outside.
    let secret = p.outside.join("secret.txt");
    let r = crate::support::call(&read, json!({ "path": secret.to_str().unwrap() })).await;
    assert!(r.is_err());
    assert!(!everything(&r).contains(SECRET));
}
