//! Starting a child in the starting process's own memory, on a stack of its own (issue 27):
//! nothing is copied, where a `fork` copies the page tables of a large process and tears
//! the copy down again at the child's `exec` or exit ([`clone_on`]). Also the raw system
//! calls such a child makes ([`sys`]).

/// What the child shares with its parent.
#[derive(Clone, Copy)]
pub(super) enum Share {
    /// The memory, both running side by side (`CLONE_VM`).
    Memory,
    /// The memory, the parent sleeping until the child calls `exec` or exits
    /// (`CLONE_VM | CLONE_VFORK`, what `vfork` does).
    UntilExec,
}

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
