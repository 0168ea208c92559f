//! A temporary project: `root/` (the only root), `outside/` and `root_evil/` beside it, each
//! holding a file with [`SECRET`] that no tool output may ever contain.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_core::{CallContext, DynTool, ToolError, ToolOutput};
use toolgate_fs::{ReadLimits, Roots, builtin_fs_tools};
use toolgate_test_support::TempProject;

/// Planted outside the root; must never show up in any result.
pub const SECRET: &str = "TOP-SECRET-7f3a9c-do-not-leak";

pub struct Project {
    /// Keeps the folders alive.
    pub _tmp: TempProject,
    /// The canonical temp folder holding `root`, `outside` and `root_evil`.
    pub base: PathBuf,
    /// The only root the tools are given.
    pub root: PathBuf,
    /// A folder beside the root, holding `secret.txt`.
    pub outside: PathBuf,
    pub roots: Arc<Roots>,
    read: Arc<dyn DynTool>,
    list: Arc<dyn DynTool>,
}

impl Project {
    pub fn new() -> Self {
        let tmp = TempProject::new();
        let base = tmp.root().to_path_buf();
        let root = base.join("root");
        let outside = base.join("outside");
        let evil = base.join("root_evil");
        for dir in [&root, &outside, &evil] {
            fs_err::create_dir(dir).unwrap();
        }
        fs_err::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
        fs_err::create_dir(outside.join("sub")).unwrap();
        fs_err::write(outside.join("sub/secret.txt"), format!("{SECRET}\n")).unwrap();
        fs_err::write(evil.join("secret.txt"), format!("{SECRET}\n")).unwrap();
        let roots = Arc::new(Roots::new([&root]).unwrap());
        let (read, list) = tools(Arc::clone(&roots));
        Self {
            _tmp: tmp,
            base,
            root,
            outside,
            roots,
            read,
            list,
        }
    }

    /// Writes `content` to `rel` under the root, creating folders.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).unwrap();
        }
        fs_err::write(&path, content).unwrap();
        path
    }

    /// Creates a symlink `rel` (under the root) pointing at `target`.
    pub fn symlink(&self, target: impl AsRef<Path>, rel: &str) {
        std::os::unix::fs::symlink(target, self.root.join(rel)).unwrap();
    }

    pub async fn read(&self, args: Value) -> Result<ToolOutput, ToolError> {
        call(&self.read, args).await
    }

    pub async fn list(&self, args: Value) -> Result<ToolOutput, ToolError> {
        call(&self.list, args).await
    }

    /// `read_file` that must succeed; returns the output.
    pub async fn read_ok(&self, args: Value) -> ToolOutput {
        match self.read(args.clone()).await {
            Ok(out) => {
                assert!(
                    !out.is_error,
                    "read_file {args} flagged an error: {}",
                    out.text
                );
                out
            }
            Err(e) => panic!("read_file {args} failed: {e}"),
        }
    }

    /// `read_file` that must fail; returns the message.
    pub async fn read_err(&self, args: Value) -> String {
        match self.read(args.clone()).await {
            Ok(out) => panic!("read_file {args} succeeded: {}", out.text),
            Err(e) => e.to_string(),
        }
    }

    pub async fn list_ok(&self, args: Value) -> ToolOutput {
        match self.list(args.clone()).await {
            Ok(out) => {
                assert!(
                    !out.is_error,
                    "list_dir {args} flagged an error: {}",
                    out.text
                );
                out
            }
            Err(e) => panic!("list_dir {args} failed: {e}"),
        }
    }

    pub async fn list_err(&self, args: Value) -> String {
        match self.list(args.clone()).await {
            Ok(out) => panic!("list_dir {args} succeeded: {}", out.text),
            Err(e) => e.to_string(),
        }
    }
}

/// `read_file` and `list_dir` over `roots` with default limits.
pub fn tools(roots: Arc<Roots>) -> (Arc<dyn DynTool>, Arc<dyn DynTool>) {
    tools_with(roots, ReadLimits::default())
}

/// `read_file` and `list_dir` over `roots` with `limits`.
pub fn tools_with(roots: Arc<Roots>, limits: ReadLimits) -> (Arc<dyn DynTool>, Arc<dyn DynTool>) {
    let all = builtin_fs_tools(roots, limits, None);
    let find = |name: &str| {
        all.iter()
            .find(|t| t.spec().name == name)
            .cloned()
            .unwrap_or_else(|| panic!("no tool {name}"))
    };
    (find("read_file"), find("list_dir"))
}

pub async fn call(tool: &Arc<dyn DynTool>, args: Value) -> Result<ToolOutput, ToolError> {
    tool.call(args, CallContext::unattended()).await
}

/// Everything a result carries, as one string (text, structured fields, media, error).
pub fn everything(result: &Result<ToolOutput, ToolError>) -> String {
    match result {
        Ok(out) => format!(
            "{}\n{}\n{:?}",
            out.text,
            Value::Object(out.structured.clone()),
            out.media
        ),
        Err(e) => format!("{e} {e:?}"),
    }
}

