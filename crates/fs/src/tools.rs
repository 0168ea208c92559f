//! The `read_file` and `list_dir` tools.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{
    CallContext, Concurrency, DisclosureHint, DynTool, Media, Tool, ToolError, ToolMeta,
    ToolOutput, TruncationReason, TypedTool, run_blocking,
};

use toolgate_budget::SpillStore;

use crate::confine::Roots;
use crate::edit::EditFileTool;
use crate::find::SearchFilesTool;
use crate::grep::GrepTool;
use crate::line_index::LineIndexCache;
use crate::list::{human_size, list_dir};
use crate::read::{FileStamp, FileStamps, LineIndexHandle, PageError, ReadLimits, read_page};
use crate::search::SearchLimits;
use crate::sniff::{Kind, sniff};
use crate::write::WriteFileTool;

/// The file tools over `roots` with default search limits, sharing one line-index cache.
///
/// With a spill store, `read_file` keeps recently read spill files from eviction, fetches
/// spill files another replica wrote from the shared store (when there is one), and answers
/// "evicted: …" for spill files the quota removed, instead of a bare "not found".
pub fn builtin_fs_tools(
    roots: Arc<Roots>,
    limits: ReadLimits,
    spill: Option<Arc<SpillStore>>,
) -> Vec<Arc<dyn DynTool>> {
    builtin_fs_tools_with(
        roots,
        FsLimits {
            read: limits,
            search: SearchLimits::default(),
        },
        spill,
    )
}

/// Every budget of the file tools: the `[read]` and `[search]` config sections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsLimits {
    /// `read_file` / `list_dir`.
    pub read: ReadLimits,
    /// `search_files` / `grep`.
    pub search: SearchLimits,
}

/// The file tools over `roots` with `limits`: `read_file`, `list_dir`, `search_files`,
/// `grep`, `write_file`, `edit_file`.
pub fn builtin_fs_tools_with(
    roots: Arc<Roots>,
    limits: FsLimits,
    spill: Option<Arc<SpillStore>>,
) -> Vec<Arc<dyn DynTool>> {
    let index = Arc::new(LineIndexCache::new());
    vec![
        TypedTool::erased(ReadFileTool {
            shared: Arc::new(ReadShared {
                roots: Arc::clone(&roots),
                limits: limits.read.clone(),
                index,
                spill,
            }),
        }),
        TypedTool::erased(ListDirTool {
            roots: Arc::clone(&roots),
            limits: limits.read,
        }),
        TypedTool::erased(SearchFilesTool::new(
            Arc::clone(&roots),
            limits.search.clone(),
        )),
        TypedTool::erased(GrepTool::new(Arc::clone(&roots), limits.search)),
        TypedTool::erased(WriteFileTool::new(Arc::clone(&roots))),
        TypedTool::erased(EditFileTool::new(roots)),
    ]
}

/// Deadline of the file tools (30 s at most).
const FS_TIMEOUT: Duration = Duration::from_secs(30);

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// File path, relative to the project root.
    pub path: String,
    /// 1-based line to start at; `next_offset` of a cut result.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most lines (default and maximum 2000).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Structured result of `read_file` and `list_dir`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PageOutput {
    /// The numbered lines (or entries) with a footer when cut.
    pub text: String,
    /// The path as resolved, relative to the project root when inside it.
    pub path: String,
    /// Whether more exists beyond this page.
    pub truncated: bool,
    /// Why it was cut: `result_limit`, `payload_limit`, `scan_limit`, `timeout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<TruncationReason>,
    /// Total lines (or entries) when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Offset of the next page; present only when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// Entries scanned (`list_dir` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scanned_count: Option<u64>,
    /// Time taken.
    pub elapsed_ms: u64,
}

/// `read_file`: numbered lines of a text file, paged.
pub struct ReadFileTool {
    shared: Arc<ReadShared>,
}

/// What every `read_file` call shares.
struct ReadShared {
    roots: Arc<Roots>,
    limits: ReadLimits,
    index: Arc<LineIndexCache>,
    spill: Option<Arc<SpillStore>>,
}

