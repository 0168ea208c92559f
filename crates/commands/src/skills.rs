//! `toolgate skills list` and `toolgate skills show NAME`: the skill catalog, for humans.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use toolgate_runtime::Runtime;
use toolgate_skills::{Catalog, Skill, load_skill};

/// `toolgate skills …`.
#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// List the skills found (name, source root, flags, file), the ones a nearer skill
    /// shadows, and the ones that could not be loaded with what to fix.
    List(ListArgs),
    /// Print one skill as the model or user gets it: its instructions and bundled files.
    Show(ShowArgs),
}

/// Arguments of `toolgate skills list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Arguments of `toolgate skills show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The skill's name, as `toolgate skills list` shows it.
    name: String,
}

pub fn run(runtime: &Runtime, command: SkillsCommand) -> ExitCode {
    match command {
        SkillsCommand::List(args) => list(runtime, &args),
        SkillsCommand::Show(args) => show(runtime, &args),
    }
}

fn list(runtime: &Runtime, args: &ListArgs) -> ExitCode {
    let catalog = runtime.skills.catalog();
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&list_json(runtime, &catalog)).unwrap_or_default()
        );
        return ExitCode::SUCCESS;
    }
    if !runtime.skills.config().enabled {
        eprintln!("skills are turned off (skills.enabled = false in your config)");
        return ExitCode::SUCCESS;
    }
    let shown = |path: &Path| runtime.roots.display(path);
    if catalog.skills.is_empty() && catalog.shadowed.is_empty() {
        let looked: Vec<String> = runtime
            .skills
            .chain()
            .roots()
            .iter()
            .map(|r| shown(&r.path))
            .collect();
        eprintln!(
            "no skills found; a skill is a folder with a SKILL.md (or a flat NAME.md) in one of: {}",
            looked.join(", ")
        );
    } else {
        out!("{}", table(&catalog, &shown));
        let text = runtime.skill_catalog();
        let model = catalog.model_visible().count();
        outln!(
            "\nskill tool catalog: {} of {model} model-invocable skills listed, {} characters (budget {})",
            text.listed,
            toolgate_skills::render::units(&text.description),
            runtime
                .config
                .skills
                .catalog_chars
                .min(runtime.config.render.description_budget),
        );
    }
    for problem in &catalog.problems {
        eprintln!("warning: {}: {}", shown(&problem.path), problem.reason);
    }
    ExitCode::SUCCESS
}

fn table(catalog: &Catalog, shown: &dyn Fn(&Path) -> String) -> String {
    let name_w = catalog
        .skills
        .keys()
        .map(String::len)
        .chain(catalog.shadowed.iter().map(|s| s.skill.name.len()))
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "{:<name_w$}  {:<7}  {:<10}  FILE\n",
        "NAME", "SOURCE", "FLAGS"
    );
    for skill in catalog.skills.values() {
        out.push_str(&format!(
            "{:<name_w$}  {:<7}  {:<10}  {}\n",
            skill.name,
            skill.root.kind.as_str(),
            skill.flags().join(","),
            shown(&skill.file)
        ));
    }
    for shadowed in &catalog.shadowed {
        let skill = &shadowed.skill;
        out.push_str(&format!(
            "{:<name_w$}  {:<7}  {:<10}  {} (shadowed by {})\n",
            skill.name,
            skill.root.kind.as_str(),
            "shadowed",
            shown(&skill.file),
            shown(&shadowed.by)
        ));
    }
    out
}

fn list_json(runtime: &Runtime, catalog: &Catalog) -> Value {
    let skill_json = |skill: &Skill| {
        json!({
            "name": skill.name,
            "description": skill.description,
            "source": skill.root.kind,
            "root": skill.root.path,
            "path": skill.file,
            "dir": skill.dir,
            "model_invocable": skill.model_invocable,
            "user_invocable": skill.user_invocable,
            "flags": skill.flags(),
            "argument_hint": skill.argument_hint,
        })
    };
    let skills: Vec<Value> = catalog.skills.values().map(|s| skill_json(s)).collect();
    let shadowed: Vec<Value> = catalog
        .shadowed
        .iter()
        .map(|s| {
            let mut value = skill_json(&s.skill);
            value["shadowed_by"] = json!(s.by);
            value
        })
        .collect();
    let problems: Vec<Value> = catalog
        .problems
        .iter()
        .map(|p| json!({ "path": p.path, "source": p.root.kind, "reason": p.reason }))
        .collect();
    let roots: Vec<Value> = runtime
        .skills
        .chain()
        .roots()
        .iter()
        .map(|r| json!({ "path": r.path, "source": r.kind, "exists": r.path.is_dir() }))
        .collect();
    let text = runtime.skill_catalog();
    json!({
        "enabled": runtime.skills.config().enabled,
        "skills": skills,
        "shadowed": shadowed,
        "problems": problems,
        "roots": roots,
        "catalog": {
            "listed": text.listed,
            "omitted": text.omitted,
            "chars": toolgate_skills::render::units(&text.description),
        },
    })
}

fn show(runtime: &Runtime, args: &ShowArgs) -> ExitCode {
    let catalog = runtime.skills.catalog();
    let shown = |path: &Path| runtime.roots.display(path);
    let Some(skill) = catalog.get(&args.name) else {
        // Near names: within two edits (`helo` → `hello`), or one name inside the other.
        let mut close: Vec<(usize, &str)> = catalog
            .skills
            .keys()
            .map(|n| (strsim::damerau_levenshtein(&args.name, n), n.as_str()))
            .filter(|(d, n)| *d <= 2 || n.contains(&args.name) || args.name.contains(*n))
            .collect();
        close.sort();
        let close: Vec<String> = close
            .into_iter()
            .take(3)
            .map(|(_, n)| format!("`{n}`"))
            .collect();
        let hint = if close.is_empty() {
            String::new()
        } else {
            format!(" (did you mean {}?)", close.join(", "))
        };
        let broken = catalog
            .problems
            .iter()
            .find(|p| p.path.to_string_lossy().contains(&args.name));
        eprintln!(
            "toolgate: no skill named `{}`{hint}; `toolgate skills list` shows the skills",
            args.name
        );
        if let Some(problem) = broken {
            eprintln!(
                "note: {} could not be loaded: {}",
                shown(&problem.path),
                problem.reason
            );
        }
        return ExitCode::FAILURE;
    };
    let loaded = match load_skill(skill) {
        Ok(loaded) => loaded,
        Err(reason) => {
            eprintln!("toolgate: {}: {reason}", shown(&skill.file));
            return ExitCode::FAILURE;
        }
    };
    outln!("name: {}", skill.name);
    outln!("description: {}", skill.description);
    outln!(
        "source: {} ({})",
        skill.root.kind.as_str(),
        shown(&skill.root.path)
    );
    let mut flags = Vec::new();
    flags.push(if skill.model_invocable {
        "the model may load it (listed in the skill tool)"
    } else {
        "hidden from the model (disable-model-invocation: true)"
    });
    flags.push(if skill.user_invocable {
        "the user may run it (an MCP prompt)"
    } else {
        "not offered to the user (user-invocable: false)"
    });
    outln!("flags: {}", flags.join("; "));
    for shadowed in catalog
        .shadowed
        .iter()
        .filter(|s| s.skill.name == skill.name)
    {
        outln!(
            "shadows: {} ({})",
            shown(&shadowed.skill.file),
            shadowed.skill.root.kind.as_str()
        );
    }
    outln!();
    out!("{}", loaded.text(None, &shown));
    ExitCode::SUCCESS
}
