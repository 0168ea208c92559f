//! The ways skill discovery goes stale (a renamed skill under its old name, a deleted one
//! still listed, a missed deletion), reproduced against the store.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::roots::{HomeDirs, RootKind};

/// Bounds a hang only: every wait below ends on a catalog change, long before on a
/// working machine however loaded (`bench/skills_watch.sh` measures the latency).
const HANG: Duration = Duration::from_secs(300);

struct Fixture {
    project: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        Self {
            project: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn chain(&self) -> ScopeChain {
        self.chain_of(self.project.path())
    }

    fn chain_of(&self, project: &Path) -> ScopeChain {
        let homes = HomeDirs {
            home: Some(self.home.path().to_path_buf()),
            config: Some(self.home.path().join(".config")),
        };
        ScopeChain::resolve(project, &[], &homes)
    }

    fn project_skills(&self) -> PathBuf {
        self.project.path().join(".claude/skills")
    }

    fn user_skills(&self) -> PathBuf {
        self.home.path().join(".claude/skills")
    }

    fn skills(&self, watch: bool) -> Skills {
        let config = SkillsConfig {
            watch,
            rescan_secs: 0,
            debounce_ms: 50,
            ..SkillsConfig::default()
        };
        Skills::new(config, self.chain())
    }
}

fn write_skill(root: &Path, folder: &str, name: &str, description: &str) {
    let dir = root.join(folder);
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\nDo {name}.\n"),
    )
    .unwrap();
}

fn names(skills: &Skills) -> Vec<String> {
    skills.catalog().skills.keys().cloned().collect()
}

/// Waits until `check` holds, checking again on every catalog change (no polling, no
/// short deadline: a loaded machine only makes the wait longer); returns whether it held.
fn eventually(skills: &Skills, mut check: impl FnMut() -> bool) -> bool {
    let (tx, changes) = std::sync::mpsc::channel();
    skills.on_change(move |generation| {
        let _ = tx.send(generation);
    });
    // Subscribed before the first check: a change between the two is not lost.
    loop {
        if check() {
            return true;
        }
        if changes.recv_timeout(HANG).is_err() {
            return check();
        }
    }
}

#[test]
fn stale_cache_after_a_rename_the_new_name_appears_and_the_old_one_goes() {
    // A known failure: after a rename the catalog showed the old name, or both.
    let f = Fixture::new();
    write_skill(&f.project_skills(), "deploy", "deploy", "Deploys.");
    let skills = f.skills(true);
    assert_eq!(names(&skills), vec!["deploy"]);
    let before = skills.generation();
    fs_err::rename(
        f.project_skills().join("deploy"),
        f.project_skills().join("ship"),
    )
    .unwrap();
    // The folder moved; the file still says `deploy`.
    assert!(eventually(&skills, || skills
        .catalog()
        .get("deploy")
        .is_some_and(|s| s.file.starts_with(
            f.project_skills().canonicalize().unwrap().join("ship")
        ))));
    assert!(skills.generation() > before);
    // Renaming the skill itself (its `name:`) leaves no ghost of the old name.
    write_skill(&f.project_skills(), "ship", "ship", "Ships.");
    assert!(
        eventually(&skills, || names(&skills) == vec!["ship"]),
        "{:?}",
        names(&skills)
    );
}

#[test]
fn a_ghost_after_delete_never_stays_in_the_catalog() {
    // A known failure: a deleted skill still listed and still loadable.
    let f = Fixture::new();
    write_skill(&f.project_skills(), "a", "alpha", "A.");
    write_skill(&f.project_skills(), "b", "beta", "B.");
    fs_err::write(
        f.project_skills().join("flat.md"),
        "---\nname: flat\ndescription: F.\n---\nbody\n",
    )
    .unwrap();
    let skills = f.skills(true);
    assert_eq!(names(&skills), vec!["alpha", "beta", "flat"]);
    fs_err::remove_dir_all(f.project_skills().join("a")).unwrap();
    fs_err::remove_file(f.project_skills().join("flat.md")).unwrap();
    assert!(
        eventually(&skills, || names(&skills) == vec!["beta"]),
        "{:?}",
        names(&skills)
    );
    // And the whole root going away empties it.
    fs_err::remove_dir_all(f.project.path().join(".claude")).unwrap();
    assert!(
        eventually(&skills, || names(&skills).is_empty()),
        "{:?}",
        names(&skills)
    );
}

