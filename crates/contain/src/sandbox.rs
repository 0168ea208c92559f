//! The optional sandbox of started processes: `[shell] sandbox` for `run_shell` commands and
//! `[mcp] sandbox` for mounted stdio MCP servers, in the spirit of Codex's modes. Each mode
//! is complete for what it names; every layer is built in toolgate before the fork and
//! entered in the child just before exec, so it holds for the process and everything it
//! starts, and the child only makes system calls (no allocation after fork: `armed`).
//!
//! - **Writes** (Landlock): `read-only` writes nothing but its pipes and `/dev/null`-like
//!   devices; `workspace-write` also writes inside the roots, the temp folders and
//!   `sandbox_writable`. Device nodes cannot be made anywhere (a block device node in
//!   `/tmp` would be the whole disk).
//! - **Metadata** (chmod, chown, utimes, xattrs; Landlock cannot see them): seccomp cannot
//!   see paths either, so `read-only` refuses the whole family with EPERM. `workspace-write`
//!   gives each command a private mount namespace in which every mount is read-only except
//!   bind mounts of the writable folders ([`view`]): the kernel then refuses metadata changes
//!   outside them with EROFS, path by path, while `chmod +x` or `touch` inside the roots
//!   work. Where no mount namespace can be made, `workspace-write` refuses the metadata
//!   family everywhere, like `read-only` (the safe side). In both modes setuid and setgid
//!   bits cannot be set (the mode argument of chmod, open, creat and mknod is checked;
//!   `openat2`, whose mode seccomp cannot read, answers ENOSYS so callers fall back to
//!   `openat`), extended attributes cannot be set at all (file capabilities are one), and
//!   system-wide changes (mounts, modules, reboot, clock, hostname, swap, `setns`) are
//!   refused ([`seccomp`]).
//! - **Network** (`sandbox_network = false`): seccomp refuses `socket()` for every family,
//!   `AF_UNIX` included (a path socket such as `/var/run/docker.sock` leads anywhere), and
//!   `socketpair()` for anything but `AF_UNIX` stream and seqpacket pairs, which stay
//!   connected to each other (cargo, node and python use them between their own processes).
//!   Landlock adds its TCP rules (ABI 4) and the abstract unix socket scope (ABI 6) where
//!   the kernel has them.
//! - `io_uring` is refused whenever a sandbox is on: its operations run outside seccomp.
//!
//! A kernel that cannot enforce a mode does not run the process unsandboxed: starting it
//! fails and the message names what is missing and which setting to change.

use std::collections::BTreeSet;
use std::ffi::{CString, OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};
use serde::{Deserialize, Serialize};

#[cfg(target_os = "linux")]
mod armed;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod view;

#[cfg(target_os = "linux")]
pub(crate) use armed::Armed;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) use armed::enter_encoded;
#[cfg(target_os = "linux")]
pub use seccomp::SeccompError;

/// `[shell] sandbox` and `[mcp] sandbox`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No filesystem restriction (the default: `cargo build` and `npm install` write to
    /// caches in the home folder).
    #[default]
    Off,
    /// Read anything, write nothing (but the output pipes and `/dev/null`-like devices),
    /// change no file's metadata.
    ReadOnly,
    /// Read anything; write and change metadata only inside the roots, the temp folders and
    /// `sandbox_writable`.
    WorkspaceWrite,
}

/// Why a sandboxed process cannot be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The kernel lacks something the configured mode needs.
    #[error("{0}")]
    Unsupported(String),
    /// The seccomp filters could not be built (shared by every start of one sandbox, which
    /// builds them once).
    #[cfg(target_os = "linux")]
    #[error("cannot build the seccomp filter: {source}")]
    Seccomp {
        /// Why not.
        #[source]
        source: Arc<SeccompError>,
    },
    /// The Landlock rules could not be built.
    #[error("cannot build the Landlock rules: {source}")]
    Landlock {
        /// Why not.
        #[source]
        source: landlock::RulesetError,
    },
}

/// The newest Landlock ABI whose filesystem rights are asked for; older kernels get what
/// they have.
const TARGET_ABI: ABI = ABI::V5;