/// Structured field `name` of `out`.
pub fn field(out: &ToolOutput, name: &str) -> Option<Value> {
    out.field(name)
}

pub fn truncated(out: &ToolOutput) -> bool {
    field(out, "truncated") == Some(json!(true))
}

pub fn next_offset(out: &ToolOutput) -> Option<u64> {
    field(out, "next_offset").and_then(|v| v.as_u64())
}

/// The numbered lines of a `read_file` text as (number, content), footers dropped.
pub fn numbered(text: &str) -> Vec<(u64, String)> {
    text.lines()
        .filter(|l| !l.starts_with('['))
        .map(|l| {
            let (num, body) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("not a numbered line: {l:?}"));
            assert!(num.len() >= 6, "number column is 6 wide: {l:?}");
            (num.trim_start().parse().unwrap(), body.to_owned())
        })
        .collect()
}

/// Every built-in file tool over one set of roots, called within one session (as one MCP
/// connection would): what `read_file` records, `edit_file` sees.
pub struct Session {
    tools: Vec<Arc<dyn DynTool>>,
    pub ctx: CallContext,
}

impl Session {
    /// The built-in tools over `roots` with `search` limits.
    pub fn new(roots: &Arc<Roots>, search: toolgate_fs::SearchLimits) -> Self {
        let limits = toolgate_fs::FsLimits {
            read: ReadLimits::default(),
            search,
        };
        Self {
            tools: toolgate_fs::builtin_fs_tools_with(Arc::clone(roots), limits, None),
            ctx: CallContext::unattended(),
        }
    }

    /// Replaces the tool of the same name (e.g. one built with a test seam).
    pub fn with_tool(mut self, tool: Arc<dyn DynTool>) -> Self {
        self.tools.retain(|t| t.spec().name != tool.spec().name);
        self.tools.push(tool);
        self
    }

    fn tool(&self, name: &str) -> &Arc<dyn DynTool> {
        self.tools
            .iter()
            .find(|t| t.spec().name == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
    }

    pub async fn call(&self, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        self.tool(name).call(args, self.ctx.clone()).await
    }

    /// Calls `name` with a context of the caller's (e.g. a cancellation token).
    pub async fn call_with(
        &self,
        name: &str,
        args: Value,
        ctx: CallContext,
    ) -> Result<ToolOutput, ToolError> {
        self.tool(name).call(args, ctx).await
    }

    /// A call that must succeed.
    pub async fn ok(&self, name: &str, args: Value) -> ToolOutput {
        match self.call(name, args.clone()).await {
            Ok(out) => {
                assert!(
                    !out.is_error,
                    "{name} {args} flagged an error: {}",
                    out.text
                );
                out
            }
            Err(e) => panic!("{name} {args} failed: {e}"),
        }
    }

    /// A call that must fail; returns the message.
    pub async fn err(&self, name: &str, args: Value) -> String {
        match self.call(name, args.clone()).await {
            Ok(out) => panic!("{name} {args} succeeded: {}", out.text),
            Err(e) => e.to_string(),
        }
    }
}

impl Project {
    /// A session over this project's roots with default limits.
    pub fn session(&self) -> Session {
        Session::new(&self.roots, toolgate_fs::SearchLimits::default())
    }

    /// A session with `search` limits.
    pub fn session_with(&self, search: toolgate_fs::SearchLimits) -> Session {
        Session::new(&self.roots, search)
    }
}

/// Structured string field `name`.
pub fn str_field(out: &ToolOutput, name: &str) -> Option<String> {
    field(out, name).and_then(|v| v.as_str().map(str::to_owned))
}

/// Structured integer field `name`.
pub fn u64_field(out: &ToolOutput, name: &str) -> Option<u64> {
    field(out, name).and_then(|v| v.as_u64())
}

/// Asserts the truncation fields of a result: cut for `reason` (with a cursor), or not cut
/// (no reason, no cursor).
pub fn assert_cut(out: &ToolOutput, reason: Option<&str>) {
    match reason {
        Some(reason) => {
            assert!(truncated(out), "expected a cut result: {}", out.text);
            assert_eq!(
                str_field(out, "reason").as_deref(),
                Some(reason),
                "{}",
                out.text
            );
            assert!(
                out.text.contains("[truncated: "),
                "footer missing: {}",
                out.text
            );
        }
        None => {
            assert!(!truncated(out), "unexpected cut: {}", out.text);
            for key in ["reason", "cursor", "next_offset"] {
                assert_eq!(field(out, key), None, "uncut result carries `{key}`");
            }
        }
    }
    if field(out, "returned").is_some() {
        assert!(u64_field(out, "scanned_count").is_some(), "scanned_count");
    }
    assert!(u64_field(out, "elapsed_ms").is_some(), "elapsed_ms");
}
