//! Atomic writes and the `write_file` tool.
//!
//! A write goes to a new temporary file in the target's folder, is synced, takes the old
//! file's permissions (and owner, where allowed), and is renamed over the target: a failure
//! at any point leaves either the old file or the new one, never a mix, and removes the
//! temporary file.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use rustix::fs::OFlags;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{
    CallContext, Concurrency, DisclosureHint, Footprint, Tool, ToolError, ToolMeta, ToolNames,
    ToolOutput, run_blocking,
};

use crate::confine::door;
use crate::confine::{Access, CreateParents, Parent, PathError, Roots};
use crate::list::human_size;
use crate::read::{FileStamp, FileStamps};

/// A test seam: called with the temporary file's path after it is written and synced and
/// before it is renamed over the target. An error aborts the write there, as a crash or a
/// full disk would, and the target is left as it was.
pub type BeforeRename = Arc<dyn Fn(&Path) -> io::Result<()> + Send + Sync>;

/// Removes the temporary file unless the rename happened.
struct TempGuard<'a> {
    dir: BorrowedFd<'a>,
    name: Option<OsString>,
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if let Some(name) = &self.name {
            let _ = door::remove_in(self.dir, name);
        }
    }
}

/// Replaces (or creates) the entry `parent.name` with `bytes` atomically, inside the open
/// folder `parent.fd`: the temporary file is created there (`O_EXCL`, no symlink followed)
/// and renamed over the target there, so neither step can be redirected elsewhere. `old` is
/// the metadata of the file being replaced, whose permissions and owner the new file keeps.
/// Returns the new file's metadata.
fn write_atomic(
    parent: &Parent,
    bytes: &[u8],
    old: Option<&std::fs::Metadata>,
    before_rename: Option<&BeforeRename>,
) -> io::Result<std::fs::Metadata> {
    let dir = parent.fd.as_fd();
    let name = parent.name.to_string_lossy();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut opened = None;
    for attempt in 0..64u32 {
        let tmp = OsString::from(format!(
            ".{name}.toolgate-{}-{nanos:x}-{attempt}.tmp",
            std::process::id()
        ));
        match door::create_new(dir, &tmp, old.map_or(0o666, |m| m.mode() & 0o7777)) {
            Ok(file) => {
                opened = Some((file, tmp));
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    let (mut file, tmp) = opened.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::AlreadyExists,
            "could not create a temporary file",
        )
    })?;
    let mut guard = TempGuard {
        dir,
        name: Some(tmp.clone()),
    };
    file.write_all(bytes)?;
    if let Some(old) = old {
        // The creation mode went through the umask; set the old mode exactly.
        file.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777))?;
        let mine = file.metadata()?;
        if (mine.uid(), mine.gid()) != (old.uid(), old.gid()) {
            // Only root may give a file away; elsewhere the file keeps our ids.
            let _ = std::os::unix::fs::fchown(&file, Some(old.uid()), Some(old.gid()));
        }
    }
    file.sync_all()?;
    if let Some(hook) = before_rename {
        let shown = parent.real.parent().unwrap_or(Path::new("")).join(&tmp);
        hook(&shown)?;
    }
    door::rename_in(dir, &tmp, &parent.name)?;
    guard.name = None;
    // The rename is durable once the folder is synced too.
    door::sync_dir(dir);
    // The descriptor still names the renamed file: its metadata is the target's now.
    file.metadata()
}

/// What is at `parent.name` now, not following a symlink; `None` when nothing is.
fn existing(parent: &Parent) -> io::Result<Option<std::fs::Metadata>> {
    match door::open_beneath(
        parent.fd.as_fd(),
        Path::new(&parent.name),
        OFlags::PATH | OFlags::NOFOLLOW,
    ) {
        Ok(fd) => door::file(fd, &parent.real).metadata().map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            // A symlink there: described as such by the caller.
            door::stat_at(parent.fd.as_fd(), &parent.name)?;
            Err(io::Error::from_raw_os_error(libc::ELOOP))
        }
        Err(e) => Err(e),
    }
}

