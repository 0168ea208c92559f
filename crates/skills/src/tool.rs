//! The `skill` tool and its registry provider.
//!
//! One tool reaches every model-invocable skill: its description carries the catalog
//! ([`crate::render`]), `{"name": …}` returns the skill's instructions and the paths of its
//! bundled files, `{"query": …}` searches the skills the budget left out. The tool exists
//! only while some skill is model-invocable.
//!
//! The description changes with the catalog, so the provider follows the registry's
//! invalidation rule: when a catalog change changes the tool (its description, or whether
//! it exists), the registry is invalidated and every consumer refetches — MCP sessions get
//! `notifications/tools/list_changed`. A change that leaves the tool as it was (a body
//! edit, a user-only skill) invalidates nothing, so prompt caches stay warm.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::disclosure::{IndexEntry, ToolIndex};
use toolgate_core::{
    CallContext, Concurrency, DisclosureHint, DynTool, ProviderError, Registry, RegistryError,
    Tool, ToolError, ToolMeta, ToolOutput, ToolProvider, TypedTool, run_blocking,
};
use toolgate_fs::{Access, Roots};

use crate::body::load_skill;
use crate::catalog::Catalog;
use crate::render::{CatalogText, render_catalog};
use crate::store::Skills;

/// The tool's name.
pub const SKILL_TOOL: &str = "skill";
/// Most skills a search returns.
const SEARCH_HITS: usize = 10;

/// Arguments of `skill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillArgs {
    /// The skill to load, exactly as listed in this tool's description.
    #[serde(default)]
    pub name: Option<String>,
    /// Words to search all skills by name and description, for skills the list leaves out. Give either name or query.
    #[serde(default)]
    pub query: Option<String>,
    /// Text for the skill (with name): fills its $ARGUMENTS, as a user's /skill-name text would.
    #[serde(default)]
    pub arguments: Option<String>,
}

/// Structured result of `skill`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillOutput {
    /// The skill's instructions and bundled files, or the search results.
    pub text: String,
    /// The skill loaded (absent for a search).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its file (absent for a search).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Its bundled files, readable with read_file (absent when it has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// Names of the skills a search found, best first (absent for a load).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<String>>,
}

/// `skill` with the catalog of one moment in its description.
struct SkillTool {
    description: String,
    skills: Arc<Skills>,
    roots: Option<Arc<Roots>>,
}

impl Tool for SkillTool {
    type Args = SkillArgs;
    type Output = SkillOutput;

    fn name(&self) -> &str {
        SKILL_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn meta(&self) -> ToolMeta {
        ToolMeta {
            timeout: Some(Duration::from_secs(10)),
            concurrency: Concurrency::ReadOnly,
            action: "fs.read".to_owned(),
            spillable: true,
            idempotent: true,
            destructive: false,
            display: "Load skill".to_owned(),
            // The catalog is in the description: a deferred `skill` would hide it.
            disclosure: DisclosureHint::Direct,
            ..ToolMeta::default()
        }
    }

    async fn call(&self, args: SkillArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let skills = Arc::clone(&self.skills);
        let roots = self.roots.clone();
        run_blocking(move || call_blocking(&skills, roots.as_deref(), args)).await?
    }
}

fn call_blocking(
    skills: &Skills,
    roots: Option<&Roots>,
    args: SkillArgs,
) -> Result<ToolOutput, ToolError> {
    let name = args
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    let query = args
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty());
    let catalog = skills.catalog();
    if args.arguments.is_some() && name.is_none() {
        return Err(ToolError::InvalidArguments(
            "`arguments` go with `name`: give the skill to load too".to_owned(),
        ));
    }
    match (name, query) {
        (Some(name), None) => load(&catalog, roots, name, args.arguments.as_deref()),
        (None, Some(query)) => Ok(search(&catalog, query)),
        (Some(_), Some(_)) => Err(ToolError::InvalidArguments(
            "give either `name` (to load a skill) or `query` (to search), not both".to_owned(),
        )),
        (None, None) => Err(ToolError::InvalidArguments(
            "give `name`, a skill listed in this tool's description, e.g. {\"name\": \"deploy-app\"}, or `query` to search the skills".to_owned(),
        )),
    }
}

