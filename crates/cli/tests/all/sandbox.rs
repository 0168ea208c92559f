//! `[shell] sandbox` and `[mcp] sandbox` through the binary: each mode is complete for what
//! it names. Every probe first runs unsandboxed and must succeed there, so a denial below
//! proves the sandbox and not a machine that cannot do it; a kernel without what a test
//! needs fails it (it is not skipped).

use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::Path;

use crate::{project, run_shell, toolgate, user_config};

/// Runs `command` with `toolgate call run_shell` under `config`; its text result.
fn shell(dir: &Path, config: &str, command: &str) -> String {
    user_config(dir, config);
    run_shell(&mut toolgate(dir), command)
}

use toolgate_test_support::outside_writable as outside;

/// What a file's metadata looks like: mode, owner, group, mtime, extended attributes.
fn metadata(path: &Path) -> (u32, u32, u32, i64, String) {
    let m = std::fs::metadata(path).unwrap();
    let xattrs = std::process::Command::new("python3")
        .args(["-c", "import os, sys; print(os.listxattr(sys.argv[1]))"])
        .arg(path)
        .output()
        .unwrap();
    assert!(xattrs.status.success(), "python3 is needed for this test");
    (
        m.mode(),
        m.uid(),
        m.gid(),
        m.mtime(),
        String::from_utf8_lossy(&xattrs.stdout).trim().to_owned(),
    )
}

/// chmod with the setuid bit, chown, touch -d and setxattr on `file`; one `NAME=STATUS`
/// line each.
fn metadata_probe(file: &Path) -> String {
    let f = file.display();
    format!(
        "chmod 4777 {f}; echo chmod=$?; chown 1:1 {f}; echo chown=$?; \
         touch -d 2001-01-01 {f}; echo touch=$?; \
         python3 -c 'import os, sys; os.setxattr(sys.argv[1], \"user.toolgate\", b\"1\")' {f}; \
         echo xattr=$?"
    )
}

fn statuses(text: &str) -> Vec<(String, i32)> {
    ["chmod", "chown", "touch", "xattr"]
        .iter()
        .map(|name| {
            let status = text
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("no {name}= line in: {text}"))
                .trim()
                .parse()
                .unwrap();
            (name.to_string(), status)
        })
        .collect()
}

fn fresh(dir: &Path, name: &str) -> std::path::PathBuf {
    let file = dir.join(name);
    std::fs::write(&file, "kept\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    file
}

#[test]
fn read_only_and_workspace_write_change_no_metadata_outside_what_is_writable() {
    // Regression: under both modes a command could chmod (setuid 4777 included), chown,
    // touch -d and set xattrs on any file.
    let dir = project();
    let away = outside();
    // Unsandboxed, every probe works on this machine.
    let control = fresh(away.path(), "control");
    let before = metadata(&control);
    let text = shell(dir.path(), "", &metadata_probe(&control));
    assert!(
        statuses(&text).iter().all(|(_, s)| *s == 0),
        "the probes must work unsandboxed: {text}"
    );
    assert_ne!(metadata(&control), before);

    for mode in ["read-only", "workspace-write"] {
        let config = format!("[shell]\nsandbox = \"{mode}\"\n");
        let target = fresh(away.path(), &format!("target-{mode}"));
        let before = metadata(&target);
        let text = shell(dir.path(), &config, &metadata_probe(&target));
        for (name, status) in statuses(&text) {
            assert_ne!(
                status, 0,
                "{mode}: {name} outside the roots succeeded: {text}"
            );
        }
        assert_eq!(metadata(&target), before, "{mode}: {text}");
    }

    // read-only: not inside the roots either.
    let inside = fresh(dir.path(), "inside-ro.txt");
    let before = metadata(&inside);
    let text = shell(
        dir.path(),
        "[shell]\nsandbox = \"read-only\"\n",
        &metadata_probe(&inside),
    );
    assert!(statuses(&text).iter().all(|(_, s)| *s != 0), "{text}");
    assert_eq!(metadata(&inside), before, "{text}");

    // workspace-write: inside the roots `chmod +x` and `touch` work, setuid never does.
    let inside = fresh(dir.path(), "inside-ww.sh");
    let text = shell(
        dir.path(),
        "[shell]\nsandbox = \"workspace-write\"\n",
        "chmod +x inside-ww.sh; echo plus_x=$?; touch -d 2001-01-01 inside-ww.sh; echo touch=$?; \
         chmod u+s inside-ww.sh; echo setuid=$?; chmod g+s inside-ww.sh; echo setgid=$?",
    );
    let mode = std::fs::metadata(&inside).unwrap().mode();
    assert!(text.contains("plus_x=0"), "{text}");
    assert!(text.contains("touch=0"), "{text}");
    assert!(
        !text.contains("setuid=0") && !text.contains("setgid=0"),
        "{text}"
    );
    assert_eq!(mode & 0o7777, 0o755, "{text}");
    assert_eq!(
        std::fs::metadata(&inside).unwrap().mtime(),
        978_307_200,
        "{text}"
    );
}

/// Listeners of every kind a probe tries to reach, on loopback and in unix socket space.
struct Listeners {
    tcp: TcpListener,
    udp: UdpSocket,
    path: UnixListener,
    abstract_name: String,
    abstract_unix: UnixListener,
    _dir: tempfile::TempDir,
}

impl Listeners {
    fn new(tag: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.set_nonblocking(true).unwrap();
        let path = UnixListener::bind(dir.path().join("sock")).unwrap();
        path.set_nonblocking(true).unwrap();
        let abstract_name = format!("toolgate-test-{}-{tag}", std::process::id());
        let abstract_unix =
            UnixListener::bind_addr(&SocketAddr::from_abstract_name(&abstract_name).unwrap())
                .unwrap();
        abstract_unix.set_nonblocking(true).unwrap();
        Self {
            tcp,
            udp,
            path,
            abstract_name,
            abstract_unix,
            _dir: dir,
        }
    }

    /// The probe's arguments: TCP port, UDP port, unix socket path, abstract name.
    fn args(&self) -> String {
        format!(
            "{} {} {} {}",
            self.tcp.local_addr().unwrap().port(),
            self.udp.local_addr().unwrap().port(),
            self._dir.path().join("sock").display(),
            self.abstract_name
        )
    }

    /// Which listeners heard from the probe.
    fn reached(&self) -> Vec<&'static str> {
        let mut reached = Vec::new();
        let heard = |r: std::io::Result<()>| match r {
            Ok(()) => true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(e) => panic!("{e}"),
        };
        if heard(self.tcp.accept().map(drop)) {
            reached.push("tcp");
        }
        if heard(self.udp.recv(&mut [0; 16]).map(drop)) {
            reached.push("udp");
        }
        if heard(self.path.accept().map(drop)) {
            reached.push("unix path");
        }
        if heard(self.abstract_unix.accept().map(drop)) {
            reached.push("unix abstract");
        }
        reached
    }
}

