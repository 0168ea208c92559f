//! `[shell] sandbox`: Landlock rules every command and its children run under.
//!
//! These tests need a kernel with Landlock (ABI 4 for the network test); without it they
//! fail rather than pass vacuously, and `landlock_abi()` says why.

use toolgate_shell::{SandboxMode, ShellLimits, landlock_abi};

use crate::fixtures::{Env, field};

fn sandboxed(mode: SandboxMode, network: bool) -> Env {
    assert!(
        landlock_abi().is_some(),
        "this kernel has no Landlock: the sandbox cannot be tested here"
    );
    Env::with_limits(ShellLimits {
        sandbox: mode,
        sandbox_network: network,
        ..ShellLimits::default()
    })
}

#[tokio::test]
async fn workspace_write_writes_inside_the_roots_and_nowhere_else() {
    let env = sandboxed(SandboxMode::WorkspaceWrite, true);
    let outside = toolgate_test_support::outside_writable();
    let target = outside.path().join("escaped.txt");
    // A grandchild too: the rules hold for everything the command starts.
    let out = env
        .sh(&format!(
            "echo in > inside.txt && mkdir -p sub/deeper && echo ok > /tmp/toolgate-sandbox-$$ && rm /tmp/toolgate-sandbox-$$; \
             sh -c 'echo out > {}' 2>&1; echo status=$?",
            target.display()
        ))
        .await;
    // Landlock refuses with EACCES; the read-only mount view of workspace-write, which
    // the kernel checks first, with EROFS.
    assert!(
        out.text.contains("Permission denied") || out.text.contains("Read-only file system"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("status=1") || out.text.contains("status=2"),
        "{}",
        out.text
    );
    assert!(!target.exists(), "the sandbox let a write out of the roots");
    assert_eq!(
        fs_err::read_to_string(env.root.join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(env.root.join("sub/deeper").is_dir());
}

#[tokio::test]
async fn read_only_reads_but_does_not_write_even_in_the_roots() {
    let env = sandboxed(SandboxMode::ReadOnly, true);
    fs_err::write(env.root.join("notes.txt"), "kept\n").unwrap();
    let out = env
        .sh("cat notes.txt; echo changed > notes.txt; rm -f notes.txt; echo done > /dev/null && echo devnull-ok")
        .await;
    assert!(out.text.contains("kept"), "{}", out.text);
    assert!(out.text.contains("Permission denied"), "{}", out.text);
    assert!(out.text.contains("devnull-ok"), "{}", out.text);
    assert_eq!(
        fs_err::read_to_string(env.root.join("notes.txt")).unwrap(),
        "kept\n"
    );
}

#[tokio::test]
async fn no_network_denies_tcp_connections() {
    assert!(
        landlock_abi().is_some_and(|abi| abi >= 4),
        "network rules need Landlock ABI 4"
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let open = sandboxed(SandboxMode::Off, true).sh(&connect).await;
    assert!(open.text.contains("connected"), "{}", open.text);
    let closed = sandboxed(SandboxMode::WorkspaceWrite, false)
        .sh(&connect)
        .await;
    assert!(closed.is_error, "{}", closed.text);
    assert!(!closed.text.contains("connected\n"), "{}", closed.text);
    // seccomp refuses the socket itself (EPERM) before Landlock would refuse the connect.
    assert!(
        closed.text.contains("Operation not permitted"),
        "{}",
        closed.text
    );
}

#[tokio::test]
async fn the_default_is_off_and_writes_anywhere() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("free.txt");
    let out = env.sh(&format!("echo free > {}", target.display())).await;
    assert_eq!(field(&out, "exit_code"), 0, "{}", out.text);
    assert!(target.exists());
}