fn load(
    catalog: &Catalog,
    roots: Option<&Roots>,
    name: &str,
    arguments: Option<&str>,
) -> Result<ToolOutput, ToolError> {
    let Some(skill) = catalog.get(name) else {
        let hits = suggestions(catalog, name);
        let name = clip(name);
        let hint = if hits.is_empty() {
            String::new()
        } else {
            format!(" Did you mean {}?", quoted(&hits))
        };
        return Err(ToolError::recoverable(format!(
            "no skill is named `{name}`.{hint} Use a name exactly as listed in this tool's description, or call skill with {{\"query\": \"<words>\"}} to search."
        )));
    };
    let user_only = |name: &str| {
        ToolError::recoverable(format!(
            "skill `{name}` may only be started by the user (it sets disable-model-invocation: true); do not load it yourself — ask the user to run it if it is needed"
        ))
    };
    if !skill.model_invocable {
        return Err(user_only(name));
    }
    let loaded = load_skill(skill).map_err(|reason| {
        ToolError::recoverable(format!(
            "skill `{name}` cannot be loaded now: {}: {reason}. Tell the user; the file must be fixed",
            skill.file.display()
        ))
    })?;
    if !loaded.frontmatter.model_invocable {
        return Err(user_only(name));
    }
    let show = |path: &Path| show_path(roots, path);
    let mut text = loaded.text(arguments, &show);
    if let (Some(roots), Some(dir)) = (roots, &skill.dir)
        && !loaded.files.paths.is_empty()
        && roots.resolve(&dir.to_string_lossy(), Access::Read).is_err()
    {
        text.push_str("(These files are outside the folders read_file may read: a skill added through a symlink after toolgate started. Ask the user to restart toolgate to read them.)\n");
    }
    let output = SkillOutput {
        text,
        name: Some(loaded.frontmatter.name.clone()),
        path: Some(show(&skill.file)),
        files: (!loaded.files.paths.is_empty())
            .then(|| loaded.files.paths.iter().map(|p| show(p)).collect()),
        matches: None,
    };
    Ok(ToolOutput::from_body(&output))
}

fn search(catalog: &Catalog, query: &str) -> ToolOutput {
    let hits = ranked(catalog, query, SEARCH_HITS);
    let query = clip(query);
    let total = catalog.model_visible().count();
    let text = if hits.is_empty() {
        format!(
            "No skill matches `{query}` ({total} skills can be loaded). Try other words, or go on without a skill."
        )
    } else {
        let mut text = format!("Skills matching `{query}`, best first:\n");
        for name in &hits {
            if let Some(skill) = catalog.get(name) {
                text.push_str(&format!("- {}: {}\n", skill.name, skill.description));
            }
        }
        text.push_str("Load one with {\"name\": \"<skill name>\"}.");
        text
    };
    ToolOutput::from_body(&SkillOutput {
        text,
        name: None,
        path: None,
        files: None,
        matches: Some(hits),
    })
}

/// Model-invocable skills ranked for `query` (the search_tool index: names split on `-`,
/// descriptions, near-exact names first).
fn ranked(catalog: &Catalog, query: &str, limit: usize) -> Vec<String> {
    let skills: Vec<_> = catalog.model_visible().collect();
    let entries: Vec<IndexEntry> = skills
        .iter()
        .map(|s| IndexEntry {
            name: s.name.clone(),
            description: s.description.clone(),
            input_schema: serde_json::Map::new(),
        })
        .collect();
    ToolIndex::new(&entries)
        .search(query, limit)
        .into_iter()
        .filter_map(|hit| skills.get(hit.doc).map(|s| s.name.clone()))
        .collect()
}

/// Model-invocable skills a mistyped `name` may have meant: within two edits (a swap counts
/// as one), else the best lexical matches.
fn suggestions(catalog: &Catalog, name: &str) -> Vec<String> {
    let name: String = name.chars().take(crate::parse::MAX_NAME * 2).collect();
    let mut near: Vec<(usize, &str)> = catalog
        .model_visible()
        .map(|s| (strsim::damerau_levenshtein(&name, &s.name), s.name.as_str()))
        .filter(|(d, _)| *d <= 2)
        .collect();
    near.sort();
    if near.is_empty() {
        return ranked(catalog, &name, 3);
    }
    near.into_iter()
        .take(3)
        .map(|(_, n)| n.to_owned())
        .collect()
}

