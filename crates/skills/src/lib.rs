//! toolgate's skills (see docs/skills.md): discovery for tools that live in folders, and
//! the filtering and rendering that decide who sees them.
//!
//! - [`roots`]: where skills are looked for — project `.toolgate/skills` and
//!   `.claude/skills`, custom roots from config, user `~/.config/toolgate/skills` and
//!   `~/.claude/skills`, nearest first — resolved into a [`ScopeChain`].
//! - [`parse`]: a skill file's frontmatter (`name`, `description`, the two visibility
//!   flags), strictly checked; a malformed skill becomes a [`Problem`] naming its path and
//!   what to fix, and the others still load.
//! - [`scan`]: one folder entry → a skill, a problem, or nothing. Nested skills are not
//!   discovered.
//! - [`catalog`]: the merged view of a scope chain — the nearest root wins a name, the
//!   loser is listed as shadowed.
//! - `store`: [`Skills`], the live store: roots are watched (debounced), each change
//!   re-reads only the entries it touched, a periodic full rescan is compared with that
//!   incremental state (and logged when they differ), and merged views are cached by their
//!   resolved scope chain.
//! - [`render`]: the catalog as the model reads it, within a character budget; past the
//!   budget a count and a way to search.
//! - `tool`: the `skill` tool (`{"name": …}` → body + bundled files) and its registry
//!   provider, which invalidates the registry only when the tool's description changes.
//! - `prompts`: user-invocable skills as MCP prompts, with `prompts/list_changed`.
//!
//! # Example: a skill folder behind the `skill` tool
//!
//! ```
//! use std::sync::Arc;
//!
//! use toolgate_core::{CallContext, Registry, Scope};
//! use toolgate_skills::{
//!     RootKind, SKILL_TOOL, ScopeChain, SkillRoot, SkillToolProvider, Skills, SkillsConfig,
//! };
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let root = tempfile::tempdir()?;
//! std::fs::create_dir(root.path().join("release"))?;
//! std::fs::write(
//!     root.path().join("release/SKILL.md"),
//!     "---\nname: release\ndescription: Cut a release (changelog, tag, publish).\n---\nFirst run the tests.\n",
//! )?;
//!
//! let chain = ScopeChain::from_roots(vec![SkillRoot {
//!     path: root.path().canonicalize()?,
//!     kind: RootKind::Project,
//!     confine: None,
//! }]);
//! let config = SkillsConfig { watch: false, rescan_secs: 0, ..SkillsConfig::default() };
//! let skills = Arc::new(Skills::new(config, chain));
//! let registry = Arc::new(Registry::new());
//! SkillToolProvider::new(skills, None, 2_048).attach(&registry)?;
//!
//! // The catalog is in the tool's description; the body comes on demand.
//! let snapshot = registry.snapshot(&Scope::global());
//! let tool = snapshot.get(SKILL_TOOL).expect("one skill, so the tool is there");
//! assert!(tool.spec().description.contains("Cut a release"), "{}", tool.spec().description);
//! let out = tool.call(serde_json::json!({"name": "release"}), CallContext::unattended()).await?;
//! assert!(out.text.contains("First run the tests."), "{}", out.text);
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod body;
pub mod catalog;
mod config;
pub mod parse;
mod prompts;
pub mod render;
pub mod roots;
pub mod scan;
mod store;
mod tool;

pub use body::{BundledFiles, LoadError, LoadedSkill, load_skill};
pub use catalog::{Catalog, Shadowed};
pub use config::SkillsConfig;
pub use parse::{Frontmatter, FrontmatterError, NameError, parse_skill};
pub use prompts::SkillPrompts;
pub use render::{CatalogText, render_catalog};
pub use roots::{HomeDirs, RootKind, ScopeChain, SkillRoot};
pub use scan::{Problem, ReadError, Skill};
pub use store::{RescanReport, Skills};
pub use tool::{SKILL_TOOL, SkillArgs, SkillOutput, SkillToolProvider};