/// Devices every sandboxed process may write (and use ioctls on): its terminal and the sinks.
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The sandbox every process of one kind (commands, or mounted servers) runs in, and what
/// of toolgate's own it never sees: secret variables of its environment (whatever the
/// mode, `off` included) and secret files (under any mode but `off`).
#[derive(Debug, Clone)]
pub struct Sandbox {
    mode: SandboxMode,
    network: bool,
    writable: Vec<PathBuf>,
    /// Absolute paths hidden under an empty mount; resolved at each start, since a store
    /// such as the OAuth tokens' folder may appear after toolgate starts.
    hidden: Vec<PathBuf>,
    /// Variables of toolgate's environment the process does not get.
    withheld: BTreeSet<OsString>,
    /// Variables it gets even when withheld or secret-looking (`[shell] env_pass`).
    passed: BTreeSet<OsString>,
    /// The config section that set it (`shell`, `mcp`), named in error messages.
    section: &'static str,
    /// The seccomp programs, compiled once on first use.
    #[cfg(target_os = "linux")]
    programs: Arc<OnceLock<Result<seccomp::Programs, Arc<SeccompError>>>>,
}

impl PartialEq for Sandbox {
    fn eq(&self, other: &Self) -> bool {
        (self.mode, self.network, &self.writable, self.section)
            == (other.mode, other.network, &other.writable, other.section)
            && (&self.hidden, &self.withheld, &self.passed)
                == (&other.hidden, &other.withheld, &other.passed)
    }
}

impl Eq for Sandbox {}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new(SandboxMode::Off, true, &[], &[])
    }
}

impl Sandbox {
    /// A sandbox in `mode`; `roots` and `extra` (absolute paths: config expands `~/`) are
    /// writable in `workspace-write`, along with `/tmp`, `/var/tmp`, `/dev/shm` and `$TMPDIR`.
    /// `network` false takes sockets away.
    pub fn new(mode: SandboxMode, network: bool, roots: &[PathBuf], extra: &[PathBuf]) -> Self {
        let mut writable = Vec::new();
        if mode == SandboxMode::WorkspaceWrite {
            let mut wanted: Vec<PathBuf> = roots.to_vec();
            wanted.extend(["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from));
            if let Some(tmp) = std::env::var_os("TMPDIR") {
                wanted.push(PathBuf::from(tmp));
            }
            wanted.extend(extra.iter().cloned());
            // Real paths: the mount view binds them by path, and a missing one is not granted.
            for path in wanted {
                if let Ok(real) = fs_err::canonicalize(&path)
                    && !writable.contains(&real)
                {
                    writable.push(real);
                }
            }
        }
        Self {
            mode,
            network,
            writable,
            hidden: Vec::new(),
            withheld: BTreeSet::new(),
            passed: BTreeSet::new(),
            section: "shell",
            #[cfg(target_os = "linux")]
            programs: Arc::new(OnceLock::new()),
        }
    }

    /// Names the config section in messages (`"shell"` by default, `"mcp"` for servers).
    pub fn for_section(mut self, section: &'static str) -> Self {
        self.section = section;
        self
    }

    /// The filesystem mode.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Hides `paths` (absolute: config expands `~/`) from the process under any mode but
    /// `off`: a folder shows empty, a file reads as empty. Needs a mount namespace (see
    /// [`Sandbox::describe`]); a path missing at a start is skipped then.
    pub fn hiding(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        for path in paths {
            if path.is_absolute() && !self.hidden.contains(&path) {
                self.hidden.push(path);
            }
        }
        self
    }

    /// Withholds toolgate's variables `names` from the process's environment (toolgate's
    /// token, provider keys, OAuth client secrets), whatever the mode; see
    /// [`Sandbox::withholds`] for the ones withheld without being named.
    pub fn withholding<S: Into<OsString>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.withheld.extend(names.into_iter().map(Into::into));
        self
    }

    /// Passes `names` on even when withheld (`[shell] env_pass`).
    pub fn passing<S: Into<OsString>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.passed.extend(names.into_iter().map(Into::into));
        self
    }

