//! Skill prompts: the list follows the flags, and `list_changed` only for list changes.

use std::path::Path;

use super::*;
use crate::config::SkillsConfig;
use crate::roots::{RootKind, ScopeChain, SkillRoot};

fn write(root: &Path, folder: &str, front: &str, body: &str) {
    let dir = root.join(folder);
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(dir.join("SKILL.md"), format!("---\n{front}---\n{body}")).unwrap();
}

#[tokio::test]
async fn prompts_follow_the_user_flag_and_announce_only_list_changes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(
        &root,
        "a",
        "name: alpha\ndescription: A.\n",
        "Do $ARGUMENTS now.\n",
    );
    write(
        &root,
        "b",
        "name: beta\ndescription: B.\nuser-invocable: false\n",
        "B.\n",
    );
    let chain = ScopeChain::from_roots(vec![SkillRoot {
        path: root.clone(),
        kind: RootKind::Custom,
        confine: None,
    }]);
    let config = SkillsConfig {
        watch: false,
        rescan_secs: 0,
        ..SkillsConfig::default()
    };
    let skills = Arc::new(Skills::new(config, chain));
    let prompts = SkillPrompts::new(Arc::clone(&skills), None);
    let names: Vec<String> = prompts.prompts().into_iter().map(|p| p.name).collect();
    assert_eq!(names, vec!["alpha"]);
    let mut changes = prompts.changes().unwrap();
    changes.mark_unchanged();

    let mut args = PromptArguments::new();
    args.insert(ARGUMENTS.to_owned(), "the thing".to_owned());
    let got = prompts
        .get("alpha", &args, &CallContext::unattended())
        .await
        .unwrap();
    let text = serde_json::to_value(&got.messages[0]).unwrap()["content"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("Do the thing now."), "{text}");
    assert!(matches!(
        prompts
            .get("beta", &PromptArguments::new(), &CallContext::unattended())
            .await,
        Err(SourceError::UnknownPrompt(_))
    ));
    let mut bad = PromptArguments::new();
    bad.insert("other".to_owned(), "x".to_owned());
    assert!(matches!(
        prompts.get("alpha", &bad, &CallContext::unattended()).await,
        Err(SourceError::InvalidArguments(_))
    ));

    // A body edit changes no prompt: nothing announced.
    write(
        &root,
        "a",
        "name: alpha\ndescription: A.\n",
        "Other body.\n",
    );
    skills.notice_changes(&[root.join("a")]);
    assert!(!changes.has_changed().unwrap());
    // Making `beta` user-invocable adds a prompt: announced.
    write(&root, "b", "name: beta\ndescription: B.\n", "B.\n");
    skills.notice_changes(&[root.join("b")]);
    assert!(changes.has_changed().unwrap());
    let names: Vec<String> = prompts.prompts().into_iter().map(|p| p.name).collect();
    assert_eq!(names, vec!["alpha", "beta"]);
}