/// One line per attempt: `NAME ok` or `NAME denied ERROR`.
const SOCKET_PROBE: &str = r#"
import socket, sys
tcp, udp, path, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
def attempt(what, f):
    try:
        f()
        print(what, "ok")
    except OSError as e:
        print(what, "denied", e)
def mptcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
    s.connect(("127.0.0.1", tcp))
    s.sendall(b"x")
attempt("mptcp", mptcp)
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", udp)))
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
attempt("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
attempt("unix_path", lambda: socket.socket(socket.AF_UNIX).connect(path))
attempt("unix_abstract", lambda: socket.socket(socket.AF_UNIX).connect("\0" + name))
attempt("socketpair", lambda: socket.socketpair())
"#;

#[test]
fn no_network_denies_every_socket_mptcp_udp_raw_packet_and_unix_included() {
    // Regression: under `sandbox_network = false` an IPPROTO_MPTCP socket connected and
    // sent data while plain TCP was denied, and UDP, unix (path and abstract) and AF_PACKET
    // sockets stayed open.
    let dir = project();
    std::fs::write(dir.path().join("probe.py"), SOCKET_PROBE).unwrap();
    let kinds = [
        "mptcp",
        "udp",
        "raw",
        "packet",
        "netlink",
        "unix_path",
        "unix_abstract",
        "socketpair",
    ];
    let line = |text: &str, kind: &str| -> String {
        text.lines()
            .find(|l| l.starts_with(&format!("{kind} ")))
            .unwrap_or_else(|| panic!("no `{kind}` line in: {text}"))
            .to_owned()
    };

    let open = Listeners::new("open");
    let text = shell(dir.path(), "", &format!("python3 probe.py {}", open.args()));
    for kind in kinds {
        assert!(
            line(&text, kind).ends_with(" ok"),
            "`{kind}` must work unsandboxed on this machine (MPTCP enabled, running as root): {text}"
        );
    }
    assert_eq!(
        open.reached(),
        ["tcp", "udp", "unix path", "unix abstract"],
        "{text}"
    );

    let closed = Listeners::new("closed");
    let text = shell(
        dir.path(),
        "[shell]\nsandbox_network = false\n",
        &format!("python3 probe.py {} && echo still-runs", closed.args()),
    );
    for kind in kinds.iter().filter(|k| **k != "socketpair") {
        assert!(
            line(&text, kind).contains(" denied "),
            "`{kind}` got past sandbox_network = false: {text}"
        );
    }
    // Pairs of connected unix sockets stay (cargo, node and python use them), and the
    // command itself runs.
    assert!(line(&text, "socketpair").ends_with(" ok"), "{text}");
    assert!(text.contains("still-runs"), "{text}");
    assert_eq!(closed.reached(), Vec::<&str>::new(), "{text}");
}

#[test]
fn mcp_sandbox_confines_mounted_stdio_servers() {
    // Regression: mounted servers ran outside the sandbox, so a server could write outside
    // the roots even with `[shell] sandbox = "read-only"`. `[mcp] sandbox` puts them in it.
    // The "server" only tries its writes and exits; starting it is enough.
    let dir = project();
    let away = outside();
    let server = |config: &str, name: &str| -> (std::path::PathBuf, String) {
        let target = fresh(away.path(), &format!("{name}-target"));
        let written = away.path().join(format!("{name}-written"));
        user_config(
            dir.path(),
            &format!(
                "{config}\n[mcp_servers.writer]\ncommand = \"sh\"\nargs = [\"-c\", \"chmod 4777 {t}; echo out > {w}; exit 3\"]\nstartup_timeout_sec = 30\n",
                t = target.display(),
                w = written.display()
            ),
        );
        let out = toolgate(dir.path())
            .args(["mcp", "list", "--json"])
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("exit status 3"), "the server ran: {text}");
        (target, text)
    };

    let (target, text) = server("", "open");
    assert_eq!(
        std::fs::metadata(&target).unwrap().mode() & 0o7777,
        0o4777,
        "{text}"
    );
    assert!(away.path().join("open-written").exists(), "{text}");

    let (target, text) = server("[mcp]\nsandbox = \"read-only\"\n", "confined");
    assert_eq!(
        std::fs::metadata(&target).unwrap().mode() & 0o7777,
        0o644,
        "{text}"
    );
    assert!(!away.path().join("confined-written").exists(), "{text}");
}
