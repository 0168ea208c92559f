//! The seccomp half of the sandbox: what Landlock cannot see. Built with `seccompiler` in
//! toolgate (it allocates) and installed in the child before exec (two system calls).
//!
//! Every filter allows by default and answers the listed calls with EPERM (`openat2` with
//! ENOSYS). A call made under another architecture's ABI (32-bit `int 0x80` on x86-64)
//! kills the process (`seccompiler`'s architecture check); x32 calls are listed under
//! their x32 numbers as well.

use std::collections::BTreeMap;
use std::sync::Arc;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

use super::SandboxMode;

/// Why the seccomp filters of a sandbox cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SeccompError {
    /// `seccompiler` has no filters for this architecture.
    #[error("seccomp filters are built for x86-64, aarch64 and riscv64 only")]
    UnsupportedArchitecture,
    /// A condition on an argument of one system call was refused.
    #[error("{source}")]
    Rule {
        /// The system call's number.
        syscall: i64,
        /// `seccompiler`'s reason.
        #[source]
        source: seccompiler::BackendError,
    },
    /// A filter as a whole was refused (too long, say).
    #[error("{source}")]
    Filter {
        /// The errno the filter answers its system calls with (EPERM, or ENOSYS for the
        /// `openat2` one).
        errno: i32,
        /// `seccompiler`'s reason.
        #[source]
        source: seccompiler::BackendError,
    },
}

/// Calls newer than the `libc` crate's tables (the numbers are shared by every
/// architecture since Linux 5.1).
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;
const SYS_OPEN_TREE_ATTR: i64 = 467;
const SYS_FILE_SETATTR: i64 = 469;

/// `ioctl` requests that change a file's attributes (`chattr`), 64- and 32-bit forms:
/// FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_SETVERSION, FS_IOC32_SETVERSION,
/// FS_IOC_FSSETXATTR.
const SET_ATTR_IOCTLS: [u64; 5] = [
    0x4008_6602,
    0x4004_6602,
    0x4008_7602,
    0x4004_7602,
    0x401c_5820,
];

/// The x32 ABI bit of x86-64 syscall numbers.
#[cfg(target_arch = "x86_64")]
const X32: i64 = 0x4000_0000;
/// `ioctl` has its own x32 number.
#[cfg(target_arch = "x86_64")]
const X32_IOCTL: i64 = 514;

/// The compiled filters of one sandbox.
#[derive(Debug, Clone)]
pub(super) struct Programs(Arc<Compiled>);

#[derive(Debug)]
struct Compiled {
    /// Installed when the read-only mount view is in place (workspace-write).
    viewed: Option<BpfProgram>,
    /// Installed otherwise (read-only; workspace-write without a mount namespace; network
    /// only).
    plain: BpfProgram,
    /// `openat2` answers ENOSYS (filesystem modes).
    openat2: Option<BpfProgram>,
}

/// A syscall table under construction: no entry = allowed, an empty list = always denied,
/// else denied when one of the rules matches.
#[derive(Default)]
struct Rules(BTreeMap<i64, Vec<SeccompRule>>);

impl Rules {
    fn deny(&mut self, nr: i64) {
        self.0.insert(nr, Vec::new());
    }

    fn deny_if(&mut self, nr: i64, rule: SeccompRule) {
        match self.0.get_mut(&nr) {
            Some(rules) if rules.is_empty() => {}
            Some(rules) => rules.push(rule),
            None => {
                self.0.insert(nr, vec![rule]);
            }
        }
    }

    fn compile(mut self, errno: i32) -> Result<BpfProgram, SeccompError> {
        #[cfg(target_arch = "x86_64")]
        {
            let x32: Vec<(i64, Vec<SeccompRule>)> = self
                .0
                .iter()
                .map(|(nr, rules)| {
                    let nr = if *nr == libc::SYS_ioctl {
                        X32_IOCTL
                    } else {
                        *nr
                    };
                    (nr | X32, rules.clone())
                })
                .collect();
            self.0.extend(x32);
        }
        let refused = |source| SeccompError::Filter { errno, source };
        let filter = SeccompFilter::new(
            self.0,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            target_arch()?,
        )
        .map_err(refused)?;
        filter.try_into().map_err(refused)
    }
}