#[test]
fn a_delete_missed_by_the_incremental_update_is_caught_by_the_rescan() {
    // Increments handle additions and miss deletions; the cheap guard is a full rescan
    // compared with the incremental state. Without a watcher every change is "missed" by
    // the incremental state, which is exactly the case to catch.
    let f = Fixture::new();
    write_skill(&f.project_skills(), "a", "alpha", "A.");
    write_skill(&f.project_skills(), "b", "beta", "B.");
    let skills = f.skills(false);
    fs_err::remove_dir_all(f.project_skills().join("a")).unwrap();
    write_skill(&f.project_skills(), "c", "gamma", "C.");
    // The incremental state has not seen it: alpha is a ghost for now.
    assert_eq!(names(&skills), vec!["alpha", "beta"]);
    let report = skills.rescan();
    assert_eq!(report.differences.len(), 2, "{report:?}");
    assert!(report.differences[0].starts_with("ghost: "), "{report:?}");
    assert!(report.differences[0].ends_with("/a` was still listed after it was deleted"));
    assert!(report.differences[1].starts_with("missed: "), "{report:?}");
    assert_eq!(names(&skills), vec!["beta", "gamma"]);
    // A second rescan finds nothing more.
    assert!(skills.rescan().is_clean());
}

#[test]
fn the_periodic_rescan_runs_on_its_own() {
    let f = Fixture::new();
    write_skill(&f.project_skills(), "a", "alpha", "A.");
    let config = SkillsConfig {
        watch: false,
        rescan_secs: 1,
        ..SkillsConfig::default()
    };
    let skills = Skills::new(config, f.chain());
    fs_err::remove_dir_all(f.project_skills().join("a")).unwrap();
    assert!(eventually(&skills, || names(&skills).is_empty()));
}

#[test]
fn a_watcher_that_cannot_start_falls_back_to_the_periodic_rescan() {
    // Regression: with 25–39 toolgate processes at once the watcher hit "Too many open
    // files"; changes were then seen by nothing when rescans were off.
    let f = Fixture::new();
    write_skill(&f.project_skills(), "a", "alpha", "A.");
    let mut skills = f.skills(false);
    assert!(skills.worker.is_none(), "no watch, no rescan: no thread");
    let (tx, rx) = std::sync::mpsc::channel();
    let refused = notify::Error::io(std::io::Error::from_raw_os_error(24));
    skills.run(tx, rx, Some(Err(refused)));
    assert!(skills.shared.degraded.load(Ordering::Relaxed));
    write_skill(&f.project_skills(), "b", "beta", "B.");
    assert!(
        eventually(&skills, || names(&skills) == vec!["alpha", "beta"]),
        "{:?}",
        names(&skills)
    );
}

#[test]
fn incremental_updates_touch_only_the_named_entries() {
    let f = Fixture::new();
    write_skill(&f.project_skills(), "a", "alpha", "A.");
    let skills = f.skills(false);
    let root = f.project_skills().canonicalize().unwrap();
    // A rename: the old path and the new one, as inotify reports them.
    fs_err::rename(root.join("a"), root.join("z")).unwrap();
    fs_err::write(
        root.join("z/SKILL.md"),
        "---\nname: zeta\ndescription: Z.\n---\n",
    )
    .unwrap();
    assert!(skills.notice_changes(&[root.join("a"), root.join("z")]));
    assert_eq!(names(&skills), vec!["zeta"]);
    // A path outside every root changes nothing.
    assert!(!skills.notice_changes(&[f.project.path().join("README.md")]));
    assert!(skills.rescan().is_clean());
}

#[test]
fn a_project_skill_wins_over_a_user_skill_of_the_same_name() {
    let f = Fixture::new();
    write_skill(&f.user_skills(), "review", "review", "User review.");
    write_skill(&f.project_skills(), "review", "review", "Project review.");
    write_skill(&f.user_skills(), "lint", "lint", "User lint.");
    let skills = f.skills(false);
    let catalog = skills.catalog();
    assert_eq!(
        catalog.get("review").unwrap().description,
        "Project review."
    );
    assert_eq!(catalog.get("review").unwrap().root.kind, RootKind::Project);
    assert_eq!(catalog.get("lint").unwrap().root.kind, RootKind::User);
    assert_eq!(catalog.shadowed.len(), 1);
    assert_eq!(catalog.shadowed[0].skill.description, "User review.");
    assert!(
        catalog.shadowed[0]
            .by
            .ends_with(".claude/skills/review/SKILL.md")
    );
    // `.toolgate/skills` is nearer than `.claude/skills`.
    write_skill(
        &f.project.path().join(".toolgate/skills"),
        "review",
        "review",
        "Toolgate review.",
    );
    skills.rescan();
    assert_eq!(
        skills.catalog().get("review").unwrap().description,
        "Toolgate review."
    );
    assert_eq!(skills.catalog().shadowed.len(), 2);
}

