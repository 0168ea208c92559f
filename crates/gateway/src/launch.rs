//! What a stdio server's launch runs from the project: the files its trust fingerprint
//! covers, and the paths the write tools must then leave alone.
//!
//! Trust used to cover how a server is started (command, args, env, cwd), not what that
//! runs: after `toolgate mcp trust`, a model that may only write files could rewrite
//! `server.sh`, or add `node_modules/.bin/x` for an `npx -y x` server, and have its code run
//! at the next start, outside any sandbox. [`resolve`] finds every regular file inside the
//! project (the roots, `node_modules` and `.venv` included) that the launch resolves to:
//!
//! - the command, when it is a path (`./server.sh`, `bin/srv`), names a file in the working
//!   folder (`server.sh`, run when `PATH` holds `.`), or is found through a `PATH` entry
//!   inside the project (`node_modules/.bin`);
//! - every argument, or the value of a `--flag=value`, that names an existing regular file
//!   (`node server.js`, `python srv.py`, `bash ./x.sh`, `uv run x.py`, `deno run x.ts`), and
//!   likewise every word of an `env` value (`NODE_OPTIONS = "--require ./hook.js"`);
//! - for package runners (`npx`, `bunx`, `pnpx`, `npm exec`, `pnpm dlx|exec`,
//!   `yarn dlx|exec`, `bun x`), what they would take from the project, looking in the
//!   working folder and each folder above it up to its root as npm does:
//!   `node_modules/.bin/NAME` (and the package its link leads into) and `node_modules/PKG/`
//!   (its `package.json` and the bins it declares); for `uvx`, `uv run`, `uv tool run` and
//!   `pipx run`, `.venv/bin/NAME`.
//!
//! A symlink is resolved and its target hashed wherever it points, outside the project too
//! (refusing would break `node_modules/.bin` links into a store; hashing makes a retargeted
//! link a change); the link itself is recorded with its target. A file that does not exist
//! is simply not in the list, so one that appears later (`node_modules/.bin/x`) is a change.
//! Not covered: what the files named load in turn (`server.js` requiring `./lib.js`), a
//! `sh -c` string, folders (`uvx --from ./pkg`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::config::Transport;

mod runner;
use runner::{Runner, bin_name, package_name, runner_of, runner_targets};

/// Largest file hashed: a bigger "script" cannot be fingerprinted, so its server cannot be
/// trusted (hashing it at every start would stall the gateway).
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 30;
/// Largest `package.json` read for its `bin` entries.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;
/// Most bins taken from one `package.json`.
const MAX_BINS: usize = 64;

/// Why a file a launch runs cannot be fingerprinted (so its server cannot be trusted).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FingerprintError {
    /// Opening or reading it failed.
    #[error("cannot read it ({0})")]
    Read(#[source] std::io::Error),
    /// It is not a regular file (any more).
    #[error("cannot read it (`{}` is not a regular file)", .0.display())]
    NotRegular(PathBuf),
    /// It is larger than [`MAX_FILE_BYTES`].
    #[error(
        "`{}` is {size} bytes, more than toolgate fingerprints ({MAX_FILE_BYTES})",
        .path.display()
    )]
    TooLarge { path: PathBuf, size: u64 },
    /// It grew past [`MAX_FILE_BYTES`] while it was read.
    #[error(
        "`{}` grew past what toolgate fingerprints ({MAX_FILE_BYTES} bytes)",
        .0.display()
    )]
    Grew(PathBuf),
}

/// The project files one launch runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Launch {
    /// Display name (relative to the first root when inside it) → `sha256:…` of the
    /// content, or `symlink to NAME`.
    pub(crate) files: BTreeMap<String, String>,
    /// Real paths inside the roots that write tools must leave alone: the files hashed and
    /// where a file would join the launch if it were created (`node_modules/.bin/x`).
    pub(crate) protect: BTreeSet<PathBuf>,
    /// Folders inside the roots nothing may be written in (a runner's package folder).
    pub(crate) protect_dirs: BTreeSet<PathBuf>,
}

/// The project files `transport` runs; `roots` (canonical, the first being the project) say
/// what is inside the project. An error names a file that cannot be fingerprinted.
pub(crate) fn resolve(
    transport: &Transport,
    roots: &[PathBuf],
) -> Result<Launch, FingerprintError> {
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = transport
    else {
        return Ok(Launch::default());
    };
    let mut scan = Scan {
        roots,
        cwd: fs_err::canonicalize(cwd).unwrap_or_else(|_| normalize(cwd)),
        launch: Launch::default(),
        error: None,
    };
    scan.command(command, env.get("PATH").map(String::as_str));
    for arg in args {
        scan.argument(arg);
    }
    // `NODE_OPTIONS=--require ./hook.js`, `SERVER_CONFIG=srv.toml`: files named in env.
    for value in env.values() {
        for word in value.split_whitespace() {
            scan.argument(word);
        }
    }
    scan.runner(command, args);
    match scan.error {
        Some(e) => Err(e),
        None => Ok(scan.launch),
    }
}

