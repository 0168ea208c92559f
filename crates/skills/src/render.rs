//! Rendering for skills: the catalog the model reads in the `skill` tool's description,
//! within a length budget.
//!
//! The budget is counted in UTF-16 code units, as Claude Code counts when it cuts a tool
//! description at 2,048: never fewer than characters, so the text also fits toolgate's own
//! description budget. Whole entries only — a description cut in half loses the words the
//! model matches a task on — in name order; an entry that does not fit is skipped and
//! counted, and the closing line says how many are not listed and how to search them.
//! Byte-deterministic: only names and descriptions, nothing volatile.

use crate::catalog::Catalog;

/// What the model reads before the list.
pub const PREAMBLE: &str = "Load a skill: instructions the user or the project wrote for a kind of task. When a task matches a skill below, call skill with {\"name\": \"<skill name>\"} before starting it; the result is the skill's instructions and the paths of its bundled files (read those with read_file when the instructions call for them).\n\nSkills:\n";

/// The rendered catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogText {
    /// The `skill` tool's whole description.
    pub description: String,
    /// Skills listed in it.
    pub listed: usize,
    /// Model-invocable skills left out for the budget.
    pub omitted: usize,
}

/// The `skill` tool's description for `catalog`, at most `budget` UTF-16 code units (the
/// preamble and the closing line always fit when the budget holds them).
pub fn render_catalog(catalog: &Catalog, budget: usize) -> CatalogText {
    let entries: Vec<String> = catalog
        .model_visible()
        .map(|s| format!("- {}: {}\n", s.name, s.description))
        .collect();
    let total = entries.len();
    let mut description = PREAMBLE.to_owned();
    let whole: usize = units(PREAMBLE) + entries.iter().map(|e| units(e)).sum::<usize>();
    if whole <= budget {
        for entry in &entries {
            description.push_str(entry);
        }
        return CatalogText {
            description: description.trim_end().to_owned(),
            listed: total,
            omitted: 0,
        };
    }
    // Room for the closing line at its longest (every skill omitted).
    let reserve = units(&footer(total));
    let mut used = units(PREAMBLE);
    let mut listed = 0;
    for entry in &entries {
        let cost = units(entry);
        if used + cost + reserve <= budget {
            description.push_str(entry);
            used += cost;
            listed += 1;
        }
    }
    let omitted = total - listed;
    description.push_str(&footer(omitted));
    CatalogText {
        description,
        listed,
        omitted,
    }
}

/// The closing line when `omitted` skills are not listed.
fn footer(omitted: usize) -> String {
    format!(
        "({omitted} more skills are not listed here: call skill with {{\"query\": \"<words>\"}} to search all skills by name and description.)"
    )
}

/// Length as Claude Code measures it (JavaScript string length).
pub fn units(text: &str) -> usize {
    text.encode_utf16().count()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::roots::{RootKind, SkillRoot};
    use crate::scan::Skill;

    fn catalog(n: usize, description: &str) -> Catalog {
        let root = SkillRoot {
            path: "/skills".into(),
            kind: RootKind::User,
            confine: None,
        };
        let mut catalog = Catalog::default();
        for i in 0..n {
            let name = format!("skill-{i:03}");
            catalog.skills.insert(
                name.clone(),
                Arc::new(Skill {
                    name: name.clone(),
                    description: format!("{description} number {i}."),
                    file: format!("/skills/{name}/SKILL.md").into(),
                    real_file: format!("/skills/{name}/SKILL.md").into(),
                    dir: None,
                    root: root.clone(),
                    model_invocable: true,
                    user_invocable: true,
                    argument_hint: None,
                }),
            );
        }
        catalog
    }

    #[test]
    fn a_small_catalog_is_listed_whole_without_a_count() {
        let text = render_catalog(&catalog(3, "Does things"), 2_048);
        assert_eq!((text.listed, text.omitted), (3, 0));
        assert!(
            text.description
                .ends_with("- skill-002: Does things number 2.")
        );
        assert!(!text.description.contains("more skills"));
    }

    #[test]
    fn catalog_cut_past_its_budget_keeps_whole_entries_and_says_how_to_search() {
        // A known failure: a catalog over its budget was cut mid-description, so the words
        // a task matches on were lost and nobody was told.
        let catalog = catalog(500, "Handles a very particular kind of task well");
        let text = render_catalog(&catalog, 2_048);
        assert!(
            units(&text.description) <= 2_048,
            "{}",
            units(&text.description)
        );
        assert!(text.listed > 0 && text.omitted > 0);
        assert_eq!(text.listed + text.omitted, 500);
        for line in text.description.lines().filter(|l| l.starts_with("- ")) {
            assert!(line.ends_with('.'), "an entry was cut: {line}");
        }
        assert!(text.description.ends_with(&format!(
            "({} more skills are not listed here: call skill with {{\"query\": \"<words>\"}} to search all skills by name and description.)",
            text.omitted
        )));
    }

    #[test]
    fn the_budget_counts_utf16_units_as_claude_code_does() {
        // Each 😀 is two UTF-16 units: 600 of them are 1,200 units but 600 characters.
        let text = render_catalog(&catalog(3, &"😀".repeat(600)), 2_048);
        assert!(units(&text.description) <= 2_048);
        assert_eq!(text.listed, 1);
    }

    #[test]
    fn hidden_skills_are_not_in_the_model_catalog() {
        let mut catalog = catalog(2, "Does things");
        let mut hidden = (*catalog.skills["skill-001"]).clone();
        hidden.model_invocable = false;
        catalog.skills.insert("skill-001".into(), Arc::new(hidden));
        let text = render_catalog(&catalog, 2_048);
        assert_eq!(text.listed, 1);
        assert!(!text.description.contains("skill-001"));
    }

    #[test]
    fn rendering_is_byte_deterministic() {
        let a = render_catalog(&catalog(40, "Some words here"), 1_000);
        let b = render_catalog(&catalog(40, "Some words here"), 1_000);
        assert_eq!(a, b);
    }
}
