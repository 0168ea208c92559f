//! Starting the supervisor and the command without copying toolgate's page tables.
//!
//! The relay is a `fork` of toolgate, a large multi-threaded process. Each further `fork`
//! copies its page tables again and makes every page copy-on-write once more, and each
//! copy is torn down again at exit or exec: forking the supervisor and the command that
//! way cost about as much as the rest of a `run_shell true`. [`split`] starts the child in
//! the *same* memory instead (`CLONE_VM`), with no copy at all:
//! - the child goes on exactly like a `fork` child, on the current stack: it returns into
//!   the caller and, for the command, on into std's `exec`;
//! - the parent leaves that stack at once, before it touches memory, for a small stack of
//!   its own, and runs `then` there, which never returns. So the two never write the same
//!   stack, and the child may unwind and reuse the frames the parent came from.
//!
//! With [`Share::UntilExec`] (`CLONE_VFORK`) the parent also sleeps until the child has
//! called `exec` or exited: the supervisor's way of starting the command. With
//! [`Share::Memory`] both run side by side (the relay and its supervisor): the parent
//! shares the child's thread-local `errno` then, so `then` must make raw system calls only
//! ([`sys`]), never libc wrappers that set `errno`.
//!
//! All signals must be blocked in the caller: until the parent is on its own stack, a
//! signal handler's frame would land on the stack the child uses.
//!
//! The register dance is written for x86_64; elsewhere [`split`] is a plain `fork` and the
//! parent runs `then` on its own copy of the stack, which is just as correct, only slower.

/// What the child shares with its parent.
#[derive(Clone, Copy)]
pub(super) enum Share {
    /// The memory, both running side by side (`CLONE_VM`).
    Memory,
    /// The memory, the parent sleeping until the child calls `exec` or exits
    /// (`CLONE_VM | CLONE_VFORK`, what `vfork` does).
    UntilExec,
}

/// What the parent runs after [`split`]: `then(child_pid, arg)`.
pub(super) type Then = unsafe extern "C" fn(libc::c_long, usize) -> !;

/// Size of the parent's own stack: its code keeps small buffers only (the supervisor's
/// largest is a 4 KiB directory read).
const STACK: usize = 64 * 1024;
/// A page without access under the stack, so an overflow faults instead of writing
/// elsewhere.
const GUARD: usize = 4096;

/// Bytes of a stack mapping from [`map_stack`], its guard page included.
#[cfg(target_arch = "x86_64")]
pub(super) const STACK_MAPPING: usize = STACK + GUARD;

/// A fresh stack for a child: an anonymous mapping of [`STACK_MAPPING`] bytes whose lowest
/// page has no access. Its base, or the errno. Two system calls, nothing allocated.
#[cfg(target_arch = "x86_64")]
pub(super) fn map_stack() -> Result<*mut libc::c_void, libc::c_int> {
    // SAFETY: a fresh anonymous mapping; the guard page is inside it.
    unsafe {
        let base = libc::mmap(
            std::ptr::null_mut(),
            STACK_MAPPING,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        );
        if base == libc::MAP_FAILED {
            return Err(super::errno());
        }
        libc::mprotect(base, GUARD, libc::PROT_NONE);
        Ok(base)
    }
}

/// Starts a child that shares what `share` says and returns 0 in it; the parent never
/// returns but runs `then(child_pid, arg)` on a stack of its own. A negative errno when
/// the child cannot be started (the caller's stack is untouched then).
///
/// # Safety
/// In a single-threaded forked child, with every signal blocked; `then` must not return
/// and, with [`Share::Memory`], must make raw system calls only ([`sys`]).
#[cfg(target_arch = "x86_64")]
pub(super) unsafe fn split(share: Share, then: Then, arg: usize) -> libc::c_long {
    // All positive: the register gets the full 64 bits the kernel reads.
    let flags = match share {
        Share::Memory => libc::CLONE_VM,
        Share::UntilExec => libc::CLONE_VM | libc::CLONE_VFORK,
    } as usize
        | libc::SIGCHLD as usize;
    let top = match map_stack() {
        // SAFETY: one past the end of the fresh mapping.
        Ok(base) => unsafe { base.cast::<u8>().add(STACK_MAPPING) },
        Err(errno) => return -libc::c_long::from(errno),
    };
    let ret: libc::c_long;
    // SAFETY: clone(flags, stack = 0: the child goes on on this stack, no tids, no TLS).
    // The parent's branch touches no memory before it moves to `top` (16-byte aligned, as
    // `call` wants), and `then` never returns. The operands sit in registers the syscall
    // keeps (it clobbers rax, rcx and r11 only; rcx and r11 are plain outputs, so no input
    // is given them).
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jle 2f",
            "mov rsp, {top}",
            "mov rdi, rax",
            "mov rsi, {arg}",
            "call {then}",
            "ud2",
            "2:",
            top = in(reg) top,
            arg = in(reg) arg,
            then = in(reg) then,
            inlateout("rax") libc::SYS_clone => ret,
            in("rdi") flags,
            in("rsi") 0usize,
            in("rdx") 0usize,
            in("r10") 0usize,
            in("r8") 0usize,
            out("rcx") _,
            out("r11") _,
        );
    }
    ret
}