/// A path error as the model should read it when writing.
pub(crate) fn path_error(e: PathError) -> ToolError {
    ToolError::recoverable(e.to_string())
}

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// File path, relative to the project root.
    pub path: String,
    /// The whole new content.
    pub content: String,
}

/// Structured result of `write_file` and `edit_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteOutput {
    /// What was done (and, for `edit_file`, a unified diff).
    pub text: String,
    /// The file, relative to the project root when inside it.
    pub path: String,
    /// Whether the text was cut (a long diff).
    pub truncated: bool,
    /// Why the text was cut (`payload_limit`), only when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<toolgate_core::TruncationReason>,
    /// Size of the file now, in bytes.
    pub bytes: u64,
    /// Whether the file was created (`write_file`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
    /// Occurrences replaced (`edit_file`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replacements: Option<u64>,
    /// Time taken.
    pub elapsed_ms: u64,
}

/// What `write_file` and `edit_file` share: the roots they write under, the test seam before
/// the rename, their metadata, and the last step of every change ([`Writer::commit`]).
pub(crate) struct Writer {
    roots: Arc<Roots>,
    before_rename: Option<BeforeRename>,
}

impl Writer {
    /// A writer over `roots`, with no test seam.
    pub(crate) fn new(roots: Arc<Roots>) -> Self {
        Self {
            roots,
            before_rename: None,
        }
    }

    /// Runs `hook` between writing the temporary file and renaming it.
    pub(crate) fn with_before_rename(mut self, hook: BeforeRename) -> Self {
        self.before_rename = Some(hook);
        self
    }

    /// The metadata of a tool that changes one file.
    pub(crate) fn meta(display: &str, idempotent: bool) -> ToolMeta {
        ToolMeta {
            timeout: Some(std::time::Duration::from_secs(30)),
            concurrency: Concurrency::Mutating,
            action: "fs.write".to_owned(),
            spillable: true,
            idempotent,
            destructive: true,
            display: display.to_owned(),
            // A core tool: in the array every turn, never deferred.
            disclosure: DisclosureHint::Direct,
            ..ToolMeta::default()
        }
    }

    /// Runs `change` on a blocking thread with what it needs to write.
    pub(crate) async fn run<A: Send + 'static>(
        &self,
        args: A,
        ctx: CallContext,
        change: fn(&Roots, &A, &Commit<'_>) -> Result<ToolOutput, ToolError>,
    ) -> Result<ToolOutput, ToolError> {
        let roots = Arc::clone(&self.roots);
        let hook = self.before_rename.clone();
        let stamps = ctx.session.ext::<FileStamps>();
        let names = ctx.session.tool_names();
        run_blocking(move || {
            let commit = Commit {
                roots: &roots,
                hook: hook.as_ref(),
                stamps: &stamps,
                names: &names,
            };
            change(&roots, &args, &commit)
        })
        .await?
    }

    /// The file a write or an edit changes, by its real path: two sessions writing the same
    /// file take turns, writes to different files run at once (scheduling; see
    /// [`Footprint`]).
    pub(crate) fn footprint(&self, args: &serde_json::Value) -> Footprint {
        let path = args.get("path").and_then(serde_json::Value::as_str);
        Footprint {
            resources: path
                .and_then(|p| self.roots.resolve(p, Access::Write).ok())
                .map(toolgate_core::Resource::Path)
                .into_iter()
                .collect(),
            ..Footprint::default()
        }
    }
}

/// The last step of a write or an edit: the atomic replace, and the stamp that lets this
/// session's next edit of the file through.
pub(crate) struct Commit<'a> {
    roots: &'a Roots,
    hook: Option<&'a BeforeRename>,
    stamps: &'a FileStamps,
    /// Toolgate's tools as the session's client lists them, for the change's hints.
    pub(crate) names: &'a ToolNames,
}