/// A model-supplied string cut to a length worth echoing in a message.
fn clip(text: &str) -> String {
    const ECHO: usize = 100;
    if text.chars().count() <= ECHO {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(ECHO).collect();
    cut.push('…');
    cut
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A path as read_file takes it: relative to the project root when inside it.
fn show_path(roots: Option<&Roots>, path: &Path) -> String {
    match roots {
        Some(roots) => roots.display(path),
        None => path.display().to_string(),
    }
}

/// The `skill` tool built for one catalog generation (`None`: no skill to offer).
type Built = (u64, Option<Arc<dyn DynTool>>);

/// Provides the `skill` tool to a registry and keeps it in step with the catalog.
pub struct SkillToolProvider {
    skills: Arc<Skills>,
    roots: Option<Arc<Roots>>,
    budget: usize,
    /// The tool for the catalog generation it was built at.
    current: Mutex<Option<Built>>,
    /// The description the registry was last invalidated for (`None`: no tool).
    announced: Mutex<Option<String>>,
}

impl std::fmt::Debug for SkillToolProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillToolProvider")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl SkillToolProvider {
    /// A provider over `skills`, with a catalog of at most `budget` UTF-16 code units;
    /// `roots` turns paths into the form read_file takes.
    pub fn new(skills: Arc<Skills>, roots: Option<Arc<Roots>>, budget: usize) -> Arc<Self> {
        let provider = Arc::new(Self {
            skills,
            roots,
            budget,
            current: Mutex::new(None),
            announced: Mutex::new(None),
        });
        *lock(&provider.announced) = provider.wanted_description();
        provider
    }

    /// Registers the provider in `registry`'s global layer and invalidates the registry
    /// whenever a catalog change changes the tool.
    pub fn attach(self: &Arc<Self>, registry: &Arc<Registry>) -> Result<(), RegistryError> {
        registry.register(None, Arc::clone(self) as Arc<dyn ToolProvider>, 0)?;
        let provider: Weak<Self> = Arc::downgrade(self);
        let registry: Weak<Registry> = Arc::downgrade(registry);
        self.skills.on_change(move |_| {
            let (Some(provider), Some(registry)) = (provider.upgrade(), registry.upgrade()) else {
                return;
            };
            if provider.changed() {
                registry.invalidate();
            }
        });
        Ok(())
    }

    /// The catalog as the model reads it now.
    pub fn catalog_text(&self) -> CatalogText {
        render_catalog(&self.skills.catalog(), self.budget)
    }

    /// The description the tool should have now; `None` when no skill is model-invocable.
    fn wanted_description(&self) -> Option<String> {
        let catalog = self.skills.catalog();
        catalog.model_visible().next()?;
        Some(render_catalog(&catalog, self.budget).description)
    }

    /// Whether the tool differs from the one last announced (and records the new one).
    fn changed(&self) -> bool {
        let wanted = self.wanted_description();
        let mut announced = lock(&self.announced);
        if *announced == wanted {
            return false;
        }
        *announced = wanted;
        true
    }
}

impl ToolProvider for SkillToolProvider {
    fn name(&self) -> &str {
        "skills"
    }

    fn tools(&self) -> Result<Vec<Arc<dyn DynTool>>, ProviderError> {
        let catalog = self.skills.catalog();
        let mut current = lock(&self.current);
        if let Some((generation, tool)) = &*current
            && *generation == catalog.generation
        {
            return Ok(tool.iter().cloned().collect());
        }
        let tool = (catalog.model_visible().next().is_some()).then(|| {
            TypedTool::erased(SkillTool {
                description: render_catalog(&catalog, self.budget).description,
                skills: Arc::clone(&self.skills),
                roots: self.roots.clone(),
            })
        });
        *current = Some((catalog.generation, tool.clone()));
        Ok(tool.into_iter().collect())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
