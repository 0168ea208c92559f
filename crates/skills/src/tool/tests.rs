//! The `skill` tool in a registry: invalidation only when the tool changes, and its calls.

use std::path::Path;

use serde_json::json;
use toolgate_core::{CallContext, Registry, Scope};

use super::*;
use crate::config::SkillsConfig;
use crate::roots::{RootKind, ScopeChain, SkillRoot};

fn write(root: &Path, folder: &str, front: &str, body: &str) {
    let dir = root.join(folder);
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(dir.join("SKILL.md"), format!("---\n{front}---\n{body}")).unwrap();
}

struct Fixture {
    dir: tempfile::TempDir,
    skills: Arc<Skills>,
    registry: Arc<Registry>,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        write(
            &root,
            "deploy",
            "name: deploy\ndescription: Deploys.\n",
            "Run it.\n",
        );
        fs_err::write(root.join("deploy/notes.md"), "notes").unwrap();
        let chain = ScopeChain::from_roots(vec![SkillRoot {
            path: root,
            kind: RootKind::User,
            confine: None,
        }]);
        let config = SkillsConfig {
            watch: false,
            rescan_secs: 0,
            ..SkillsConfig::default()
        };
        let skills = Arc::new(Skills::new(config, chain));
        let registry = Arc::new(Registry::new());
        SkillToolProvider::new(Arc::clone(&skills), None, 2_048)
            .attach(&registry)
            .unwrap();
        Self {
            dir,
            skills,
            registry,
        }
    }

    fn root(&self) -> std::path::PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// Tells the store about a change to `folder`, as the watcher would.
    fn changed(&self, folder: &str) {
        self.skills.notice_changes(&[self.root().join(folder)]);
    }

    fn description(&self) -> Option<String> {
        let snapshot = self.registry.snapshot(&Scope::global());
        snapshot
            .get(SKILL_TOOL)
            .map(|t| t.spec().description.clone())
    }

    async fn call(&self, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        let snapshot = self.registry.snapshot(&Scope::global());
        let tool = snapshot.get(SKILL_TOOL).unwrap();
        tool.call(args, CallContext::unattended()).await
    }
}

#[test]
fn the_registry_is_invalidated_only_when_the_tool_changes() {
    let f = Fixture::new();
    assert!(f.description().unwrap().contains("- deploy: Deploys."));
    let generation = f.registry.generation();
    // A body edit: the catalog is the same, so prompt caches stay warm.
    write(
        &f.root(),
        "deploy",
        "name: deploy\ndescription: Deploys.\n",
        "Run it twice.\n",
    );
    f.changed("deploy");
    assert_eq!(f.registry.generation(), generation);
    // A skill only the user may start changes no tool either.
    write(
        &f.root(),
        "release",
        "name: release\ndescription: Releases.\ndisable-model-invocation: true\n",
        "Tag.\n",
    );
    f.changed("release");
    assert_eq!(f.registry.generation(), generation);
    assert!(!f.description().unwrap().contains("release"));
    // A new model-invocable skill does, and the snapshot shows it at once.
    write(
        &f.root(),
        "lint",
        "name: lint\ndescription: Lints.\n",
        "Lint.\n",
    );
    f.changed("lint");
    assert!(f.registry.generation() > generation);
    assert!(f.description().unwrap().contains("- lint: Lints."));
    // With no model-invocable skill left, there is no tool.
    fs_err::remove_dir_all(f.root().join("lint")).unwrap();
    fs_err::remove_dir_all(f.root().join("deploy")).unwrap();
    f.changed("lint");
    f.changed("deploy");
    assert_eq!(f.description(), None);
}

#[tokio::test]
async fn loading_returns_the_body_and_files_and_refuses_what_the_model_may_not_load() {
    let f = Fixture::new();
    let out = f.call(json!({"name": "deploy"})).await.unwrap();
    assert!(out.text.contains("Run it."), "{}", out.text);
    let notes = f.root().join("deploy/notes.md").display().to_string();
    assert_eq!(out.field("files"), Some(json!([notes])));
    assert_eq!(out.field("name"), Some(json!("deploy")));
    // A skill whose file now hides it from the model is refused even before the
    // watcher catches up.
    write(
        &f.root(),
        "deploy",
        "name: deploy\ndescription: Deploys.\ndisable-model-invocation: true\n",
        "x\n",
    );
    let err = f.call(json!({"name": "deploy"})).await.unwrap_err();
    assert!(
        err.to_string().contains("may only be started by the user"),
        "{err}"
    );
    // A skill deleted since the catalog was read says what to do.
    fs_err::remove_dir_all(f.root().join("deploy")).unwrap();
    let err = f.call(json!({"name": "deploy"})).await.unwrap_err();
    assert!(err.to_string().contains("cannot be loaded now"), "{err}");
}

#[tokio::test]
async fn hostile_arguments_get_clear_errors() {
    let f = Fixture::new();
    let err = f.call(json!({})).await.unwrap_err();
    assert!(err.to_string().contains("give `name`"), "{err}");
    let err = f
        .call(json!({"name": "deploy", "query": "x"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not both"), "{err}");
    let err = f.call(json!({"arguments": "x"})).await.unwrap_err();
    assert!(err.to_string().contains("go with `name`"), "{err}");
    let err = f.call(json!({"name": 3})).await.unwrap_err();
    assert!(err.to_string().contains("field `name`"), "{err}");
    let long = "x".repeat(100_000);
    let err = f.call(json!({ "name": long })).await.unwrap_err();
    assert!(
        err.to_string().len() < 1_000,
        "the name is not echoed whole"
    );
    let err = f
        .call(json!({"name": "../../etc/passwd"}))
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("no skill is named"), "{err}");
    let out = f.call(json!({"query": "deploys"})).await.unwrap();
    assert_eq!(out.field("matches"), Some(json!(["deploy"])));
}