#[test]
fn a_malformed_skill_is_reported_and_the_others_still_load() {
    let f = Fixture::new();
    write_skill(&f.project_skills(), "good", "good", "Works.");
    let bad = f.project_skills().join("bad");
    fs_err::create_dir_all(&bad).unwrap();
    fs_err::write(
        bad.join("SKILL.md"),
        "---\nname: Bad Name\ndescription: x\n---\n",
    )
    .unwrap();
    fs_err::write(f.project_skills().join("nofm.md"), "# no frontmatter\n").unwrap();
    write_skill(&f.user_skills(), "also-good", "also-good", "Works too.");
    let skills = f.skills(false);
    let catalog = skills.catalog();
    assert_eq!(names(&skills), vec!["also-good", "good"]);
    assert_eq!(catalog.problems.len(), 2, "{:?}", catalog.problems);
    assert!(catalog.problems[0].path.ends_with("bad/SKILL.md"));
    assert!(catalog.problems[0].reason.contains("lowercase letters"));
    assert!(catalog.problems[1].path.ends_with("nofm.md"));
    assert!(catalog.problems[1].reason.contains("no frontmatter"));
}

#[test]
fn two_skills_of_one_name_in_one_folder_are_a_problem_not_an_overwrite() {
    let f = Fixture::new();
    write_skill(&f.project_skills(), "a", "same", "First.");
    write_skill(&f.project_skills(), "b", "same", "Second.");
    let skills = f.skills(false);
    let catalog = skills.catalog();
    assert_eq!(catalog.get("same").unwrap().description, "First.");
    assert_eq!(catalog.problems.len(), 1);
    assert!(catalog.problems[0].reason.contains("also named `same`"));
}

#[test]
fn the_discovery_cache_is_keyed_by_the_resolved_scope_chain() {
    // A session that changes folders must not read the last folder's skills.
    let f = Fixture::new();
    let other = tempfile::tempdir().unwrap();
    write_skill(&f.project_skills(), "a", "alpha", "A.");
    write_skill(&other.path().join(".claude/skills"), "o", "omega", "O.");
    write_skill(&f.user_skills(), "u", "user-one", "U.");
    let skills = f.skills(true);
    let other_chain = f.chain_of(other.path());
    let mine: Vec<_> = skills.catalog().skills.keys().cloned().collect();
    let theirs: Vec<_> = skills
        .catalog_for(&other_chain)
        .skills
        .keys()
        .cloned()
        .collect();
    assert_eq!(mine, vec!["alpha", "user-one"]);
    assert_eq!(theirs, vec!["omega", "user-one"]);
    // The same chain spelled another way (a `..` in the path) is the same key.
    let spelled = f.chain_of(&other.path().join("x/.."));
    assert_eq!(spelled, other_chain);
    // The other chain's roots are watched too once asked for.
    write_skill(&other.path().join(".claude/skills"), "p", "pi", "P.");
    assert!(eventually(&skills, || skills
        .catalog_for(&other_chain)
        .get("pi")
        .is_some()));
    assert!(skills.catalog().get("pi").is_none());
}

#[test]
fn a_skills_folder_created_after_start_is_noticed() {
    let f = Fixture::new();
    let skills = f.skills(true);
    assert!(names(&skills).is_empty());
    write_skill(
        &f.project.path().join(".toolgate/skills"),
        "late",
        "late",
        "Late.",
    );
    assert!(
        eventually(&skills, || names(&skills) == vec!["late"]),
        "{:?}",
        names(&skills)
    );
    // A folder recreated after being removed is watched again.
    fs_err::remove_dir_all(f.project.path().join(".toolgate/skills/late")).unwrap();
    assert!(eventually(&skills, || names(&skills).is_empty()));
    write_skill(
        &f.project.path().join(".toolgate/skills"),
        "late",
        "late",
        "Again.",
    );
    assert!(eventually(&skills, || skills
        .catalog()
        .get("late")
        .is_some_and(|s| s.description == "Again.")));
    fs_err::write(
        f.project.path().join(".toolgate/skills/late/SKILL.md"),
        "---\nname: late\ndescription: Edited.\n---\n",
    )
    .unwrap();
    assert!(eventually(&skills, || skills
        .catalog()
        .get("late")
        .is_some_and(|s| s.description == "Edited.")));
}

#[test]
fn listeners_hear_every_change_and_a_disabled_store_is_empty() {
    let f = Fixture::new();
    write_skill(&f.project_skills(), "a", "alpha", "A.");
    let skills = f.skills(false);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    skills.on_change(move |g| sink.lock().unwrap().push(g));
    fs_err::remove_dir_all(f.project_skills().join("a")).unwrap();
    skills.rescan();
    assert_eq!(*heard.lock().unwrap(), vec![skills.generation()]);
    let off = Skills::new(
        SkillsConfig {
            enabled: false,
            ..SkillsConfig::default()
        },
        f.chain(),
    );
    write_skill(&f.project_skills(), "b", "beta", "B.");
    assert!(off.catalog().skills.is_empty());
    assert!(off.chain().is_empty());
}