impl Tool for ReadFileTool {
    type Args = ReadFileArgs;
    type Output = PageOutput;

    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        "Read a text file as numbered lines (at most 2000 lines or 50 KiB); a cut result gives next_offset. Images and PDFs come back as attachments. Page saved outputs instead of rerunning commands."
    }

    fn meta(&self) -> ToolMeta {
        ToolMeta {
            timeout: Some(FS_TIMEOUT),
            concurrency: Concurrency::ReadOnly,
            action: "fs.read".to_owned(),
            spillable: false,
            idempotent: true,
            destructive: false,
            display: "Read file".to_owned(),
            // A core tool: in the array every turn, never deferred.
            disclosure: DisclosureHint::Direct,
            ..ToolMeta::default()
        }
    }

    async fn call(&self, args: ReadFileArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let shared = Arc::clone(&self.shared);
        let stamps = ctx.session.ext::<FileStamps>();
        let cancel = ctx.cancel.clone();
        // A page (plus its footer) the session's client hands the model whole: a shorter
        // page with a true next_offset, never a long one the client cuts.
        let page_bytes = ctx.session.limits().page_bytes(shared.limits.max_bytes);
        run_blocking(move || {
            read_file_blocking(&shared, &stamps, &args, page_bytes, &|| {
                cancel.is_cancelled()
            })
        })
        .await?
    }
}

fn read_file_blocking(
    shared: &ReadShared,
    stamps: &FileStamps,
    args: &ReadFileArgs,
    page_bytes: usize,
    cancelled: &dyn Fn() -> bool,
) -> Result<ToolOutput, ToolError> {
    let ReadShared {
        roots,
        limits,
        index,
        spill,
    } = shared;
    let limits = &ReadLimits {
        max_bytes: page_bytes,
        ..limits.clone()
    };
    if args.limit == Some(0) {
        return Err(ToolError::InvalidArguments(format!(
            "field `limit`: must be between 1 and {}; omit it to get a full page",
            limits.max_lines
        )));
    }
    let started = Instant::now();
    let mut opened = roots.open_read(&args.path);
    if let (Err(crate::PathError::NotFound { .. }), Some(store)) = (&opened, spill)
        && let Ok(real) = roots.resolve(&args.path, crate::Access::Read)
    {
        // A spill file another replica wrote: copied here from the shared store, then read
        // like any other (only spill names directly in the spill folder are ever fetched).
        match store.fetch_shared(&real) {
            Ok(true) => opened = roots.open_read(&args.path),
            Ok(false) => {}
            Err(e) => {
                return Err(ToolError::recoverable(
                    store
                        .evicted_message(&real)
                        .unwrap_or_else(|| e.to_string()),
                ));
            }
        }
        if let Some(message) = store.evicted_message(&real)
            && opened.is_err()
        {
            return Err(ToolError::recoverable(message));
        }
    }
    let (mut file, real, meta) = opened.map_err(|e| {
        let hint = match e {
            crate::PathError::NotRegular {
                kind: "directory", ..
            } => "; use list_dir for folders",
            _ => "",
        };
        ToolError::recoverable(format!("{e}{hint}"))
    })?;
    if let Some(store) = spill {
        store.note_read(&real);
    }
    let display = roots.display(&real);
    let size = meta.len();

    let mut first = vec![0u8; limits.first_chunk_bytes.min(size as usize).max(1)];
    let n = std::io::Read::read(&mut file, &mut first).map_err(|e| io_err(&args.path, &e))?;
    first.truncate(n);
    let kind = sniff(&first, n as u64 >= size);
    stamps.record(real.clone(), FileStamp::of(&meta));

    let offset = args.offset.unwrap_or(1);
    let limit = args
        .limit
        .map_or(limits.max_lines, |l| l.min(usize::MAX as u64) as usize);
    let page = match kind {
        Kind::Image(mime) => return media(&args.path, &mut file, &real, size, limits, mime),
        Kind::Pdf => {
            return media(
                &args.path,
                &mut file,
                &real,
                size,
                limits,
                "application/pdf",
            );
        }
        Kind::Binary => {
            return Err(ToolError::recoverable(format!(
                "`{}` is a binary file ({}); read_file only shows text. Inspect it with a shell tool (e.g. `file`, `xxd | head`) if you need to",
                args.path,
                human_size(size)
            )));
        }
        Kind::Utf16 { little_endian } => {
            if size > limits.max_media_bytes {
                return Err(ToolError::recoverable(format!(
                    "`{}` is UTF-16 text of {}, over the {} that can be converted; convert it to UTF-8 first (e.g. `iconv -f UTF-16 -t UTF-8`)",
                    args.path,
                    human_size(size),
                    human_size(limits.max_media_bytes)
                )));
            }
            let raw = read_whole(&mut file).map_err(|e| io_err(&args.path, &e))?;
            let text = decode_utf16(raw.get(2..).unwrap_or_default(), little_endian);
            let mut cursor = std::io::Cursor::new(text.into_bytes());
            let len = cursor.get_ref().len() as u64;
            let mut scratch = crate::line_index::LineIndex::default();
            read_page(
                &mut cursor,
                len,
                0,
                &mut LineIndexHandle(&mut scratch),
                offset,
                limit,
                limits,
                cancelled,
            )
        }
        Kind::Utf8 { bom } => page_from_file(
            &mut file, &real, &meta, index, bom as u64, offset, limit, limits, cancelled,
        ),
        Kind::Lossy => page_from_file(
            &mut file, &real, &meta, index, 0, offset, limit, limits, cancelled,
        ),
    };
    let page = match page {
        Ok(p) => p,
        Err(PageError::PastEnd { offset, total }) => {
            return Err(ToolError::recoverable(format!(
                "offset {offset} is past the end of `{}`, which has {total} lines; use an offset from 1 to {}",
                args.path,
                total.max(1)
            )));
        }
        Err(PageError::Cancelled) => return Err(ToolError::recoverable("read_file was cancelled")),
        Err(PageError::Io(e)) => return Err(io_err(&args.path, &e)),
    };

    let mut text = if page.lines == 0 {
        format!("(`{display}` is empty)\n")
    } else {
        page.text
    };
    if let Some(next) = page.next_offset {
        let last = next - 1;
        let of = page
            .total_lines
            .map_or(String::new(), |t| format!(" of {t}"));
        let why = match page.reason {
            Some(TruncationReason::PayloadLimit) => {
                format!("the {} page limit", page_size(limits.max_bytes))
            }
            _ => format!("the {}-line page limit", limit.min(limits.max_lines)),
        };
        text.push_str(&format!(
            "[truncated at {why}: showing lines {}-{last}{of}; continue with offset={next}]\n",
            page.start_line
        ));
    }
    if matches!(kind, Kind::Lossy) {
        text.push_str("[note: the file is not valid UTF-8; invalid bytes are shown as �]\n");
    }
    Ok(ToolOutput::from_body(&PageOutput {
        text,
        path: display,
        truncated: page.next_offset.is_some(),
        reason: page.reason,
        total: page.total_lines,
        next_offset: page.next_offset,
        scanned_count: None,
        elapsed_ms: started.elapsed().as_millis() as u64,
    }))
}

