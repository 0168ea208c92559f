//! The merged view of one scope chain: which skill a name means, and who may see it.
//!
//! Roots are merged nearest first, so a project skill wins over a user skill of the same
//! name; the loser is kept as [`Shadowed`] so `toolgate skills list` can say why it is not
//! used. Two skills of one name in the same root are a problem (the first by entry name
//! is kept), never a silent overwrite.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::roots::ScopeChain;
use crate::scan::{Entry, Problem, RootScan, Skill};

/// A skill hidden by a nearer one of the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadowed {
    /// The skill that is not used.
    pub skill: Arc<Skill>,
    /// The file of the skill that wins.
    pub by: PathBuf,
}

/// The skills of one scope chain at one generation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Catalog {
    /// The store's generation this view was built at.
    pub generation: u64,
    /// The skills in effect, by name.
    pub skills: BTreeMap<String, Arc<Skill>>,
    /// Skills a nearer root's skill of the same name hides.
    pub shadowed: Vec<Shadowed>,
    /// Skills that could not be loaded, nearest root first.
    pub problems: Vec<Problem>,
}

impl Catalog {
    /// Merges the scans of `chain`'s roots (nearest first).
    pub(crate) fn merge<'a>(
        generation: u64,
        chain: &ScopeChain,
        scan_of: impl Fn(&crate::roots::SkillRoot) -> Option<&'a RootScan>,
    ) -> Self {
        let mut catalog = Self {
            generation,
            ..Self::default()
        };
        for root in chain.roots() {
            let Some(scan) = scan_of(root) else { continue };
            if let Some(problem) = &scan.problem {
                catalog.problems.push(problem.clone());
            }
            for entry in scan.entries.values() {
                match entry {
                    Entry::Problem(problem) => catalog.problems.push(problem.clone()),
                    Entry::Skill(skill) => match catalog.skills.get(&skill.name) {
                        None => {
                            catalog.skills.insert(skill.name.clone(), Arc::clone(skill));
                        }
                        Some(winner) if winner.root == skill.root => {
                            catalog.problems.push(Problem {
                                path: skill.file.clone(),
                                root: skill.root.clone(),
                                reason: format!(
                                    "another skill in the same folder is also named `{}` (`{}`), and that one is used; rename one of them",
                                    skill.name,
                                    winner.file.display()
                                ),
                            });
                        }
                        Some(winner) => catalog.shadowed.push(Shadowed {
                            skill: Arc::clone(skill),
                            by: winner.file.clone(),
                        }),
                    },
                }
            }
        }
        catalog
    }

    /// The skill named `name`, whatever its flags.
    pub fn get(&self, name: &str) -> Option<&Arc<Skill>> {
        self.skills.get(name)
    }

    /// Skills the model may load (not `disable-model-invocation`), by name.
    pub fn model_visible(&self) -> impl Iterator<Item = &Arc<Skill>> {
        self.skills.values().filter(|s| s.model_invocable)
    }

    /// Skills the user may invoke (not `user-invocable: false`), by name.
    pub fn user_visible(&self) -> impl Iterator<Item = &Arc<Skill>> {
        self.skills.values().filter(|s| s.user_invocable)
    }
}
