//! Skills through the real binary: `toolgate skills`, the `skill` tool in `tools` and
//! `call`, and over MCP (prompts, `prompts/list_changed`, the tool's catalog following the
//! files) with the rmcp client.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientConfig, GetPromptRequestParams, ProtocolVersion};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::{project, toolgate};

/// How long a test waits for the server to notice a file change before it calls the wait a
/// hang: this is not a speed test (`bench/skills_watch.sh` measures it).
const WAIT: Duration = toolgate_test_support::HANG_GUARD;

/// A project and a home folder of its own (so the machine's `~/.claude/skills` stays out).
struct Setup {
    project: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        Self {
            project: project(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn project_skills(&self) -> PathBuf {
        self.project.path().join(".claude/skills")
    }

    fn user_skills(&self) -> PathBuf {
        self.home.path().join(".claude/skills")
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        toolgate(self.project.path())
            .env("HOME", self.home.path())
            .args(args)
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// Writes `<root>/<folder>/SKILL.md` with `extra` frontmatter lines.
fn skill(root: &Path, folder: &str, name: &str, description: &str, extra: &str, body: &str) {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"),
    )
    .unwrap();
}

/// The standard set: a project `deploy` with a script that shadows a user `deploy`, a
/// user-only `release`, a model-only `house-style`, a user `helper` and a broken skill.
fn standard() -> Setup {
    let s = Setup::new();
    skill(
        &s.project_skills(),
        "deploy",
        "deploy",
        "Deploys the app to production.",
        "argument-hint: \"[env]\"\n",
        "Run scripts/deploy.sh $ARGUMENTS and check the health page.\n",
    );
    std::fs::create_dir_all(s.project_skills().join("deploy/scripts")).unwrap();
    std::fs::write(
        s.project_skills().join("deploy/scripts/deploy.sh"),
        "echo deploying\n",
    )
    .unwrap();
    skill(
        &s.user_skills(),
        "deploy",
        "deploy",
        "The user's own deploy.",
        "",
        "user deploy\n",
    );
    skill(
        &s.project_skills(),
        "release",
        "release",
        "Cuts a release; only when the user asks.",
        "disable-model-invocation: true\n",
        "Tag and push.\n",
    );
    skill(
        &s.project_skills(),
        "house-style",
        "house-style",
        "The team's writing rules.",
        "user-invocable: false\n",
        "Write short sentences.\n",
    );
    skill(
        &s.user_skills(),
        "helper",
        "helper",
        "Looks things up in its reference.",
        "",
        "See reference.md.\n",
    );
    std::fs::write(
        s.user_skills().join("helper/reference.md"),
        "the reference\n",
    )
    .unwrap();
    skill(&s.project_skills(), "broken", "Broken Skill", "x", "", "");
    s
}

#[test]
fn skills_list_shows_source_flags_shadowing_and_problems() {
    let s = standard();
    let body = s.json(&["skills", "list", "--json"]);
    let skills = body["skills"].as_array().unwrap();
    let names: Vec<&str> = skills.iter().map(|k| k["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["deploy", "helper", "house-style", "release"]);
    let by = |n: &str| skills.iter().find(|k| k["name"] == n).unwrap();
    // A same-named project and user skill: the project one is used.
    assert_eq!(by("deploy")["source"], "project");
    assert_eq!(
        by("deploy")["description"],
        "Deploys the app to production."
    );
    assert_eq!(by("helper")["source"], "user");
    assert_eq!(by("release")["flags"], json!(["user"]));
    assert_eq!(by("house-style")["flags"], json!(["model"]));
    assert_eq!(by("deploy")["flags"], json!(["model", "user"]));
    let shadowed = &body["shadowed"][0];
    assert_eq!(shadowed["source"], "user");
    assert!(
        shadowed["shadowed_by"]
            .as_str()
            .unwrap()
            .ends_with(".claude/skills/deploy/SKILL.md")
    );
    // A malformed skill beside good ones: reported with its path, the others load.
    let problem = &body["problems"][0];
    assert!(
        problem["path"]
            .as_str()
            .unwrap()
            .ends_with(".claude/skills/broken/SKILL.md")
    );
    assert!(
        problem["reason"]
            .as_str()
            .unwrap()
            .contains("may only use lowercase letters")
    );
    assert_eq!(body["catalog"]["listed"], 3);
    assert_eq!(body["catalog"]["omitted"], 0);

    let out = s.run(&["skills", "list"]);
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.starts_with("NAME "), "{table}");
    assert!(
        table.contains("deploy       project  model,user  .claude/skills/deploy/SKILL.md"),
        "{table}"
    );
    assert!(table.contains("shadowed    "), "{table}");
    assert!(
        table.contains("skill tool catalog: 3 of 3 model-invocable skills listed"),
        "{table}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("warning: .claude/skills/broken/SKILL.md: `name` may only use"),
        "{stderr}"
    );
}

#[test]
fn skills_show_prints_the_instructions_and_bundled_files() {
    let s = standard();
    let out = s.run(&["skills", "show", "deploy"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("source: project (.claude/skills)"), "{text}");
    assert!(text.contains("shadows: "), "{text}");
    assert!(text.contains("Run scripts/deploy.sh $ARGUMENTS"), "{text}");
    assert!(
        text.contains("- .claude/skills/deploy/scripts/deploy.sh"),
        "{text}"
    );
    // A user-only skill is shown to the user.
    let out = s.run(&["skills", "show", "release"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("hidden from the model")
    );
    let out = s.run(&["skills", "show", "deplo"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("no skill named `deplo` (did you mean `deploy`?)"),
        "{stderr}"
    );
    // Regression: a near name two edits away was not offered.
    let out = s.run(&["skills", "show", "relaes"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("(did you mean `release`?)"), "{stderr}");
    // Regression: a user skill's folder read "source: user (.)", as if it were the project.
    let out = s.run(&["skills", "show", "helper"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let source = text.lines().find(|l| l.starts_with("source: ")).unwrap();
    assert!(
        source.starts_with("source: user (/") && source.ends_with(".claude/skills)"),
        "{text}"
    );
}

#[test]
fn the_skill_tool_loads_a_skill_and_its_files_are_readable() {
    let s = standard();
    let tools = s.json(&["tools", "--json"]);
    let tool = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "skill")
        .expect("the skill tool is listed")
        .clone();
    let description = tool["description"].as_str().unwrap();
    assert!(description.contains("- deploy: Deploys the app to production."));
    assert!(description.contains("- house-style: The team's writing rules."));
    // disable-model-invocation: not in the model's catalog.
    assert!(!description.contains("release"), "{description}");

    let out = s.run(&[
        "call",
        "skill",
        r#"{"name": "deploy", "arguments": "staging"}"#,
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Run scripts/deploy.sh staging and check"),
        "{text}"
    );
    assert!(
        text.contains("- .claude/skills/deploy/scripts/deploy.sh"),
        "{text}"
    );
    let out = s.run(&[
        "call",
        "read_file",
        r#"{"path": ".claude/skills/deploy/scripts/deploy.sh"}"#,
    ]);
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("echo deploying")
    );

    // A user skill outside the project: its bundled file is readable by read_file.
    let out = s.run(&["call", "skill", r#"{"name": "helper"}"#]);
    let text = String::from_utf8(out.stdout).unwrap();
    let reference = s
        .user_skills()
        .canonicalize()
        .unwrap()
        .join("helper/reference.md");
    assert!(
        text.contains(&format!("- {}", reference.display())),
        "{text}"
    );
    let args = json!({ "path": reference }).to_string();
    let out = s.run(&["call", "read_file", &args]);
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("the reference"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ... but not writable.
    let args = json!({ "path": reference, "content": "x" }).to_string();
    let out = s.run(&["call", "write_file", &args]);
    assert!(!out.status.success());

    // The user-only skill is refused, with what to do instead.
    let out = s.run(&["call", "skill", r#"{"name": "release"}"#]);
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("may only be started by the user"),
        "{stderr}"
    );
    let out = s.run(&["call", "skill", r#"{"name": "deplyo"}"#]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("Did you mean `deploy`?"), "{stderr}");
    let out = s.run(&["call", "skill", r#"{"query": "reference lookup"}"#]);
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("- helper: Looks things up")
    );
}

#[test]
fn a_catalog_past_its_budget_lists_whole_entries_and_a_count() {
    let s = Setup::new();
    for i in 0..60 {
        skill(
            &s.project_skills(),
            &format!("s{i:02}"),
            &format!("skill-{i:02}"),
            "Handles one particular kind of chore that needs a careful procedure.",
            "",
            "steps\n",
        );
    }
    std::fs::create_dir_all(s.project.path().join(".toolgate")).unwrap();
    std::fs::write(
        s.project.path().join(".toolgate/config.toml"),
        "[skills]\ncatalog_chars = 1000\n",
    )
    .unwrap();
    let body = s.json(&["skills", "list", "--json"]);
    let listed = body["catalog"]["listed"].as_u64().unwrap();
    let omitted = body["catalog"]["omitted"].as_u64().unwrap();
    assert!(
        listed > 0 && omitted > 0 && listed + omitted == 60,
        "{body}"
    );
    assert!(body["catalog"]["chars"].as_u64().unwrap() <= 1000);
    let tools = s.json(&["tools", "--json"]);
    let description = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "skill")
        .unwrap()["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(description.chars().count() <= 1000);
    assert!(
        description.ends_with(&format!(
            "({omitted} more skills are not listed here: call skill with {{\"query\": \"<words>\"}} to search all skills by name and description.)"
        )),
        "{description}"
    );
    // An omitted skill is still found and loaded.
    let out = s.run(&["call", "skill", r#"{"name": "skill-59"}"#]);
    assert!(out.status.success());
}

#[test]
fn a_project_config_may_turn_skills_off_and_name_only_its_own_folders() {
    let s = standard();
    std::fs::create_dir_all(s.project.path().join(".toolgate")).unwrap();
    let config = s.project.path().join(".toolgate/config.toml");
    std::fs::write(&config, "[skills]\nroots = [\"../elsewhere\"]\n").unwrap();
    let out = s.run(&["skills", "list"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("outside the project"), "{stderr}");
    std::fs::write(&config, "[skills]\nroots = [\"vendor/skills\"]\n").unwrap();
    skill(
        &s.project.path().join("vendor/skills"),
        "vendored",
        "vendored",
        "From a custom root.",
        "",
        "v\n",
    );
    let body = s.json(&["skills", "list", "--json"]);
    let vendored = body["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "vendored")
        .unwrap()
        .clone();
    assert_eq!(vendored["source"], "custom");
    std::fs::write(&config, "[skills]\nenabled = false\n").unwrap();
    let tools = s.json(&["tools", "--json"]);
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["name"] != "skill")
    );
}

/// An MCP client that counts the list-changed notifications it receives.
#[derive(Clone, Default)]
struct Counting {
    prompts: Arc<AtomicUsize>,
    tools: Arc<AtomicUsize>,
}

impl ClientHandler for Counting {
    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.prompts.fetch_add(1, Ordering::SeqCst);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools.fetch_add(1, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        // The initialize handshake every client uses today: list_changed arrives unasked.
        ClientConfig::default().with_protocol_version(ProtocolVersion::V_2025_06_18)
    }
}

async fn connect(s: &Setup) -> RunningService<RoleClient, Counting> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    cmd.current_dir(s.project.path())
        .args(["serve", "--log-level", "warn"])
        .env("XDG_CONFIG_HOME", s.project.path().join(".no-user-config"))
        .env("HOME", s.home.path())
        .env_remove("RUST_LOG")
        .env_remove("TOOLGATE_TOKEN");
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Counting::default().serve(transport).await.unwrap()
}

async fn skill_description(client: &RunningService<RoleClient, Counting>) -> Option<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools
        .iter()
        .find(|t| t.name == "skill")
        .and_then(|t| t.description.as_deref().map(str::to_owned))
}

async fn prompt_names(client: &RunningService<RoleClient, Counting>) -> Vec<String> {
    let prompts = client.list_all_prompts().await.unwrap();
    prompts.into_iter().map(|p| p.name).collect()
}

/// Waits until `count` passes `seen`, within [`WAIT`].
async fn notified(count: &AtomicUsize, seen: usize) -> bool {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        if count.load(Ordering::SeqCst) > seen {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_prompts_are_the_user_invocable_skills_and_follow_the_files() {
    let s = standard();
    let client = connect(&s).await;
    let info = client.peer_info().unwrap();
    assert_eq!(
        info.capabilities
            .prompts
            .as_ref()
            .and_then(|p| p.list_changed),
        Some(true)
    );
    // Everything the user may run, including the user-only `release`; not `house-style`.
    assert_eq!(
        prompt_names(&client).await,
        vec!["deploy", "helper", "release"]
    );
    let prompts = client.list_all_prompts().await.unwrap();
    let deploy = prompts.iter().find(|p| p.name == "deploy").unwrap();
    let argument = &deploy.arguments.as_ref().unwrap()[0];
    assert_eq!(argument.name, "arguments");
    assert_eq!(argument.description.as_deref(), Some("[env]"));

    let mut args = serde_json::Map::new();
    args.insert("arguments".into(), json!("production"));
    let got = client
        .get_prompt(GetPromptRequestParams::new("deploy").with_arguments(args))
        .await
        .unwrap();
    let text = serde_json::to_value(&got.messages[0]).unwrap()["content"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("Run scripts/deploy.sh production and check"),
        "{text}"
    );
    assert!(
        text.contains("- .claude/skills/deploy/scripts/deploy.sh"),
        "{text}"
    );
    let refused = client
        .get_prompt(GetPromptRequestParams::new("house-style"))
        .await;
    assert!(refused.is_err(), "a model-only skill is not a prompt");

    // The skill tool, through the same session.
    let description = skill_description(&client).await.unwrap();
    assert!(description.contains("- deploy:") && !description.contains("release"));
    let result = client
        .call_tool(
            CallToolRequestParams::new("skill")
                .with_arguments(json!({"name": "house-style"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(result["isError"], false, "{result}");
    assert!(
        result["structuredContent"]["text"]
            .as_str()
            .unwrap()
            .contains("Write short sentences.")
    );

    // Added: a new prompt and a new catalog entry, announced without a restart.
    let prompts_seen = client.service().prompts.load(Ordering::SeqCst);
    let tools_seen = client.service().tools.load(Ordering::SeqCst);
    skill(
        &s.project_skills(),
        "review",
        "review",
        "Reviews a pull request.",
        "",
        "Read the diff.\n",
    );
    assert!(notified(&client.service().prompts, prompts_seen).await);
    assert!(notified(&client.service().tools, tools_seen).await);
    assert_eq!(
        prompt_names(&client).await,
        vec!["deploy", "helper", "release", "review"]
    );
    assert!(
        skill_description(&client)
            .await
            .unwrap()
            .contains("- review: Reviews a pull request.")
    );

    // Renamed: no ghost of the old name in either list.
    let prompts_seen = client.service().prompts.load(Ordering::SeqCst);
    std::fs::write(
        s.project_skills().join("review/SKILL.md"),
        "---\nname: code-review\ndescription: Reviews code.\n---\nRead it.\n",
    )
    .unwrap();
    assert!(notified(&client.service().prompts, prompts_seen).await);
    let names = prompt_names(&client).await;
    assert!(names.contains(&"code-review".to_owned()) && !names.contains(&"review".to_owned()));
    let description = skill_description(&client).await.unwrap();
    assert!(description.contains("- code-review:") && !description.contains("- review:"));

    // Deleted: gone from both, and loading it says so.
    let prompts_seen = client.service().prompts.load(Ordering::SeqCst);
    std::fs::remove_dir_all(s.project_skills().join("review")).unwrap();
    assert!(notified(&client.service().prompts, prompts_seen).await);
    assert!(
        !prompt_names(&client)
            .await
            .contains(&"code-review".to_owned())
    );
    let result = client
        .call_tool(
            CallToolRequestParams::new("skill")
                .with_arguments(json!({"name": "code-review"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(result["isError"], true, "{result}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skill_tool_appears_when_the_first_skill_does() {
    let s = Setup::new();
    let client = connect(&s).await;
    assert_eq!(skill_description(&client).await, None);
    assert!(prompt_names(&client).await.is_empty());
    let seen = client.service().tools.load(Ordering::SeqCst);
    skill(
        &s.project.path().join(".toolgate/skills"),
        "first",
        "first",
        "The first skill.",
        "",
        "Go.\n",
    );
    assert!(notified(&client.service().tools, seen).await);
    assert!(
        skill_description(&client)
            .await
            .unwrap()
            .contains("- first: The first skill.")
    );
    client.cancel().await.unwrap();
}

/// Calls the `skill` tool and returns the text it answers.
async fn load_skill_text(client: &RunningService<RoleClient, Counting>, name: &str) -> String {
    let Value::Object(args) = json!({"name": name}) else {
        unreachable!()
    };
    let result = client
        .call_tool(CallToolRequestParams::new("skill").with_arguments(args))
        .await
        .unwrap();
    serde_json::to_value(&result).unwrap()["content"].to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_symlink_swapped_in_after_listing_never_leads_the_skill_tool_outside() {
    // Regression: replacing a listed skill's SKILL.md or folder by a symlink to an outside
    // file made `skill` return that file. The watcher is off, so the swap is never noticed:
    // the race window stays open for the whole test.
    let s = Setup::new();
    std::fs::create_dir_all(s.project.path().join(".toolgate")).unwrap();
    std::fs::write(
        s.project.path().join(".toolgate/config.toml"),
        "[skills]\nwatch = false\nrescan_secs = 0\n",
    )
    .unwrap();
    let skills = s.project_skills();
    skill(
        &skills,
        "deploy",
        "deploy",
        "Deploys.",
        "",
        "IN_PROJECT body\n",
    );
    let outside = tempfile::tempdir().unwrap();
    skill(
        outside.path(),
        "evil",
        "deploy",
        "Deploys.",
        "",
        "OUTSIDE_SECRET body\n",
    );
    std::fs::write(outside.path().join("evil/token"), "OUTSIDE_TOKEN").unwrap();
    let client = connect(&s).await;
    let first = load_skill_text(&client, "deploy").await;
    assert!(first.contains("IN_PROJECT"), "{first}");

    // The file swapped for a symlink to an outside skill file.
    let file = skills.join("deploy/SKILL.md");
    std::fs::rename(&file, skills.join("deploy/SKILL.md.orig")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("evil/SKILL.md"), &file).unwrap();
    let swapped = load_skill_text(&client, "deploy").await;
    assert!(!swapped.contains("OUTSIDE_SECRET"), "{swapped}");
    std::fs::remove_file(&file).unwrap();
    std::fs::rename(skills.join("deploy/SKILL.md.orig"), &file).unwrap();

    // The folder swapped for a symlink to an outside folder.
    std::fs::rename(skills.join("deploy"), skills.join("deploy.orig")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("evil"), skills.join("deploy")).unwrap();
    let swapped = load_skill_text(&client, "deploy").await;
    assert!(
        !swapped.contains("OUTSIDE_SECRET") && !swapped.contains("token"),
        "{swapped}"
    );
    std::fs::remove_file(skills.join("deploy")).unwrap();
    std::fs::rename(skills.join("deploy.orig"), skills.join("deploy")).unwrap();
    let back = load_skill_text(&client, "deploy").await;
    assert!(back.contains("IN_PROJECT"), "{back}");
    client.cancel().await.unwrap();
}
