//! A temporary project: `root/` (the only root), `outside/` and `root_evil/` beside it, each
//! holding a file with [`SECRET`] that no tool output may ever contain.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tempfile::TempDir;
use toolgate_core::{CallContext, DynTool, ToolError, ToolOutput};
use toolgate_fs::{ReadLimits, Roots, builtin_fs_tools};

/// Planted outside the root; must never show up in any result.
pub const SECRET: &str = "TOP-SECRET-7f3a9c-do-not-leak";

pub struct Project {
    /// Keeps the folders alive.
    pub _tmp: TempDir,
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
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
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
    tool.call(args, CallContext::default()).await
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
pub fn field<'a>(out: &'a ToolOutput, name: &str) -> Option<&'a Value> {
    out.structured.get(name)
}

pub fn truncated(out: &ToolOutput) -> bool {
    field(out, "truncated") == Some(&json!(true))
}

pub fn next_offset(out: &ToolOutput) -> Option<u64> {
    field(out, "next_offset").and_then(Value::as_u64)
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