fn target_arch() -> Result<TargetArch, SeccompError> {
    if cfg!(target_arch = "x86_64") {
        Ok(TargetArch::x86_64)
    } else if cfg!(target_arch = "aarch64") {
        Ok(TargetArch::aarch64)
    } else if cfg!(target_arch = "riscv64") {
        Ok(TargetArch::riscv64)
    } else {
        Err(SeccompError::UnsupportedArchitecture)
    }
}

/// One condition on argument `arg` of system call `syscall`.
fn when(syscall: i64, arg: u8, len: Len, op: Op, value: u64) -> Result<SeccompRule, SeccompError> {
    SeccompCondition::new(arg, len, op, value)
        .and_then(|c| SeccompRule::new(vec![c]))
        .map_err(|source| SeccompError::Rule { syscall, source })
}

impl Programs {
    /// The compiled programs as raw BPF instructions (8 bytes each): the one for a command
    /// inside the mount view, the one for any other, and the `openat2` one.
    pub(super) fn parts(&self) -> [Option<&[u8]>; 3] {
        let bytes = |program: &BpfProgram| {
            // SAFETY: `sock_filter` is a plain `repr(C)` struct of 8 bytes; the slice covers
            // exactly the program's instructions.
            #[allow(unsafe_code)]
            unsafe {
                std::slice::from_raw_parts(
                    program.as_ptr().cast::<u8>(),
                    std::mem::size_of_val(program.as_slice()),
                )
            }
        };
        [
            self.0.viewed.as_ref().map(bytes),
            Some(bytes(&self.0.plain)),
            self.0.openat2.as_ref().map(bytes),
        ]
    }

    /// The filters for `mode` and `network`.
    pub(super) fn build(mode: SandboxMode, network: bool) -> Result<Self, SeccompError> {
        let filesystem = mode != SandboxMode::Off;
        let base = |metadata: Metadata| -> Result<Rules, SeccompError> {
            let mut rules = Rules::default();
            deny_io_uring(&mut rules);
            if !network {
                deny_sockets(&mut rules)?;
            }
            if filesystem {
                deny_system_changes(&mut rules);
                deny_xattr_writes(&mut rules);
                match metadata {
                    Metadata::Everywhere => deny_metadata_changes(&mut rules)?,
                    Metadata::ByMountView => {}
                }
                deny_setuid_bits(&mut rules)?;
            }
            Ok(rules)
        };
        let viewed = match mode {
            SandboxMode::WorkspaceWrite => Some(base(Metadata::ByMountView)?.compile(libc::EPERM)?),
            _ => None,
        };
        let plain = base(Metadata::Everywhere)?.compile(libc::EPERM)?;
        let openat2 = if filesystem {
            let mut rules = Rules::default();
            rules.deny(libc::SYS_openat2);
            Some(rules.compile(libc::ENOSYS)?)
        } else {
            None
        };
        Ok(Self(Arc::new(Compiled {
            viewed,
            plain,
            openat2,
        })))
    }
}

/// Where metadata changes are refused by seccomp.
#[derive(Clone, Copy)]
enum Metadata {
    /// Everywhere (seccomp cannot tell the writable folders from the rest).
    Everywhere,
    /// Nowhere: the mount view refuses them outside the writable folders.
    ByMountView,
}

fn deny_io_uring(rules: &mut Rules) {
    // Its operations (sockets, xattrs, opens) run without passing seccomp again.
    for nr in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.deny(nr);
    }
}

/// No socket of any family; socket pairs only as connected unix stream or seqpacket pairs
/// (a datagram pair could still send to any path socket with sendto).
fn deny_sockets(rules: &mut Rules) -> Result<(), SeccompError> {
    rules.deny(libc::SYS_socket);
    let pair = libc::SYS_socketpair;
    let domain = when(pair, 0, Len::Dword, Op::Ne, libc::AF_UNIX as u64)?;
    let datagram = when(
        pair,
        1,
        Len::Dword,
        Op::MaskedEq(0xf),
        libc::SOCK_DGRAM as u64,
    )?;
    rules.deny_if(pair, domain);
    rules.deny_if(pair, datagram);
    Ok(())
}