impl Commit<'_> {
    /// The file as this session last read or wrote it, if it did.
    pub(crate) fn seen(&self, parent: &Parent) -> Option<FileStamp> {
        self.stamps.get(&parent.real)
    }

    /// Replaces `parent.name` (the model's `path`) with `bytes`, keeping `old`'s permissions;
    /// returns the new file's metadata and its path as shown.
    pub(crate) fn replace(
        &self,
        parent: &Parent,
        path: &str,
        bytes: &[u8],
        old: Option<&std::fs::Metadata>,
    ) -> Result<(std::fs::Metadata, String), ToolError> {
        let meta = write_atomic(parent, bytes, old, self.hook).map_err(|e| {
            ToolError::recoverable(format!(
                "writing `{path}` failed, and the file was left as it was: {e}"
            ))
        })?;
        self.stamps
            .record(parent.real.clone(), FileStamp::of(&meta));
        Ok((meta, self.roots.display(&parent.real)))
    }
}

/// `write_file`: create or replace a whole file, atomically.
pub struct WriteFileTool(Writer);

impl WriteFileTool {
    /// `write_file` over `roots`.
    pub fn new(roots: Arc<Roots>) -> Self {
        Self(Writer::new(roots))
    }

    /// Runs `hook` between writing the temporary file and renaming it (a test seam for
    /// failures at that point).
    pub fn with_before_rename(self, hook: BeforeRename) -> Self {
        Self(self.0.with_before_rename(hook))
    }
}

impl Tool for WriteFileTool {
    type Args = WriteFileArgs;
    type Output = WriteOutput;

    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        "Create or overwrite a file atomically; missing folders are created. To change part of a file, use edit_file."
    }

    fn meta(&self) -> ToolMeta {
        Writer::meta("Write file", true)
    }

    async fn call(&self, args: WriteFileArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        self.0.run(args, ctx, write_file).await
    }

    fn footprint(&self, args: &serde_json::Value) -> Footprint {
        self.0.footprint(args)
    }
}

fn write_file(
    roots: &Roots,
    args: &WriteFileArgs,
    commit: &Commit<'_>,
) -> Result<ToolOutput, ToolError> {
    let started = Instant::now();
    let parent = roots
        .open_parent(&args.path, CreateParents::Yes)
        .map_err(|e| match e {
            PathError::NotRegular {
                kind: "directory", ..
            } => ToolError::recoverable(format!(
                "`{}` is a folder; give the path of a file inside it",
                args.path
            )),
            PathError::Io { source, .. } if source.raw_os_error() == Some(libc::ENOTDIR) => {
                ToolError::recoverable(format!(
                    "cannot create the folders for `{}`: a part of it is a file, not a folder",
                    args.path
                ))
            }
            other => path_error(other),
        })?;
    let old = match existing(&parent) {
        Ok(Some(meta)) if meta.is_file() => {
            roots.check_links(&args.path, &meta).map_err(path_error)?;
            Some(meta)
        }
        Ok(Some(meta)) if meta.is_dir() => {
            return Err(ToolError::recoverable(format!(
                "`{}` is a folder; give the path of a file inside it",
                args.path
            )));
        }
        Ok(Some(_)) => {
            return Err(ToolError::recoverable(format!(
                "`{}` is not a regular file (a FIFO, socket or device); refusing to replace it",
                args.path
            )));
        }
        Ok(None) => None,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(path_error(PathError::Changed {
                path: args.path.clone(),
            }));
        }
        Err(e) => {
            return Err(ToolError::recoverable(format!(
                "cannot write `{}`: {e}",
                args.path
            )));
        }
    };
    let (meta, display) =
        commit.replace(&parent, &args.path, args.content.as_bytes(), old.as_ref())?;
    let lines = args.content.lines().count();
    let size = human_size(meta.len());
    let text = match &old {
        None => format!("Created `{display}` ({lines} lines, {size})."),
        Some(old) => format!(
            "Replaced `{display}` ({lines} lines, {size}; it was {}).",
            human_size(old.len())
        ),
    };
    Ok(ToolOutput::from_body(&WriteOutput {
        text,
        path: display,
        truncated: false,
        reason: None,
        bytes: meta.len(),
        created: Some(old.is_none()),
        replacements: None,
        elapsed_ms: started.elapsed().as_millis() as u64,
    }))
}