/// `50 KiB`, or `10,900 bytes` for a size that is not whole KiB.
fn page_size(bytes: usize) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes}-byte")
    }
}

#[allow(clippy::too_many_arguments)]
fn page_from_file(
    file: &mut fs_err::File,
    real: &std::path::Path,
    meta: &std::fs::Metadata,
    index: &LineIndexCache,
    skip: u64,
    offset: u64,
    limit: usize,
    limits: &ReadLimits,
    cancelled: &dyn Fn() -> bool,
) -> Result<crate::ReadPage, PageError> {
    let entry = index.get(real, meta);
    let mut guard = entry
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (scans, bytes) = (guard.scans, guard.bytes_read);
    let page = read_page(
        file,
        meta.len(),
        skip,
        &mut LineIndexHandle(&mut guard),
        offset,
        limit,
        limits,
        cancelled,
    );
    if guard.scans > scans {
        index.note_scan(guard.bytes_read - bytes);
    }
    page
}

fn media(
    input: &str,
    file: &mut fs_err::File,
    real: &std::path::Path,
    size: u64,
    limits: &ReadLimits,
    mime: &str,
) -> Result<ToolOutput, ToolError> {
    if size > limits.max_media_bytes {
        return Err(ToolError::recoverable(format!(
            "`{input}` is a {mime} file of {}, over the {} limit for attachments; it cannot be shown",
            human_size(size),
            human_size(limits.max_media_bytes)
        )));
    }
    let bytes = read_whole(file).map_err(|e| io_err(input, &e))?;
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let mut out = ToolOutput::text(format!(
        "`{input}`: {mime}, {} (attached)",
        human_size(size)
    ));
    out.media.push(if mime.starts_with("image/") {
        Media::Image {
            mime: mime.to_owned(),
            data,
        }
    } else {
        Media::Blob {
            uri: format!("file://{}", real.display()),
            mime: mime.to_owned(),
            data,
        }
    });
    Ok(out)
}

