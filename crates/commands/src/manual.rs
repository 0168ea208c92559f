//! `toolgate completions SHELL` and `toolgate man`: generated from the command definitions,
//! so they never fall behind the flags.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, ValueEnum};

use crate::Cli;

/// Arguments of `toolgate completions`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
}

/// The shells `toolgate completions` writes for.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

/// Arguments of `toolgate man`.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Write `toolgate.1` and one page per subcommand (`toolgate-serve.1`, …) into this
    /// folder instead of printing `toolgate.1` to stdout.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
}

/// Prints the completion script for `args.shell` on stdout.
pub(crate) fn completions(args: &CompletionsArgs) -> ExitCode {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
        Shell::Elvish => clap_complete::Shell::Elvish,
        Shell::Powershell => clap_complete::Shell::PowerShell,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "toolgate", &mut script);
    write_stdout(&script)
}

/// Prints `toolgate.1` on stdout, or writes every page into `--out-dir`.
pub(crate) fn man(args: &ManArgs) -> ExitCode {
    let command = Cli::command();
    if let Some(dir) = &args.out_dir {
        if let Err(e) = fs_err::create_dir_all(dir) {
            eprintln!("toolgate: {e}; check that the folder can be created");
            return ExitCode::FAILURE;
        }
        return match clap_mangen::generate_to(command, dir) {
            Ok(()) => {
                outln!("wrote the manual pages into {}", dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!(
                    "toolgate: cannot write the manual pages into {}: {e}; check that the folder is writable",
                    dir.display()
                );
                ExitCode::FAILURE
            }
        };
    }
    let mut page = Vec::new();
    if let Err(e) = clap_mangen::Man::new(command).render(&mut page) {
        eprintln!("toolgate: cannot render the manual page: {e}");
        return ExitCode::FAILURE;
    }
    write_stdout(&page)
}

fn write_stdout(bytes: &[u8]) -> ExitCode {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        crate::stdout_failed(&e)
    }
    ExitCode::SUCCESS
}
