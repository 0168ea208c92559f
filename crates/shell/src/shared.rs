//! What `run_shell`, `job_output` and `job_kill` hold in common, built once by
//! [`crate::builtin_shell_tools`].

use std::sync::Arc;

use toolgate_budget::Budget;
use toolgate_contain::Sandbox;
use toolgate_fs::Roots;

use crate::limits::ShellLimits;

/// What the shell tools share: roots for `cwd`, the budget (spill store and pointer
/// format) and the limits.
pub(crate) struct Shared {
    pub roots: Arc<Roots>,
    pub budget: Arc<Budget>,
    pub limits: ShellLimits,
    pub sandbox: Arc<Sandbox>,
}