    /// Whether toolgate's variable `name` stays out of the process's environment: named in
    /// [`Sandbox::withholding`], or a `TOOLGATE_` variable that looks secret (its name holds
    /// `TOKEN`, `SECRET`, `KEY`, `PASSWORD`, `CREDENTIAL` or `SHARED_STORE`, or it sets a
    /// server's `__ENV__` or `__HEADERS__` through the environment); unless passed on.
    ///
    /// ```
    /// use toolgate_contain::Sandbox;
    ///
    /// let sandbox = Sandbox::default().withholding(["OPENAI_API_KEY", "MY_TOKEN"]).passing(["MY_TOKEN"]);
    /// assert!(sandbox.withholds("OPENAI_API_KEY".as_ref()));
    /// assert!(sandbox.withholds("TOOLGATE_TOKEN".as_ref()));
    /// assert!(!sandbox.withholds("MY_TOKEN".as_ref()), "passed on by name");
    /// assert!(!sandbox.withholds("PATH".as_ref()) && !sandbox.withholds("TOOLGATE_SHELL__SANDBOX".as_ref()));
    /// ```
    pub fn withholds(&self, name: &OsStr) -> bool {
        !self.passed.contains(name) && (self.withheld.contains(name) || looks_secret(name))
    }

    /// toolgate's environment as the process gets it (what [`Sandbox::withholds`] leaves).
    pub fn environment(&self) -> Vec<(OsString, OsString)> {
        std::env::vars_os()
            .filter(|(name, _)| !self.withholds(name))
            .collect()
    }

    /// Removes what [`Sandbox::withholds`] from `cmd`'s inherited environment; a variable
    /// `cmd` sets itself (a mounted server's `env`) stays.
    fn scrub(&self, cmd: &mut tokio::process::Command) {
        let set: BTreeSet<OsString> = cmd
            .as_std()
            .get_envs()
            .filter(|(_, value)| value.is_some())
            .map(|(name, _)| name.to_owned())
            .collect();
        for (name, _) in std::env::vars_os() {
            if self.withholds(&name) && !set.contains(&name) {
                cmd.env_remove(name);
            }
        }
    }

    /// No restriction at all.
    ///
    /// ```
    /// use toolgate_contain::{Sandbox, SandboxMode};
    ///
    /// let off = Sandbox::new(SandboxMode::Off, true, &[], &[]);
    /// assert!(off.is_off());
    /// assert!(off.check().is_ok(), "nothing to enforce");
    ///
    /// let strict = Sandbox::new(SandboxMode::ReadOnly, false, &[], &[]);
    /// assert!(!strict.is_off());
    /// // Whether this kernel can enforce it; when not, the error names what is missing and
    /// // the setting to change.
    /// if let Err(e) = strict.check() {
    ///     assert!(e.to_string().contains("sandbox"), "{e}");
    /// }
    /// ```
    pub fn is_off(&self) -> bool {
        self.mode == SandboxMode::Off && self.network
    }

    /// One line for the startup log: what is enforced and by what.
    pub fn describe(&self) -> String {
        if self.is_off() {
            return "off".to_owned();
        }
        let fs = match self.mode {
            SandboxMode::Off => "no filesystem rule",
            SandboxMode::ReadOnly => "read-only, no metadata change",
            SandboxMode::WorkspaceWrite => {
                "workspace-write, metadata changes only in writable folders (read-only mount view)"
            }
        };
        let net = if self.network {
            "network allowed"
        } else {
            "no sockets but unix socketpairs"
        };
        let paths: Vec<String> = self
            .hidden
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let paths = paths.join(", ");
        let hide = match self.mode {
            _ if paths.is_empty() => String::new(),
            SandboxMode::Off => String::new(),
            _ if mount_namespace_possible() => format!("; hidden (empty mounts): {paths}"),
            _ => format!(
                "; NOT hidden, readable (no mount namespace here, and Landlock cannot take a \
                 folder out of the readable `/`): {paths}"
            ),
        };
        match self.check() {
            Ok(()) => match landlock_abi() {
                Some(abi) => format!("{fs}, {net}{hide} (Landlock ABI {abi}, seccomp)"),
                None => format!("{fs}, {net}{hide} (seccomp; no Landlock on this kernel)"),
            },
            Err(e) => format!("{fs}, {net} — NOT AVAILABLE, nothing will start: {e}"),
        }
    }