/// Whether a path is protected when it does not exist (yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    /// Creating it would change what runs: protect it.
    Protect,
    /// Only an existing file counts (an argument that may name anything).
    Ignore,
}

struct Scan<'a> {
    roots: &'a [PathBuf],
    cwd: PathBuf,
    launch: Launch,
    error: Option<FingerprintError>,
}

impl Scan<'_> {
    fn inside(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| path.starts_with(r))
    }

    fn display(&self, path: &Path) -> String {
        match self.roots.first().and_then(|r| path.strip_prefix(r).ok()) {
            Some(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
            _ => path.to_string_lossy().into_owned(),
        }
    }

    /// Records `path` if it is a regular file inside the project (or a link inside it).
    fn file(&mut self, path: &Path, missing: Missing) {
        let path = normalize(path);
        let inside = self.inside(&path);
        let meta = match fs_err::metadata(&path) {
            Ok(meta) => meta,
            Err(_) => {
                if inside {
                    if let Ok(target) = fs_err::read_link(&path) {
                        // A dangling link: creating its target later adds a file.
                        let link = format!("symlink to {} (missing)", target.display());
                        self.launch.files.insert(self.display(&path), link);
                    }
                    if missing == Missing::Protect {
                        self.launch.protect.insert(real_or_lexical(&path));
                    }
                }
                return;
            }
        };
        if !meta.is_file() {
            return;
        }
        let Ok(real) = fs_err::canonicalize(&path) else {
            return;
        };
        let real_inside = self.inside(&real);
        if !inside && !real_inside {
            return;
        }
        if real != path {
            let link = format!("symlink to {}", self.display(&real));
            self.launch.files.insert(self.display(&path), link);
        }
        if real_inside {
            self.launch.protect.insert(real.clone());
        }
        match hash_file(&real) {
            Ok(hash) => {
                self.launch.files.insert(self.display(&real), hash);
            }
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }

    /// The command: a path, a file in the working folder, or what `PATH` finds first.
    fn command(&mut self, command: &str, path_var: Option<&str>) {
        if command.contains('/') {
            self.file(&self.cwd.join(command), Missing::Protect);
            return;
        }
        self.file(&self.cwd.join(command), Missing::Ignore);
        let path_var = match path_var {
            Some(p) => p.into(),
            None => std::env::var_os("PATH").unwrap_or_default(),
        };
        for dir in std::env::split_paths(&path_var) {
            // An empty entry is the working folder; a relative one is taken from it.
            let candidate = self.cwd.join(dir).join(command);
            if is_executable(&candidate) {
                self.file(&candidate, Missing::Protect);
                break;
            }
            if self.inside(&normalize(&candidate)) {
                self.file(&candidate, Missing::Protect);
            }
        }
    }

    /// An argument naming a file (`server.js`, `--config=srv.toml`).
    fn argument(&mut self, arg: &str) {
        if arg.is_empty() || arg.contains('\0') {
            return;
        }
        self.file(&self.cwd.join(arg), Missing::Ignore);
        if arg.starts_with('-')
            && let Some((_, value)) = arg.split_once('=')
            && !value.is_empty()
        {
            self.file(&self.cwd.join(value), Missing::Ignore);
        }
    }

    /// The working folder and each folder above it that is still inside the project.
    fn ancestors(&self) -> Vec<PathBuf> {
        self.cwd
            .ancestors()
            .take_while(|dir| self.inside(dir))
            .map(Path::to_path_buf)
            .collect()
    }

    /// What a package runner (`npx -y X`, `uvx X`) would take from the project.
    fn runner(&mut self, command: &str, args: &[String]) {
        let Some((kind, rest)) = runner_of(command, args) else {
            return;
        };
        let (packages, positional) = runner_targets(kind, rest);
        match kind {
            Runner::Node => {
                for spec in &packages {
                    self.node_package(spec);
                }
                if let Some(first) = &positional {
                    if packages.is_empty() {
                        // `npx X`: X is a package spec, run through its bin of the same name.
                        self.node_package(first);
                    }
                    if let Some(name) = package_name(first) {
                        let bin = name.rsplit('/').next().unwrap_or(name);
                        self.node_bin(bin);
                    }
                }
            }
            Runner::Python => {
                // `tool@1.2`, `tool==1.2`, `tool[extra]`: the executable is `tool`.
                let tool = positional
                    .as_deref()
                    .and_then(|p| p.split(['@', '=', '<', '>', '[', '~', '!']).next());
                if let Some(name) = tool.and_then(bin_name) {
                    for dir in self.ancestors() {
                        self.file(&dir.join(".venv/bin").join(name), Missing::Protect);
                    }
                }
            }
        }
    }

    /// `node_modules/.bin/NAME` in each folder npm looks in, and the package it leads into.
    fn node_bin(&mut self, bin: &str) {
        let Some(bin) = bin_name(bin) else { return };
        for dir in self.ancestors() {
            let link = dir.join("node_modules/.bin").join(bin);
            self.file(&link, Missing::Protect);
            if let Ok(real) = fs_err::canonicalize(&link)
                && let Some(package) = owning_package(&real)
            {
                self.package_dir(&package);
            }
        }
    }

    /// A package spec: a local folder (`./pkg`, `file:../pkg`) or `node_modules/NAME` in each
    /// folder npm looks in.
    fn node_package(&mut self, spec: &str) {
        let local = spec.strip_prefix("file:").unwrap_or(spec);
        if local.starts_with('.') || local.starts_with('/') {
            self.package_dir(&self.cwd.join(local));
            return;
        }
        let Some(name) = package_name(spec) else {
            return;
        };
        for dir in self.ancestors() {
            self.package_dir(&dir.join("node_modules").join(name));
        }
    }

    /// A package folder: protected as a whole; its `package.json` and declared bins hashed.
    fn package_dir(&mut self, dir: &Path) {
        let dir = normalize(dir);
        if !self.inside(&dir) {
            return;
        }
        self.launch.protect_dirs.insert(real_or_lexical(&dir));
        let manifest = dir.join("package.json");
        self.file(&manifest, Missing::Ignore);
        let Some(json) = read_manifest(&manifest) else {
            return;
        };
        let bins: Vec<&str> = match &json["bin"] {
            serde_json::Value::String(one) => vec![one.as_str()],
            serde_json::Value::Object(map) => map.values().filter_map(|v| v.as_str()).collect(),
            _ => Vec::new(),
        };
        for bin in bins.into_iter().take(MAX_BINS) {
            self.file(&dir.join(bin), Missing::Protect);
        }
    }
}

/// `…/node_modules/NAME` (or `@scope/NAME`) holding `real`, a file below it.
fn owning_package(real: &Path) -> Option<PathBuf> {
    let parts: Vec<Component<'_>> = real.components().collect();
    let at = parts
        .iter()
        .rposition(|c| c.as_os_str() == "node_modules")?;
    let scoped = parts
        .get(at + 1)?
        .as_os_str()
        .to_string_lossy()
        .starts_with('@');
    let end = at + if scoped { 3 } else { 2 };
    (parts.len() > end).then(|| parts[..end].iter().collect())
}

/// A `package.json`, if it is a small regular file holding JSON.
fn read_manifest(path: &Path) -> Option<serde_json::Value> {
    let real = fs_err::canonicalize(path).ok()?;
    let mut file = open_regular(&real).ok()?;
    let mut text = String::new();
    (&mut file)
        .take(MAX_MANIFEST_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    serde_json::from_str(&text).ok()
}

/// Opens a regular file for reading without following a final symlink or blocking on a
/// FIFO swapped in since it was checked.
fn open_regular(real: &Path) -> Result<fs_err::File, FingerprintError> {
    use fs_err::os::unix::fs::OpenOptionsExt;
    let file = fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(real)
        .map_err(FingerprintError::Read)?;
    let meta = file.metadata().map_err(FingerprintError::Read)?;
    if !meta.is_file() {
        return Err(FingerprintError::NotRegular(real.to_path_buf()));
    }
    Ok(file)
}

/// `sha256:` and the hex digest of the file's content.
fn hash_file(real: &Path) -> Result<String, FingerprintError> {
    let mut file = open_regular(real)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return Err(FingerprintError::TooLarge {
            path: real.to_path_buf(),
            size,
        });
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(FingerprintError::Read)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_FILE_BYTES {
            return Err(FingerprintError::Grew(real.to_path_buf()));
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex_digest(&hasher.finalize()))
}

/// Whether `path` is a file a shell would run (exists, regular, executable by someone).
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs_err::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `path` with `.` dropped and `..` applied to the components before it (lexically).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The real path `path` would have: its longest existing ancestor resolved, the rest as is.
fn real_or_lexical(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = fs_err::canonicalize(at) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                at = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// `sha256:` and the digest in hex.
pub(crate) fn hex_digest(digest: &[u8]) -> String {
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests;
