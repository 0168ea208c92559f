//! Starting a child in the starting process's own memory, on a stack of its own.
//!
//! A `fork` of toolgate copies its page tables, makes toolgate take a copy-on-write fault
//! on every page it writes until the child's `exec` or exit, and tears the copy down
//! again: 0.6–0.8 ms of a 3 ms `run_shell true` (bench/RESULTS-issue27.md). A child
//! started here shares the memory instead (`CLONE_VM`, through libc's `clone`):
//! - [`until_exec`]: the calling thread sleeps until the child has called `exec` or
//!   exited (`CLONE_VFORK`, what `posix_spawn` does): how commands start;
//! - [`beside`]: both run at once (the namespace's relay, which only waits and exits).
//!
//! The child gets a copy of the signal handlers, which point into the shared memory, so
//! every signal must stay blocked until it has put them back to their defaults (or for
//! good); and it shares the starting thread's thread-local `errno`.

use std::ffi::c_void;
use std::io;

use rustix::mm::{MapFlags, MprotectFlags, ProtFlags, mmap_anonymous, mprotect, munmap};

use super::child::with_signals_blocked;

/// Size of a child's stack: its code keeps small buffers only (the supervisor's largest is
/// a 4 KiB directory read).
const STACK: usize = 64 * 1024;
/// A page without access under the stack, so an overflow faults instead of writing
/// elsewhere.
const GUARD: usize = 4096;
/// Bytes of a stack's mapping, its guard page included.
const MAPPING: usize = STACK + GUARD;
/// Most bytes a child's closure may take at the top of its stack.
const CLOSURE: usize = 1024;

/// A child's stack: a fresh mapping whose lowest page has no access, unmapped when
/// dropped. Two system calls, nothing allocated, so a forked child may make one.
#[derive(Debug)]
pub(super) struct Stack(*mut c_void);

// SAFETY: a plain mapping; only its owner unmaps it, once the child using it is done.
unsafe impl Send for Stack {}

impl Stack {
    pub(super) fn new() -> io::Result<Self> {
        // SAFETY: a fresh anonymous mapping, which nothing else refers to, then its first
        // page (the mapping is unmapped again by `stack` if that fails).
        unsafe {
            let stack = Self(mmap_anonymous(
                std::ptr::null_mut(),
                MAPPING,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::STACK,
            )?);
            mprotect(stack.0, GUARD, MprotectFlags::empty())?;
            Ok(stack)
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: our own mapping; its owner keeps it until the child using it is gone.
        // munmap of a whole mapping of ours fails only for an invalid range, which this
        // type rules out.
        let _ = unsafe { munmap(self.0, MAPPING) };
    }
}

/// Starts `child` vfork-style: it runs in this process's memory on `stack` while the
/// calling thread sleeps until it has called `exec` or exited (`CLONE_VM | CLONE_VFORK`).
/// The child's pid; its exit status is what `child` returns, if it returns.
///
/// Every signal is blocked in the calling thread across the start, so the child begins
/// with all of them blocked and must unblock them itself (after resetting the actions of
/// handled ones: the handlers are the caller's code).
///
/// # Safety
/// `child` takes no lock, allocates and frees nothing: the other threads of the process
/// run on meanwhile. It may use what the sleeping caller lent it and libc calls that set
/// `errno` (the caller's, who sleeps).
pub(super) unsafe fn until_exec<F: FnOnce() -> i32>(
    stack: &mut Stack,
    child: F,
) -> io::Result<i32> {
    // SAFETY: the caller's contract; the caller sleeps while `child` runs.
    unsafe { clone_on(libc::CLONE_VM | libc::CLONE_VFORK, stack, child) }
}

/// Starts `child` in this process's memory on `stack`, running beside the caller
/// (`CLONE_VM`). The child's pid; its exit status is what `child` returns, if it returns.
///
/// # Safety
/// As [`until_exec`], and since both run at once: `child` touches nothing but its stack
/// and what it owns, never writes `errno` (it is the calling thread's: rustix calls,
/// which return errors without it, and libc calls only where they cannot fail), and
/// `stack` stays mapped until the child is reaped.
pub(super) unsafe fn beside<F: FnOnce() -> i32 + Send + 'static>(
    stack: &mut Stack,
    child: F,
) -> io::Result<i32> {
    // SAFETY: the caller's contract.
    unsafe { clone_on(libc::CLONE_VM, stack, child) }
}

/// `clone(flags)` with `child` moved to the top of `stack`, where only the child reads
/// it (so it outlives the caller's frame when both run at once).
///
/// # Safety
/// As [`until_exec`] or [`beside`], according to `flags`.
unsafe fn clone_on<F: FnOnce() -> i32>(
    flags: libc::c_int,
    stack: &mut Stack,
    child: F,
) -> io::Result<i32> {
    extern "C" fn run<F: FnOnce() -> i32>(closure: *mut c_void) -> libc::c_int {
        // SAFETY: `clone_on` moved an `F` there for this child alone, which takes it once.
        let child = unsafe { closure.cast::<F>().read() };
        child()
    }
    const { assert!(size_of::<F>() <= CLOSURE && align_of::<F>() <= 16) };
    // The top of the mapping is page-aligned; the closure sits just under it, 16-aligned,
    // and the child's stack grows down from there. Every signal is blocked across the
    // start: the child begins with them all blocked, so no handler of ours runs in it
    // until it has put the actions back.
    let offset = MAPPING - size_of::<F>().next_multiple_of(16);
    with_signals_blocked(|| {
        // SAFETY: `offset` lies in the writable part of our mapping (CLOSURE < STACK), and
        // nothing else uses it. Then the caller's contract: `run::<F>` finds the closure
        // at `closure`, where the child's stack also starts (glibc pushes below it). Without
        // a child, the closure is still ours to drop.
        unsafe {
            let closure = stack.0.byte_add(offset);
            closure.cast::<F>().write(child);
            let pid = libc::clone(run::<F>, closure, flags | libc::SIGCHLD, closure);
            if pid < 0 {
                let error = io::Error::last_os_error();
                drop(closure.cast::<F>().read());
                return Err(error);
            }
            Ok(pid)
        }
    })?
}
