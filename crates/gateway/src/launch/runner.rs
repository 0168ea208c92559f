//! Package runners (`npx`, `uvx`, …): which one a command is, and what package or bin its
//! arguments name.

use std::path::Path;

/// Which kind of package a runner takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Runner {
    /// npm packages (`node_modules`).
    Node,
    /// Python tools (`.venv/bin`).
    Python,
}

/// The runner `command args` is, with its arguments after the subcommand.
pub(super) fn runner_of<'a>(command: &str, args: &'a [String]) -> Option<(Runner, &'a [String])> {
    let name = Path::new(command).file_name()?.to_str()?;
    let first = args.first().map(String::as_str);
    let second = args.get(1).map(String::as_str);
    let after = |n: usize| args.get(n..).unwrap_or_default();
    Some(match (name, first, second) {
        ("npx" | "bunx" | "pnpx", _, _) => (Runner::Node, args),
        ("npm", Some("exec" | "x"), _)
        | ("pnpm" | "yarn", Some("dlx" | "exec"), _)
        | ("bun", Some("x"), _) => (Runner::Node, after(1)),
        ("uvx", _, _) => (Runner::Python, args),
        ("uv" | "pipx", Some("run"), _) => (Runner::Python, after(1)),
        ("uv", Some("tool"), Some("run")) => (Runner::Python, after(2)),
        _ => return None,
    })
}

/// Runner options that take the next argument as their value.
const VALUE_OPTIONS: &[&str] = &[
    "-p",
    "--package",
    "-c",
    "--call",
    "-w",
    "--workspace",
    "--registry",
    "--cache",
    "--prefix",
    "--userconfig",
    "--from",
    "--with",
    "--with-editable",
    "--with-requirements",
    "--python",
    "--directory",
    "--project",
    "--index",
    "--default-index",
    "--index-url",
    "--extra-index-url",
    "--env-file",
    "--spec",
];

/// The packages named by options (`-p X`, `--package=X` for npm) and the first positional
/// argument (the package or bin to run).
pub(super) fn runner_targets(kind: Runner, args: &[String]) -> (Vec<String>, Option<String>) {
    let package_option = |o: &str| kind == Runner::Node && matches!(o, "-p" | "--package");
    let mut packages = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            return (packages, iter.next().cloned());
        }
        if !arg.starts_with('-') {
            return (packages, Some(arg.clone()));
        }
        let (option, value) = match arg.split_once('=') {
            Some((o, v)) => (o, Some(v.to_owned())),
            None if VALUE_OPTIONS.contains(&arg.as_str()) => (arg.as_str(), iter.next().cloned()),
            None => (arg.as_str(), None),
        };
        if package_option(option)
            && let Some(value) = value
        {
            packages.push(value);
        }
    }
    (packages, None)
}

/// `@scope/name` or `name` from an npm spec (`@scope/name@1.2`, `name@latest`); `None` for
/// URLs, git specs, aliases and anything that could climb out of `node_modules`.
pub(super) fn package_name(spec: &str) -> Option<&str> {
    let name = match spec.strip_prefix('@') {
        Some(rest) => {
            let end = rest.find('@').map_or(spec.len(), |i| i + 1);
            &spec[..end]
        }
        None => spec.split('@').next()?,
    };
    let parts: Vec<&str> = name.split('/').collect();
    let scoped = name.starts_with('@');
    let ok = parts.len() == if scoped { 2 } else { 1 }
        && parts
            .iter()
            .all(|p| !p.is_empty() && *p != "." && *p != ".." && !p.contains([':', '\\', '\0']));
    ok.then_some(name)
}

/// A bin name that stays one path component.
pub(super) fn bin_name(name: &str) -> Option<&str> {
    let ok = !name.is_empty()
        && !name.starts_with('-')
        && name != "."
        && name != ".."
        && !name.contains(['/', '\0']);
    ok.then_some(name)
}