/// The whole of an already opened file, from its start (never opened again by path).
fn read_whole(file: &mut fs_err::File) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek};
    file.seek(std::io::SeekFrom::Start(0))?;
    let mut out = Vec::new();
    file.read_to_end(&mut out)?;
    Ok(out)
}

fn decode_utf16(bytes: &[u8], little_endian: bool) -> String {
    let units = bytes.chunks_exact(2).map(|c| {
        if little_endian {
            u16::from_le_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], c[1]])
        }
    });
    char::decode_utf16(units)
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

fn io_err(path: &str, e: &std::io::Error) -> ToolError {
    ToolError::recoverable(format!("cannot read `{path}`: {e}"))
}

/// Arguments of `list_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    /// Folder (default: the project root).
    #[serde(default)]
    pub path: Option<String>,
    /// 1-based entry to start at; `next_offset` of a cut result.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most entries (default and maximum 2000).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// `list_dir`: a folder's entries with type and size, paged.
pub struct ListDirTool {
    roots: Arc<Roots>,
    limits: ReadLimits,
}

impl Tool for ListDirTool {
    type Args = ListDirArgs;
    type Output = PageOutput;

    fn name(&self) -> &str {
        "list_dir"
    }

    fn description(&self) -> &str {
        "List a folder's entries: folders end in '/', files show their size. Pages like read_file."
    }

    fn meta(&self) -> ToolMeta {
        ToolMeta {
            timeout: Some(FS_TIMEOUT),
            concurrency: Concurrency::ReadOnly,
            action: "fs.read".to_owned(),
            spillable: true,
            idempotent: true,
            destructive: false,
            display: "List folder".to_owned(),
            // A core tool: in the array every turn, never deferred.
            disclosure: DisclosureHint::Direct,
            ..ToolMeta::default()
        }
    }

    async fn call(&self, args: ListDirArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let roots = Arc::clone(&self.roots);
        let limits = ReadLimits {
            max_bytes: ctx.session.limits().page_bytes(self.limits.max_bytes),
            ..self.limits.clone()
        };
        if args.limit == Some(0) {
            return Err(ToolError::InvalidArguments(format!(
                "field `limit`: must be between 1 and {}; omit it to get a full page",
                limits.max_lines
            )));
        }
        run_blocking(move || {
            let started = Instant::now();
            let input = args.path.as_deref().filter(|p| !p.is_empty()).unwrap_or(".");
            let (dir, located) = roots.open_dir(input).map_err(|e| {
                let hint = if matches!(e, crate::PathError::NotRegular { .. }) { "; use read_file for files" } else { "" };
                ToolError::recoverable(format!("{e}{hint}"))
            })?;
            let offset = args.offset.unwrap_or(1);
            let limit = args.limit.map_or(limits.max_lines, |l| l.min(usize::MAX as u64) as usize);
            let page = list_dir(&dir, located.shown, offset, limit, &limits)
                .map_err(|e| ToolError::recoverable(format!("cannot list `{input}`: {e}")))?;
            let display = roots.display(&located.real);
            let mut text = if page.shown == 0 { format!("(`{display}` is empty)\n") } else { page.text };
            if let Some(next) = page.next_offset {
                let of = page.total.map_or(String::new(), |t| format!(" of {t}"));
                text.push_str(&format!(
                    "[truncated: showing entries {offset}-{}{of}; continue with offset={next}]\n",
                    next - 1
                ));
            } else if page.reason == Some(TruncationReason::ScanLimit) {
                text.push_str(&format!(
                    "[truncated: the folder has more than {} entries; only that many were scanned — use search_files to narrow down]\n",
                    limits.max_scan_entries
                ));
            }
            Ok(ToolOutput::from_body(&PageOutput {
                text,
                path: display,
                truncated: page.reason.is_some(),
                reason: page.reason,
                total: page.total,
                next_offset: page.next_offset,
                scanned_count: Some(page.scanned),
                elapsed_ms: started.elapsed().as_millis() as u64,
            }))
        })
        .await?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: an offset past the end of a 10 GB sparse file rescanned the whole file
    /// on every call (2 s each). The second past-the-end read must be answered from the
    /// line count cached by the file's identity.
    #[test]
    fn past_the_end_reads_of_a_huge_sparse_file_scan_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse.log");
        // Text first (so the file is read as text), then a 2 GiB hole.
        let mut head = String::new();
        while head.len() < 300 * 1024 {
            head.push_str("a line of text\n");
        }
        fs_err::write(&path, &head).unwrap();
        fs_err::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(2 << 30)
            .unwrap();
        let roots = Arc::new(Roots::new([dir.path()]).unwrap());
        let shared = ReadShared {
            roots,
            limits: ReadLimits::default(),
            index: Arc::new(LineIndexCache::new()),
            spill: None,
        };
        let stamps = FileStamps::default();
        let args = ReadFileArgs {
            path: "sparse.log".to_owned(),
            offset: Some(1_000_000),
            limit: None,
        };
        let lines = head.lines().count() + 1;
        for call in 0..3 {
            let err =
                read_file_blocking(&shared, &stamps, &args, shared.limits.max_bytes, &|| false)
                    .expect_err("past the end");
            assert!(
                err.to_string().contains(&format!(
                    "past the end of `sparse.log`, which has {lines} lines"
                )),
                "{err}"
            );
            assert_eq!(
                shared.index.scans(),
                1,
                "call {call} scanned the file again"
            );
        }
        // Another offset past the end, too.
        let args = ReadFileArgs {
            offset: Some(50_000),
            ..args
        };
        assert!(
            read_file_blocking(&shared, &stamps, &args, shared.limits.max_bytes, &|| false)
                .is_err()
        );
        assert_eq!(shared.index.scans(), 1);
        // A changed file is a new identity: scanned again.
        fs_err::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        assert!(
            read_file_blocking(&shared, &stamps, &args, shared.limits.max_bytes, &|| false)
                .is_err()
        );
        assert_eq!(shared.index.scans(), 2);
        drop(dir);
    }

