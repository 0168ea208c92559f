//! `search_files`: find files by name, bounded. A plain query matches anywhere in the path
//! below the searched folder, case-insensitively; a query with glob characters is a glob.
//! Results come in path order; a cut result carries a cursor that continues after the last
//! path it returned.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use toolgate_core::{CallContext, Tool, ToolError, ToolMeta, ToolOutput, TruncationReason};

use crate::confine::Roots;
use crate::search::walk::walk;
use crate::search::{
    Call, Cursor, Found, NameFilter, Scope, SearchLimits, SearchOutput, cut_phrase, next_step,
    showing, skipped_hint,
};

/// Arguments of `search_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchFilesArgs {
    /// Words of a path (`user test`), or a glob (`*.rs`, `src/**/*.test.ts`).
    pub query: String,
    /// Folder (default: the project root).
    #[serde(default)]
    pub path: Option<String>,
    /// Most paths (default 100, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Also search skipped folders and .gitignored files.
    #[serde(default)]
    pub include_ignored: bool,
    /// `cursor` of a cut result.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Deadline (default 15000, at most 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `search_files`: file names and paths, bounded.
pub struct SearchFilesTool {
    pub(crate) roots: Arc<Roots>,
    pub(crate) limits: SearchLimits,
}

impl SearchFilesTool {
    /// `search_files` over `roots` with `limits`.
    pub fn new(roots: Arc<Roots>, limits: SearchLimits) -> Self {
        Self { roots, limits }
    }
}

impl Tool for SearchFilesTool {
    type Args = SearchFilesArgs;
    type Output = SearchOutput;

    fn name(&self) -> &str {
        "search_files"
    }

    fn description(&self) -> &str {
        "Find files by path words (`user test`, any case) or a glob (`*.rs`, `src/**/*.ts`). Skips .git, node_modules, target and .gitignored files unless include_ignored. A cut result gives a cursor."
    }

    fn meta(&self) -> ToolMeta {
        crate::search::meta(&self.limits, "Search files")
    }

    async fn call(&self, args: SearchFilesArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let call = Call::start(&self.limits, &ctx, args.limit, args.timeout_ms)?;
        let filter = NameFilter::query(&args.query)?;
        let scope = Scope::resolve(
            &self.roots,
            args.path.as_deref(),
            args.cursor.as_deref(),
            args.include_ignored,
            &call.limits,
            false,
        )?;
        let roots = Arc::clone(&self.roots);
        call.run(&ctx.cancel, move |call| {
            let page = find(&roots, &scope, &filter, call);
            ToolOutput::from_body(&page.into_output(&args, &scope, call))
        })
        .await
    }
}

/// One page of `search_files`.
#[derive(Debug, Default)]
struct FindPage {
    text: String,
    returned: u64,
    matched: u64,
    reason: Option<TruncationReason>,
    cursor: Option<String>,
    total_known: bool,
    scanned: u64,
}

fn find(roots: &Roots, scope: &Scope, filter: &NameFilter, call: &Call) -> FindPage {
    let (limit, limits) = (call.limit, &call.limits);
    let mut page = FindPage::default();
    let mut last_shown: Option<String> = None;
    let end = walk(&scope.walk, &call.stop, |v| {
        if !(v.is_file || v.is_symlink) || !filter.matches(v.rel) {
            return true;
        }
        // The cursor's own path was returned last time.
        if scope.walk.after.as_deref() == Some(v.rel) {
            return true;
        }
        page.matched += 1;
        if page.reason.is_some() {
            // Past the cut: keep walking only to count the total.
            return true;
        }
        let shown = roots.display(v.path);
        if page.returned as usize >= limit {
            page.reason = Some(TruncationReason::ResultLimit);
        } else if page.returned > 0 && page.text.len() + shown.len() + 1 > limits.max_payload_bytes
        {
            page.reason = Some(TruncationReason::PayloadLimit);
        } else {
            page.text.push_str(&shown);
            page.text.push('\n');
            page.returned += 1;
            last_shown = Some(shown);
        }
        true
    });
    page.scanned = end.scanned;
    page.total_known = end.cut.is_none();
    match (page.reason, end.cut) {
        (Some(_), _) => {
            page.cursor = last_shown.map(|p| Cursor::after_file(p).render());
        }
        (None, Some(cut)) => {
            page.reason = Some(cut);
            // Everything up to the last entry visited has been seen.
            page.cursor = end
                .resume_after(&scope.walk)
                .map(|rel| Cursor::after_file(roots.display(&scope.root.join(rel))).render());
        }
        (None, None) => {}
    }
    page
}

impl FindPage {
    fn into_output(self, args: &SearchFilesArgs, scope: &Scope, call: &Call) -> SearchOutput {
        let mut text = self.text;
        if self.returned == 0 && self.reason.is_none() {
            text = format!(
                "No files match `{}` under `{}` ({} entries scanned).{}\n",
                args.query,
                scope.display,
                self.scanned,
                skipped_hint(scope)
            );
        }
        if let Some(reason) = self.reason {
            let mut shown = showing(
                self.returned,
                self.matched,
                self.matched,
                !self.total_known,
                ("matching file", "matching files"),
            );
            // "in N files" says nothing more for a search by name.
            if let Some(at) = shown.rfind(" in ") {
                shown.truncate(at);
            }
            if scope.walk.after.is_some() {
                shown.push_str(" from the cursor on");
            }
            text.push_str(&format!(
                "[truncated: {}; {shown} — {}]\n",
                cut_phrase(reason, &call.limits, call.limit),
                next_step(self.cursor.as_deref(), "query or path"),
            ));
        }
        let found = Found {
            results: self.matched,
            files: self.matched,
            exact: self.total_known,
        };
        SearchOutput {
            cursor: self.cursor,
            returned: self.returned,
            scanned_count: self.scanned,
            ..call.output(text, scope, self.reason, found)
        }
    }
}
