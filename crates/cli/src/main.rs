//! The `toolgate` binary: everything is in the `toolgate-commands` library.

fn main() -> std::process::ExitCode {
    toolgate_commands::main()
}