/// Calls that change the system rather than a file: mounts (and leaving the mount view),
/// modules, kexec, reboot, swap, clocks, host names, accounting, quotas, BPF programs,
/// opening files by handle, and on x86-64 raw port I/O.
fn deny_system_changes(rules: &mut Rules) {
    for nr in [
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        SYS_OPEN_TREE_ATTR,
        libc::SYS_setns,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
        libc::SYS_adjtimex,
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_quotactl_fd,
        libc::SYS_bpf,
        libc::SYS_open_by_handle_at,
    ] {
        rules.deny(nr);
    }
    #[cfg(target_arch = "x86_64")]
    for nr in [libc::SYS_iopl, libc::SYS_ioperm] {
        rules.deny(nr);
    }
}

/// Extended attributes: `security.capability` alone would turn a file into a privileged
/// program, and seccomp cannot read the attribute's name.
fn deny_xattr_writes(rules: &mut Rules) {
    for nr in [
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        SYS_SETXATTRAT,
        SYS_REMOVEXATTRAT,
    ] {
        rules.deny(nr);
    }
}

/// Mode, owner, times and attribute flags of any file.
fn deny_metadata_changes(rules: &mut Rules) -> Result<(), SeccompError> {
    for nr in [
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        libc::SYS_fchmodat2,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        SYS_FILE_SETATTR,
    ] {
        rules.deny(nr);
    }
    #[cfg(target_arch = "x86_64")]
    for nr in [
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ] {
        rules.deny(nr);
    }
    for request in SET_ATTR_IOCTLS {
        let rule = when(libc::SYS_ioctl, 1, Len::Dword, Op::Eq, request)?;
        rules.deny_if(libc::SYS_ioctl, rule);
    }
    Ok(())
}

/// setuid and setgid bits, in every call that takes a mode: changing one (chmod family) or
/// creating a file with one (open, creat, mknod).
fn deny_setuid_bits(rules: &mut Rules) -> Result<(), SeccompError> {
    let mut calls = vec![
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (libc::SYS_fchmodat2, 2),
        (libc::SYS_openat, 3),
        (libc::SYS_mknodat, 2),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        (libc::SYS_chmod, 1),
        (libc::SYS_open, 2),
        (libc::SYS_creat, 1),
        (libc::SYS_mknod, 1),
    ]);
    for (nr, arg) in calls {
        for bit in [libc::S_ISUID, libc::S_ISGID] {
            let bit = u64::from(bit);
            rules.deny_if(nr, when(nr, arg, Len::Dword, Op::MaskedEq(bit), bit)?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_compiles() {
        for mode in [
            SandboxMode::Off,
            SandboxMode::ReadOnly,
            SandboxMode::WorkspaceWrite,
        ] {
            for network in [true, false] {
                if mode == SandboxMode::Off && network {
                    continue;
                }
                let programs = Programs::build(mode, network).unwrap();
                assert_eq!(
                    programs.0.viewed.is_some(),
                    mode == SandboxMode::WorkspaceWrite
                );
                assert_eq!(programs.0.openat2.is_some(), mode != SandboxMode::Off);
            }
        }
    }

    #[test]
    fn a_refused_rule_names_its_system_call_and_keeps_seccompilers_reason() {
        // Argument 6 does not exist (a system call takes at most six, 0 to 5).
        let Err(error) = when(libc::SYS_openat, 6, Len::Dword, Op::Eq, 0) else {
            panic!("argument 6 should be refused");
        };
        let source = seccompiler::BackendError::InvalidArgumentNumber;
        assert_eq!(
            error.to_string(),
            source.to_string(),
            "the text is seccompiler's"
        );
        assert!(
            matches!(&error, SeccompError::Rule { syscall, source: s } if *syscall == libc::SYS_openat && *s == source),
            "{error:?}"
        );
    }

    #[test]
    fn an_unconditional_denial_is_not_narrowed_by_a_condition() {
        let mut rules = Rules::default();
        rules.deny(libc::SYS_fchmod);
        let rule = when(libc::SYS_fchmod, 1, Len::Dword, Op::Eq, 1).unwrap();
        rules.deny_if(libc::SYS_fchmod, rule);
        assert!(rules.0[&libc::SYS_fchmod].is_empty());
    }
}
