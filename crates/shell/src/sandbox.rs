//! Optional Landlock sandbox for `run_shell` (`[shell] sandbox`), in the spirit of Codex's
//! modes: `read-only` lets a command read everything and write nothing but its pipes and a
//! few devices; `workspace-write` also lets it write inside the roots, the temp folders and
//! `sandbox_writable`. `sandbox_network = false` also denies TCP connect and bind.
//!
//! The rules are built in toolgate before the fork and enforced in the child just before
//! exec, so they hold for the command and everything it starts. A kernel without Landlock
//! does not silently run commands unsandboxed: every `run_shell` call then fails and says
//! what to change.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus,
};
use serde::{Deserialize, Serialize};

use crate::error::ShellError;

/// `[shell] sandbox`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No filesystem restriction (the default: `cargo build` and `npm install` write to
    /// caches in the home folder).
    #[default]
    Off,
    /// Read anything, write nothing (but the output pipes and `/dev/null`-like devices).
    ReadOnly,
    /// Read anything; write inside the roots, the temp folders and `sandbox_writable`.
    WorkspaceWrite,
}

/// The newest Landlock ABI whose rights are asked for; older kernels get what they have.
const TARGET_ABI: ABI = ABI::V5;

/// Devices every command may write (and use ioctls on): its own terminal and the sinks.
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The sandbox every `run_shell` command of one tool set runs in.
#[derive(Debug, Clone)]
pub struct Sandbox {
    mode: SandboxMode,
    network: bool,
    writable: Vec<PathBuf>,
}

impl Sandbox {
    /// A sandbox in `mode`; `roots` and `extra` are writable in `workspace-write`, along
    /// with `/tmp`, `/var/tmp`, `/dev/shm` and `$TMPDIR`.
    pub fn new(mode: SandboxMode, network: bool, roots: &[PathBuf], extra: &[PathBuf]) -> Self {
        let mut writable = Vec::new();
        if mode == SandboxMode::WorkspaceWrite {
            writable.extend(roots.iter().cloned());
            writable.extend(["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from));
            if let Some(tmp) = std::env::var_os("TMPDIR") {
                writable.push(PathBuf::from(tmp));
            }
            writable.extend(extra.iter().map(|p| expand_home(p)));
        }
        Self {
            mode,
            network,
            writable,
        }
    }

    /// No restriction at all.
    pub fn is_off(&self) -> bool {
        self.mode == SandboxMode::Off && self.network
    }

    /// One line for the startup log.
    pub fn describe(&self) -> String {
        if self.is_off() {
            return "off".to_owned();
        }
        let fs = match self.mode {
            SandboxMode::Off => "no filesystem rule",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
        };
        let net = if self.network {
            "network allowed"
        } else {
            "no TCP"
        };
        match landlock_abi() {
            Some(abi) => format!("{fs}, {net} (Landlock ABI {abi})"),
            None => format!(
                "{fs}, {net} — NOT AVAILABLE: this kernel has no Landlock, run_shell will refuse to run"
            ),
        }
    }

    /// Arms `cmd` to enter the sandbox just before exec.
    pub(crate) fn apply(&self, cmd: &mut tokio::process::Command) -> Result<(), ShellError> {
        if self.is_off() {
            return Ok(());
        }
        let Some(abi) = landlock_abi() else {
            return Err(ShellError::Sandbox(
                "`shell.sandbox` is set but this kernel has no Landlock (Linux 5.13+ built with \
                 CONFIG_SECURITY_LANDLOCK and `landlock` in the `lsm=` boot list); set \
                 `shell.sandbox = \"off\"` and `shell.sandbox_network = true` to run commands unsandboxed"
                    .to_owned(),
            ));
        };
        if !self.network && abi < 4 {
            return Err(ShellError::Sandbox(format!(
                "`shell.sandbox_network = false` needs Landlock ABI 4 (Linux 6.7); this kernel has ABI {abi}. \
                 Set `shell.sandbox_network = true` or upgrade the kernel"
            )));
        }
        let ruleset = self
            .ruleset()
            .map_err(|e| ShellError::Sandbox(format!("cannot build the Landlock rules: {e}")))?;
        let mut ruleset = Some(ruleset);
        // SAFETY: the closure runs in the forked child before exec: restrict_self makes two
        // raw system calls (prctl NO_NEW_PRIVS, landlock_restrict_self) and allocates nothing.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(
                move || match ruleset.take().map(RulesetCreated::restrict_self) {
                    Some(Ok(status)) if status.ruleset != RulesetStatus::NotEnforced => Ok(()),
                    Some(_) => Err(std::io::Error::from_raw_os_error(libc::EPERM)),
                    None => Ok(()),
                },
            );
        }
        Ok(())
    }

    fn ruleset(&self) -> Result<RulesetCreated, landlock::RulesetError> {
        let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
        if self.mode != SandboxMode::Off {
            ruleset = ruleset.handle_access(AccessFs::from_all(TARGET_ABI))?;
        }
        if !self.network {
            ruleset = ruleset.handle_access(AccessNet::from_all(ABI::V4))?;
        }
        let mut created = ruleset.create()?;
        if self.mode == SandboxMode::Off {
            return Ok(created);
        }
        let read = AccessFs::from_read(TARGET_ABI);
        let all = AccessFs::from_all(TARGET_ABI);
        created = created.add_rules(beneath("/", read))?;
        let device = AccessFs::from_file(TARGET_ABI);
        created = created.add_rules(DEVICES.iter().filter_map(|d| beneath(d, device).next()))?;
        for dir in &self.writable {
            created = created.add_rules(beneath(dir, all))?;
        }
        Ok(created)
    }
}

/// `~/x` is `$HOME/x`.
fn expand_home(path: &Path) -> PathBuf {
    toolgate_core::UserDirs::from_env().expand_tilde(path)
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
    static ABI: std::sync::OnceLock<Option<i64>> = std::sync::OnceLock::new();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tilde_means_the_home_folder() {
        let home = toolgate_core::UserDirs::from_env()
            .home()
            .map(Path::to_path_buf);
        let expanded = expand_home(Path::new("~/.cargo"));
        match home {
            Some(home) => assert_eq!(expanded, home.join(".cargo")),
            None => assert_eq!(expanded, Path::new("~/.cargo")),
        }
        assert_eq!(expand_home(Path::new("/opt/x")), Path::new("/opt/x"));
        assert_eq!(expand_home(Path::new("~other/x")), Path::new("~other/x"));
    }
}