    /// Regression, the case the cache alone does not cover: a count through a long stretch
    /// without newlines (a sparse file's hole) that is cancelled (the call's deadline)
    /// started over from the last checkpoint on every call, so a file too big to count
    /// within one call's time was rescanned forever. A cancelled count now resumes.
    #[test]
    fn cancelled_counts_of_a_sparse_file_resume_instead_of_starting_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse.log");
        let mut head = String::new();
        while head.len() < 300 * 1024 {
            head.push_str("a line of text\n");
        }
        fs_err::write(&path, &head).unwrap();
        let size: u64 = 2 << 30;
        fs_err::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(size)
            .unwrap();
        let roots = Arc::new(Roots::new([dir.path()]).unwrap());
        let shared = ReadShared {
            roots,
            limits: ReadLimits::default(),
            index: Arc::new(LineIndexCache::new()),
            spill: None,
        };
        let stamps = FileStamps::default();
        let args = ReadFileArgs {
            path: "sparse.log".to_owned(),
            offset: Some(1_000_000),
            limit: None,
        };
        // Every call is cancelled at its 5th check (about 80 MiB in): the deadline of a
        // call too short for the whole file.
        let mut calls = 0;
        let err = loop {
            calls += 1;
            assert!(calls <= 40, "no progress: every call starts the count over");
            let checks = std::cell::Cell::new(0);
            let cancelled = || {
                checks.set(checks.get() + 1);
                checks.get() >= 5
            };
            let err =
                read_file_blocking(&shared, &stamps, &args, shared.limits.max_bytes, &cancelled)
                    .expect_err("cancelled, or past the end");
            if !err.to_string().contains("cancelled") {
                break err;
            }
        };
        let lines = head.lines().count() + 1;
        assert!(
            err.to_string()
                .contains(&format!("which has {lines} lines")),
            "{err}"
        );
        assert!(calls > 10, "the cancellation did fire ({calls} calls)");
        assert!(
            shared.index.bytes_read() <= size + (1 << 20),
            "each byte read about once: {} of {size}",
            shared.index.bytes_read()
        );
        // And a normal page of the same file is unaffected by the resume point.
        let first = ReadFileArgs {
            path: "sparse.log".to_owned(),
            offset: Some(2),
            limit: Some(3),
        };
        let out = read_file_blocking(&shared, &stamps, &first, shared.limits.max_bytes, &|| false)
            .unwrap();
        assert!(
            out.text.starts_with("     2\ta line of text\n"),
            "{}",
            out.text
        );
        drop(dir);
    }
}