    /// Whether this kernel can enforce the sandbox; the error names what is missing.
    pub fn check(&self) -> Result<(), SandboxError> {
        if self.is_off() {
            return Ok(());
        }
        let s = self.section;
        if self.mode != SandboxMode::Off && landlock_abi().is_none() {
            return Err(SandboxError::Unsupported(format!(
                "`{s}.sandbox` is set but this kernel has no Landlock (Linux 5.13+ built with \
                 CONFIG_SECURITY_LANDLOCK and `landlock` in the `lsm=` boot list); set \
                 `{s}.sandbox = \"off\"` and `{s}.sandbox_network = true` to run unsandboxed"
            )));
        }
        if !seccomp_available() {
            let what = if self.mode == SandboxMode::Off {
                format!("`{s}.sandbox_network = false`")
            } else {
                format!("`{s}.sandbox`")
            };
            return Err(SandboxError::Unsupported(format!(
                "{what} needs seccomp filters (CONFIG_SECCOMP_FILTER), which this kernel or its \
                 container refuses; set `{s}.sandbox = \"off\"` and `{s}.sandbox_network = true` \
                 to run unsandboxed"
            )));
        }
        Ok(())
    }

    /// Withholds toolgate's secret variables from `cmd` ([`Sandbox::withholds`]) and arms it
    /// to enter the sandbox just before exec (after [`crate::contain`], whose
    /// relay forks the process that runs it).
    pub fn apply(&self, cmd: &mut tokio::process::Command) -> Result<(), SandboxError> {
        self.scrub(cmd);
        if self.is_off() {
            return Ok(());
        }
        self.check()?;
        self.arm(cmd)
    }

    #[cfg(not(target_os = "linux"))]
    fn arm(&self, _cmd: &mut tokio::process::Command) -> Result<(), SandboxError> {
        Err(SandboxError::Unsupported(format!(
            "`{}.sandbox` needs Linux (Landlock and seccomp)",
            self.section
        )))
    }

    #[cfg(target_os = "linux")]
    fn arm(&self, cmd: &mut tokio::process::Command) -> Result<(), SandboxError> {
        let mut armed = self.armed(cmd.as_std().get_current_dir())?;
        // SAFETY: the closure runs in the forked child before exec; `Armed::enter` makes
        // system calls on what was built here and allocates nothing.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(move || armed.enter());
        }
        Ok(())
    }

    /// Everything a process started in `cwd` enters just before exec, built here (in
    /// toolgate, before the start) so the child only makes system calls. The caller has
    /// checked that the sandbox is on.
    #[cfg(target_os = "linux")]
    pub(crate) fn armed(&self, cwd: Option<&Path>) -> Result<Armed, SandboxError> {
        let programs = self
            .programs
            .get_or_init(|| seccomp::Programs::build(self.mode, self.network).map_err(Arc::new))
            .clone()
            .map_err(|source| SandboxError::Seccomp { source })?;
        let ruleset = self
            .ruleset()
            .map_err(|source| SandboxError::Landlock { source })?;
        let view = match self.mode {
            SandboxMode::WorkspaceWrite => Some(view::View::new(
                &self.writable,
                &self.hidden,
                absolute_cwd(cwd),
            )),
            // Only to hide secrets: Landlock already refuses every write.
            SandboxMode::ReadOnly if !self.hidden.is_empty() => {
                Some(view::View::new(&[], &self.hidden, absolute_cwd(cwd)))
            }
            _ => None,
        };
        Ok(Armed::new(view, ruleset, programs))
    }

    fn ruleset(&self) -> Result<Option<RulesetCreated>, landlock::RulesetError> {
        let Some(abi) = landlock_abi() else {
            // Only a network-only sandbox gets here (checked): seccomp alone enforces it.
            return Ok(None);
        };
        if self.mode == SandboxMode::Off && abi < 4 {
            // Nothing for Landlock to add to the seccomp rules.
            return Ok(None);
        }
        let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
        if self.mode != SandboxMode::Off {
            ruleset = ruleset.handle_access(AccessFs::from_all(TARGET_ABI))?;
        }
        if !self.network {
            if abi >= 4 {
                ruleset = ruleset.handle_access(AccessNet::from_all(ABI::V4))?;
            }
            if abi >= 6 {
                ruleset = ruleset.scope(Scope::AbstractUnixSocket)?;
            }
        }
        let mut created = ruleset.create()?;
        if self.mode == SandboxMode::Off {
            return Ok(Some(created));
        }
        let read = AccessFs::from_read(TARGET_ABI);
        // Everything but making device nodes: as root, `mknod /tmp/sda b 8 0` would open
        // the whole disk for writing.
        let write = AccessFs::from_all(TARGET_ABI) & !(AccessFs::MakeBlock | AccessFs::MakeChar);
        created = created.add_rules(beneath("/", read))?;
        let device = AccessFs::from_file(TARGET_ABI);
        created = created.add_rules(DEVICES.iter().filter_map(|d| beneath(d, device).next()))?;
        for dir in &self.writable {
            created = created.add_rules(beneath(dir, write))?;
        }
        Ok(Some(created))
    }
}