/// A plain `fork`; the parent runs `then` on its own copy of this stack.
///
/// # Safety
/// As the x86_64 version.
#[cfg(not(target_arch = "x86_64"))]
pub(super) unsafe fn split(_share: Share, then: Then, arg: usize) -> libc::c_long {
    // SAFETY: the caller is a single-threaded forked child.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return -libc::c_long::from(super::errno());
    }
    if pid > 0 {
        // SAFETY: the caller's contract.
        unsafe { then(libc::c_long::from(pid), arg) }
    }
    0
}

/// A raw system call: the result, or a negative errno. Unlike libc's wrappers it never
/// writes `errno`, which a [`Share::Memory`] parent shares with its child. The fifth
/// argument register is zero ([`sys5`]).
///
/// # Safety
/// As the system call `nr` itself.
#[inline(always)]
pub(crate) unsafe fn sys(nr: libc::c_long, a: usize, b: usize, c: usize, d: usize) -> libc::c_long {
    // SAFETY: the caller's contract.
    unsafe { sys5(nr, a, b, c, d, 0) }
}

/// [`sys`] with a fifth argument (`mount`, `mount_setattr`, `move_mount`, `prctl`).
///
/// # Safety
/// As the system call `nr` itself.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn sys5(
    nr: libc::c_long,
    a: usize,
    b: usize,
    c: usize,
    d: usize,
    e: usize,
) -> libc::c_long {
    let ret: libc::c_long;
    // SAFETY: the caller's contract; the syscall clobbers rcx and r11.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            in("r10") d,
            in("r8") e,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// libc's `syscall` with five arguments, turned into [`sys`]'s convention (without
/// [`Share::Memory`] parents there is no `errno` to spare).
///
/// # Safety
/// As the system call `nr` itself.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) unsafe fn sys5(
    nr: libc::c_long,
    a: usize,
    b: usize,
    c: usize,
    d: usize,
    e: usize,
) -> libc::c_long {
    // SAFETY: the caller's contract.
    let ret = unsafe { libc::syscall(nr, a, b, c, d, e) };
    if ret < 0 {
        -libc::c_long::from(super::errno())
    } else {
        ret
    }
}

/// Starts `child(arg)` on the stack ending at `stack_top` (16-byte aligned) in a process
/// that shares this one's memory: nothing of toolgate is copied. With
/// [`Share::UntilExec`] the caller sleeps until the child has called `exec` or exited
/// (`CLONE_VM | CLONE_VFORK`, what `posix_spawn` does); with [`Share::Memory`] both run on
/// side by side (the namespace's relay, which only waits for a report and exits). Returns
/// the child's pid or a negative errno.
///
/// # Safety
/// Every signal blocked in the calling thread. `child` must never return and must end in
/// `exec` or `_exit`; until then it may only touch its own stack and memory nothing else
/// uses, and (it shares the caller's thread-local `errno`) make raw system calls only
/// ([`sys`]) unless the caller sleeps: the other threads of toolgate run on beside it.
#[cfg(target_arch = "x86_64")]
pub(super) unsafe fn clone_on(
    share: Share,
    stack_top: *mut u8,
    child: unsafe extern "C" fn(usize) -> !,
    arg: usize,
) -> libc::c_long {
    let flags = match share {
        Share::Memory => libc::CLONE_VM,
        Share::UntilExec => libc::CLONE_VM | libc::CLONE_VFORK,
    } as usize
        | libc::SIGCHLD as usize;
    let ret: libc::c_long;
    // SAFETY: clone(flags, stack_top, no tids, no TLS). In the child (rax 0) the stack is
    // the new one and the registers are the parent's, so `arg` and `child` are at hand;
    // `call` leaves the alignment `child` expects and `child` never returns. The parent
    // goes on (after the child's exec or exit, with `UntilExec`), its own stack untouched.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov rdi, {arg}",
            "call {child}",
            "ud2",
            "2:",
            arg = in(reg) arg,
            child = in(reg) child,
            inlateout("rax") libc::SYS_clone => ret,
            in("rdi") flags,
            in("rsi") stack_top,
            in("rdx") 0usize,
            in("r10") 0usize,
            in("r8") 0usize,
            out("rcx") _,
            out("r11") _,
        );
    }
    ret
}
