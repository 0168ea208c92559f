//! Atomic writes (SPEC "Security model": writes are atomic) and the `write_file` tool.
//!
//! A write goes to a new temporary file in the target's folder, is synced, takes the old
//! file's permissions (and owner, where allowed), and is renamed over the target: a failure
//! at any point leaves either the old file or the new one, never a mix, and removes the
//! temporary file.

use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use fs_err::os::unix::fs::OpenOptionsExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{
    CallContext, Concurrency, DisclosureHint, Footprint, Tool, ToolError, ToolMeta, ToolOutput,
    run_blocking,
};

use crate::confine::{Access, PathError, Roots};
use crate::list::human_size;
use crate::read::{FileStamp, FileStamps};

/// A test seam: called with the temporary file's path after it is written and synced and
/// before it is renamed over the target. An error aborts the write there, as a crash or a
/// full disk would, and the target is left as it was.
pub type BeforeRename = Arc<dyn Fn(&Path) -> io::Result<()> + Send + Sync>;

/// Removes the temporary file unless the rename happened.
struct TempGuard<'a>(Option<&'a Path>);

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if let Some(path) = self.0 {
            let _ = fs_err::remove_file(path);
        }
    }
}

/// Replaces (or creates) `target` with `bytes` atomically. `old` is the metadata of the file
/// being replaced, whose permissions and owner the new file keeps. Returns the new file's
/// metadata.
pub(crate) fn write_atomic(
    target: &Path,
    bytes: &[u8],
    old: Option<&std::fs::Metadata>,
    before_rename: Option<&BeforeRename>,
) -> io::Result<std::fs::Metadata> {
    let dir = target
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent folder"))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut opened = None;
    for attempt in 0..64u32 {
        let tmp = dir.join(format!(
            ".{name}.toolgate-{}-{nanos:x}-{attempt}.tmp",
            std::process::id()
        ));
        match fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(old.map_or(0o666, |m| m.mode() & 0o7777))
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
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
    let mut guard = TempGuard(Some(&tmp));
    file.write_all(bytes)?;
    if let Some(old) = old {
        // The creation mode went through the umask; set the old mode exactly.
        file.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777))?;
        let mine = file.metadata()?;
        if (mine.uid(), mine.gid()) != (old.uid(), old.gid()) {
            // Only root may give a file away; elsewhere the file keeps our ids.
            let _ = std::os::unix::fs::fchown(file.file(), Some(old.uid()), Some(old.gid()));
        }
    }
    file.sync_all()?;
    drop(file);
    if let Some(hook) = before_rename {
        hook(&tmp)?;
    }
    fs_err::rename(&tmp, target)?;
    guard.0 = None;
    // The rename is durable once the folder is synced too.
    if let Ok(d) = fs_err::File::open(dir) {
        let _ = d.sync_all();
    }
    fs_err::metadata(target)
}

/// A path error as the model should read it when writing.
pub(crate) fn path_error(e: PathError) -> ToolError {
    ToolError::recoverable(e.to_string())
}

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// File path, relative to the project root (or absolute inside it). Missing folders are
    /// created.
    pub path: String,
    /// The complete new content of the file.
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

/// `write_file`: create or replace a whole file, atomically.
pub struct WriteFileTool {
    roots: Arc<Roots>,
    before_rename: Option<BeforeRename>,
}

impl WriteFileTool {
    /// `write_file` over `roots`.
    pub fn new(roots: Arc<Roots>) -> Self {
        Self {
            roots,
            before_rename: None,
        }
    }

    /// Runs `hook` between writing the temporary file and renaming it (a test seam for
    /// failures at that point).
    pub fn with_before_rename(mut self, hook: BeforeRename) -> Self {
        self.before_rename = Some(hook);
        self
    }
}

impl Tool for WriteFileTool {
    type Args = WriteFileArgs;
    type Output = WriteOutput;

    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        "Create a file or replace its whole content, atomically (a failed write leaves the old file intact); missing parent folders are created, and a replaced file keeps its permissions. To change part of an existing file, prefer edit_file."
    }

    fn meta(&self) -> ToolMeta {
        ToolMeta {
            timeout: Some(std::time::Duration::from_secs(30)),
            concurrency: Concurrency::Mutating,
            action: "fs.write".to_owned(),
            spillable: true,
            idempotent: true,
            destructive: true,
            display: "Write file".to_owned(),
            // A core tool: in the array every turn (seed 000 s15 ①).
            disclosure: DisclosureHint::Direct,
            ..ToolMeta::default()
        }
    }

    async fn call(&self, args: WriteFileArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let roots = Arc::clone(&self.roots);
        let hook = self.before_rename.clone();
        let stamps = ctx.session.get::<FileStamps>();
        run_blocking(move || write_file(&roots, &args, hook.as_ref(), &stamps)).await?
    }

    fn footprint(&self, args: &serde_json::Value) -> Footprint {
        crate::write::file_footprint(&self.roots, args)
    }
}

/// The file a write or an edit changes, by its real path: two sessions writing the same file
/// take turns, writes to different files run at once (scheduling; see [`Footprint`]).
pub(crate) fn file_footprint(roots: &Roots, args: &serde_json::Value) -> Footprint {
    let path = args.get("path").and_then(serde_json::Value::as_str);
    Footprint {
        resources: path
            .and_then(|p| roots.resolve(p, Access::Write).ok())
            .map(toolgate_core::Resource::Path)
            .into_iter()
            .collect(),
        ..Footprint::default()
    }
}

fn write_file(
    roots: &Roots,
    args: &WriteFileArgs,
    hook: Option<&BeforeRename>,
    stamps: &FileStamps,
) -> Result<ToolOutput, ToolError> {
    let started = Instant::now();
    let real = roots
        .resolve(&args.path, Access::Write)
        .map_err(path_error)?;
    let old = match std::fs::symlink_metadata(&real) {
        Ok(meta) if meta.is_file() => Some(meta),
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::recoverable(format!(
                "`{}` is a folder; give the path of a file inside it",
                args.path
            )));
        }
        Ok(_) => {
            return Err(ToolError::recoverable(format!(
                "`{}` is not a regular file (a FIFO, socket or device); refusing to replace it",
                args.path
            )));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(ToolError::recoverable(format!(
                "cannot write `{}`: {e}",
                args.path
            )));
        }
    };
    if old.is_none()
        && let Some(parent) = real.parent()
    {
        fs_err::create_dir_all(parent).map_err(|e| {
            ToolError::recoverable(format!(
                "cannot create the folders for `{}`: {e}",
                args.path
            ))
        })?;
    }
    let meta = write_atomic(&real, args.content.as_bytes(), old.as_ref(), hook).map_err(|e| {
        ToolError::recoverable(format!(
            "writing `{}` failed, and the file was left as it was: {e}",
            args.path
        ))
    })?;
    stamps.record(real.clone(), FileStamp::of(&meta));
    let display = roots.display(&real);
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