/// Whether a started process can get a mount namespace of its own for the view: inside
/// the containment namespace (its user namespace grants it), or as root.
fn mount_namespace_possible() -> bool {
    matches!(crate::current(), crate::Containment::Namespace { .. })
        || rustix::process::geteuid().is_root()
}

/// See [`Sandbox::withholds`].
fn looks_secret(name: &OsStr) -> bool {
    const WORDS: [&str; 8] = [
        "TOKEN",
        "SECRET",
        "KEY",
        "PASSWORD",
        "CREDENTIAL",
        "SHARED_STORE",
        "__ENV__",
        "__HEADERS__",
    ];
    let upper = name.to_string_lossy().to_ascii_uppercase();
    upper.starts_with("TOOLGATE_") && WORDS.iter().any(|word| upper.contains(word))
}

/// `dir` made absolute against toolgate's working directory (as the relay changes to it).
fn absolute_cwd(dir: Option<&Path>) -> Option<CString> {
    let here = std::env::current_dir().ok();
    let dir = match (dir, here) {
        (Some(dir), Some(here)) => here.join(dir),
        (Some(dir), None) => dir.to_path_buf(),
        (None, here) => here?,
    };
    CString::new(dir.into_os_string().into_encoded_bytes()).ok()
}

/// A rule for `path` when it exists (a missing temp folder is simply not granted).
fn beneath(
    path: impl AsRef<Path>,
    access: BitFlags<AccessFs>,
) -> impl Iterator<Item = Result<PathBeneath<PathFd>, landlock::RulesetError>> {
    PathFd::new(path.as_ref())
        .ok()
        .map(|fd| Ok(PathBeneath::new(fd, access)))
        .into_iter()
}

/// The kernel's Landlock ABI version, or `None` without Landlock (asked once per process).
pub fn landlock_abi() -> Option<i64> {
    static ABI: OnceLock<Option<i64>> = OnceLock::new();
    *ABI.get_or_init(query_landlock_abi)
}

fn query_landlock_abi() -> Option<i64> {
    #[cfg(target_os = "linux")]
    {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: the version query takes no ruleset attributes (null, size 0).
        #[allow(unsafe_code)]
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        (version > 0).then_some(version)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Whether seccomp filters that answer with an errno can be installed (asked once).
pub fn seccomp_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            const SECCOMP_GET_ACTION_AVAIL: libc::c_ulong = 2;
            let action: u32 = libc::SECCOMP_RET_ERRNO;
            // SAFETY: the query reads one u32 the pointer names and changes nothing.
            #[allow(unsafe_code)]
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    SECCOMP_GET_ACTION_AVAIL,
                    0,
                    &action as *const u32,
                )
            };
            rc == 0
        }
        #[cfg(not(target_os = "linux"))]
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_section_that_set_the_sandbox() {
        let sandbox = Sandbox::new(SandboxMode::ReadOnly, false, &[], &[]).for_section("mcp");
        assert_eq!(sandbox.section, "mcp");
        assert!(!sandbox.is_off());
        assert!(Sandbox::default().is_off());
        assert_eq!(Sandbox::default().describe(), "off");
    }

    #[test]
    fn workspace_write_binds_real_existing_folders_once() {
        let dir = std::env::temp_dir();
        let missing = dir.join("toolgate-no-such-folder-for-the-sandbox");
        let sandbox = Sandbox::new(
            SandboxMode::WorkspaceWrite,
            true,
            &[dir.clone(), dir.clone(), missing.clone()],
            &[],
        );
        let real = fs_err::canonicalize(&dir).unwrap_or(dir);
        assert_eq!(sandbox.writable.iter().filter(|p| **p == real).count(), 1);
        assert!(!sandbox.writable.contains(&missing));
    }
}
