//! `toolgate run` through the real binary against a scripted model over real HTTP.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use toolgate_providers::Kind;
use toolgate_providers::fake::{FakeServer, Reply, Step, step};
use toolgate_test_support::wait_until;

use crate::{project, toolgate};

fn check(f: impl FnOnce(&Value) -> Reply + Send + 'static) -> Step {
    Box::new(f)
}

pub(crate) fn provider_flags(kind: Kind, fake: &FakeServer) -> Vec<String> {
    vec![
        "--provider".into(),
        kind.as_str().into(),
        "--base-url".into(),
        fake.url().into(),
        "--model".into(),
        "fake-model".into(),
    ]
}

/// Runs the binary off the async runtime, so the fake keeps serving meanwhile.
async fn run(dir: &Path, args: Vec<String>) -> Output {
    let dir = dir.to_owned();
    tokio::task::spawn_blocking(move || {
        toolgate(&dir)
            .args(&args)
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {} stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn run_json_prints_one_object_and_exits_0_when_the_model_finishes() {
    for (kind, stream) in [(Kind::OpenAi, true), (Kind::Anthropic, false)] {
        let dir = project();
        let fake = FakeServer::start(
            kind,
            vec![
                step(Reply::call("read_file", json!({"path": "README.md"}))),
                check(|body| {
                    assert!(body["messages"].to_string().contains("hello"));
                    Reply::text("It says hello.")
                }),
            ],
        )
        .await;
        let mut args = vec!["run".to_owned(), "--json".to_owned()];
        args.extend(provider_flags(kind, &fake));
        if !stream {
            args.push("--no-stream".into());
        }
        args.push("what does the readme say?".into());
        let out = run(dir.path(), args).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report = json_of(&out);
        assert_eq!(report["status"], "finished");
        assert_eq!(report["turns"], 2);
        assert_eq!(report["text"], "It says hello.");
        assert_eq!(report["provider"], kind.as_str());
        assert_eq!(report["model"], "fake-model");
        assert_eq!(report["tool_calls"][0]["name"], "read_file");
        assert_eq!(report["tool_calls"][0]["arguments"]["path"], "README.md");
        assert_eq!(report["tool_calls"][0]["is_error"], false);
        assert!(report["tool_calls"][0]["duration_ms"].is_u64());
        assert!(report["usage"]["input_tokens"].as_u64().unwrap() > 0);
        assert!(report["usage"]["cached_input_tokens"].as_u64().unwrap() > 0);
        assert!(report["timing"]["loop_us"].is_u64());
        let session = report["session"].as_str().unwrap();
        let transcript = crate::sessions_dir(dir.path()).join(format!("{session}.jsonl"));
        let lines = std::fs::read_to_string(transcript).unwrap();
        assert!(lines.lines().count() >= 5, "{lines}");
        assert_eq!(fake.requests()[0].body["stream"] == true, stream);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn run_exits_non_zero_on_a_provider_error_and_on_max_turns() {
    let dir = project();
    let fake = FakeServer::start(Kind::OpenAi, vec![step(Reply::status(401, "bad key"))]).await;
    let mut args = vec!["run".to_owned(), "--json".to_owned()];
    args.extend(provider_flags(Kind::OpenAi, &fake));
    args.push("hi".into());
    let out = run(dir.path(), args).await;
    assert_eq!(out.status.code(), Some(1));
    let report = json_of(&out);
    assert_eq!(report["status"], "provider_error");
    assert!(
        report["error"].as_str().unwrap().contains("OPENAI_API_KEY"),
        "{report}"
    );
    // Regression: after a 401 the closing line said `[0 requests]` after making one.
    assert_eq!(report["requests"], 1, "{report}");
    assert_eq!(report["turns"], 0, "{report}");
    let fake = FakeServer::start(Kind::OpenAi, vec![step(Reply::status(401, "bad key"))]).await;
    let mut args = vec!["run".to_owned()];
    args.extend(provider_flags(Kind::OpenAi, &fake));
    args.push("hi".into());
    let out = run(dir.path(), args).await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("[1 request · "), "{said}");
    assert_eq!(said.matches("refused the API key").count(), 1, "{said}");

    let fake = FakeServer::start(
        Kind::Anthropic,
        vec![step(Reply::call("list_dir", json!({})))],
    )
    .await;
    let mut args = vec![
        "run".to_owned(),
        "--json".to_owned(),
        "--max-turns".to_owned(),
        "1".to_owned(),
    ];
    args.extend(provider_flags(Kind::Anthropic, &fake));
    args.push("loop".into());
    let out = run(dir.path(), args).await;
    assert_eq!(out.status.code(), Some(3));
    let report = json_of(&out);
    assert_eq!(report["status"], "max_turns");
    assert_eq!(report["turns"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn run_resume_continues_a_saved_session() {
    let dir = project();
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![
            step(Reply::text("first answer")),
            check(|body| {
                let text = body["messages"].to_string();
                assert!(
                    text.contains("first task") && text.contains("first answer"),
                    "{text}"
                );
                Reply::text("second answer")
            }),
        ],
    )
    .await;
    let mut args = vec!["run".to_owned(), "--json".to_owned()];
    args.extend(provider_flags(Kind::OpenAi, &fake));
    let mut first = args.clone();
    first.push("first task".into());
    let report = json_of(&run(dir.path(), first).await);
    let session = report["session"].as_str().unwrap().to_owned();
    let mut second = args;
    second.extend([
        "--resume".to_owned(),
        session.clone(),
        "second task".to_owned(),
    ]);
    let out = run(dir.path(), second).await;
    let report = json_of(&out);
    assert_eq!(report["text"], "second answer", "{report}");
    assert_eq!(report["session"], session.as_str());
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_without_a_terminal_is_denied_naming_the_rule() {
    let dir = project();
    let config = dir.path().join("user.toml");
    std::fs::write(&config, "[permissions]\nask = [\"write_file\"]\n").unwrap();
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![
            step(Reply::call(
                "write_file",
                json!({"path": "x.txt", "content": "x"}),
            )),
            check(|body| {
                let text = body["messages"].to_string();
                assert!(text.contains("ask = [\\\"write_file\\\"]"), "{text}");
                assert!(text.contains("nobody can approve"), "{text}");
                Reply::text("could not write")
            }),
        ],
    )
    .await;
    let mut args = vec![
        "--config".to_owned(),
        config.display().to_string(),
        "run".to_owned(),
        "--json".to_owned(),
    ];
    args.extend(provider_flags(Kind::OpenAi, &fake));
    args.push("write x".into());
    let out = run(dir.path(), args).await;
    let report = json_of(&out);
    assert_eq!(report["status"], "finished", "{report}");
    assert_eq!(report["tool_calls"][0]["is_error"], true);
    assert!(!dir.path().join("x.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_cancels_the_running_tool_and_run_exits_130() {
    let dir = project();
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![step(Reply::call(
            "run_shell",
            json!({"command": "touch started && exec sleep 600"}),
        ))],
    )
    .await;
    let mut args = vec!["run".to_owned(), "--json".to_owned()];
    args.extend(provider_flags(Kind::OpenAi, &fake));
    args.push("sleep".into());
    let path = dir.path().to_owned();
    let child = tokio::task::spawn_blocking(move || {
        toolgate(&path)
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    })
    .await
    .unwrap();
    // Ctrl-C once the command runs (not while the tool is still starting it).
    let started = dir.path().join("started");
    wait_until("the command to start", || started.exists()).await;
    let pid = i32::try_from(child.id()).unwrap();
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    // Had the Ctrl-C not stopped `sleep 600`, `run` would still be waiting for it.
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json_of(&out);
    assert_eq!(report["status"], "cancelled");
    assert_eq!(report["tool_calls"][0]["is_error"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mounted_mcp_server_is_reached_from_run() {
    let dir = project();
    let config = dir.path().join("user.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp_servers.inner]\ncommand = \"{}\"\nargs = [\"serve\", \"--root\", \"{}\"]\n",
            env!("CARGO_BIN_EXE_toolgate"),
            dir.path().join("src").display()
        ),
    )
    .unwrap();
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![
            step(Reply::call("mcp__inner__list_dir", json!({}))),
            check(|body| {
                let text = body["messages"].to_string();
                assert!(text.contains("main.rs"), "{text}");
                Reply::text("src has main.rs")
            }),
        ],
    )
    .await;
    let mut args = vec![
        "--config".to_owned(),
        config.display().to_string(),
        "run".to_owned(),
        "--json".to_owned(),
    ];
    args.extend(provider_flags(Kind::OpenAi, &fake));
    args.push("list src".into());
    let out = run(dir.path(), args).await;
    let report = json_of(&out);
    assert_eq!(
        report["status"],
        "finished",
        "{report} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(report["tool_calls"][0]["is_error"], false, "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_reads_tasks_from_stdin_streams_answers_and_shows_tool_lines() {
    use std::io::Write as _;
    let dir = project();
    let fake = FakeServer::start(
        Kind::Anthropic,
        vec![
            step(Reply::call("list_dir", json!({}))),
            step(Reply::text("There is a README.")),
            check(|body| {
                assert!(body["messages"].to_string().contains("There is a README."));
                Reply::text("Bye.")
            }),
        ],
    )
    .await;
    let mut args = vec!["chat".to_owned()];
    args.extend(provider_flags(Kind::Anthropic, &fake));
    let path = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        let mut child = toolgate(&path)
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"what is here?\n\nthanks\n/exit\n")
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "There is a README.\nBye.\n");
    let tool_line = stderr
        .lines()
        .find(|l| l.contains("⏺ list_dir"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(tool_line.ends_with(" ms"), "{tool_line}");
    assert!(stderr.contains("--resume"), "{stderr}");
    assert_eq!(fake.remaining(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slash_task_runs_the_user_invocable_skill_of_that_name() {
    let dir = project();
    let skill = dir.path().join(".toolgate/skills/deploy");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deploy\ndescription: Deploys the app.\nuser-invocable: true\n---\nDeploy to $ARGUMENTS with checklist.md.\n",
    )
    .unwrap();
    std::fs::write(skill.join("checklist.md"), "1. test\n").unwrap();
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![check(|body| {
            let messages = body["messages"].to_string();
            assert!(
                messages.contains("Deploy to staging with checklist.md."),
                "{messages}"
            );
            assert!(messages.contains("checklist.md"), "{messages}");
            Reply::text("Deployed.")
        })],
    )
    .await;
    let mut args = vec!["run".to_owned(), "--json".to_owned()];
    args.extend(provider_flags(Kind::OpenAi, &fake));
    args.push("/deploy staging".into());
    let out = run(dir.path(), args).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json_of(&out)["text"], "Deployed.");

    // An unknown skill is a usage error that lists the known ones; a path is a task.
    let mut args = vec!["run".to_owned(), "--json".to_owned()];
    args.extend(provider_flags(Kind::OpenAi, &fake));
    args.push("/deplo".into());
    let out = run(dir.path(), args).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no user-invocable skill `deplo`"),
        "{stderr}"
    );
    assert!(stderr.contains("/deploy"), "{stderr}");
}

/// Makes `cmd` run as on a kernel without Landlock: a seccomp filter answers
/// `landlock_create_ruleset` (444 on every architecture) with ENOSYS, as such a kernel
/// does. Everything else is allowed.
fn without_landlock(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt as _;
    let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let filter = [
        // Load seccomp_data.nr.
        op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        op(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0,
            1,
            libc::SYS_landlock_create_ruleset as u32,
        ),
        op(
            libc::BPF_RET | libc::BPF_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        ),
        op(libc::BPF_RET | libc::BPF_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    #[allow(unsafe_code)]
    // SAFETY: runs in the forked child before exec; two prctl calls on a filter that lives
    // in the closure, no allocation.
    unsafe {
        cmd.pre_exec(move || {
            let program = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr().cast_mut(),
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                    &raw const program,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fatal_tool_result_ends_run_with_tool_failed_and_exit_4() {
    let dir = project();
    // A sandboxed run_shell on a kernel without Landlock refuses to run: a config matter the
    // model cannot fix, so the task stops (ToolError::Fatal).
    let config = dir.path().join("user.toml");
    std::fs::write(&config, "[shell]\nsandbox = \"read-only\"\n").unwrap();
    // One step only: a request after the fatal result would get the fake's 500.
    let fake = FakeServer::start(
        Kind::OpenAi,
        vec![step(Reply::calls(vec![
            ("read_file", json!({"path": "README.md"})),
            ("run_shell", json!({"command": "echo hi > hi.txt"})),
        ]))],
    )
    .await;
    let mut args = vec![
        "--config".to_owned(),
        config.display().to_string(),
        "run".to_owned(),
        "--json".to_owned(),
    ];
    args.extend(provider_flags(Kind::OpenAi, &fake));
    args.push("say hi".into());
    let path = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        without_landlock(
            toolgate(&path)
                .args(&args)
                .env_remove("OPENAI_API_KEY")
                .env_remove("ANTHROPIC_API_KEY"),
        )
        .output()
        .unwrap()
    })
    .await
    .unwrap();
    let report = json_of(&out);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{report} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(report["status"], "tool_failed");
    assert_eq!(report["turns"], 1);
    assert_eq!(
        fake.requests().len(),
        1,
        "no request after the fatal result"
    );
    let error = report["error"].as_str().unwrap();
    assert!(error.contains("`run_shell`"), "{error}");
    assert!(error.contains("no Landlock"), "{error}");
    assert!(error.contains("shell.sandbox = \"off\""), "{error}");
    assert_eq!(report["tool_calls"][0]["name"], "read_file");
    assert_eq!(report["tool_calls"][0]["is_error"], false);
    assert_eq!(report["tool_calls"][1]["name"], "run_shell");
    assert_eq!(report["tool_calls"][1]["is_error"], true);
    assert!(!dir.path().join("hi.txt").exists(), "the command never ran");

    // The results were recorded: after the config is fixed, the session goes on and the
    // model reads why its call failed.
    let session = report["session"].as_str().unwrap().to_owned();
    fake.push(vec![check(|body| {
        let text = body["messages"].to_string();
        assert!(text.contains("`run_shell` is unavailable"), "{text}");
        assert!(text.contains("# demo"), "{text}");
        Reply::text("The sandbox needs Landlock.")
    })]);
    let mut args = vec!["run".to_owned(), "--json".to_owned()];
    args.extend(provider_flags(Kind::OpenAi, &fake));
    args.extend(["--resume".to_owned(), session, "why?".to_owned()]);
    let out = run(dir.path(), args).await;
    let report = json_of(&out);
    assert_eq!(report["status"], "finished", "{report}");
    assert_eq!(report["text"], "The sandbox needs Landlock.");
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_config_sets_when_run_compacts_the_conversation() {
    let dir = project();
    let config = dir.path().join("user.toml");
    std::fs::write(
        &config,
        "[agent]\ncontext_tokens = 10000\ncompact_percent = 50\nkeep_percent = 1\n",
    )
    .unwrap();
    // 1,000 reported prompt tokens stay under 50 % of 10,000; 6,000 cross it.
    let fake = FakeServer::start(
        Kind::Anthropic,
        vec![
            step(Reply::call("run_shell", json!({"command": "seq 1 100000"})).reporting(1_000)),
            step(Reply::call("run_shell", json!({"command": "seq 2 100000"})).reporting(6_000)),
            check(|body| {
                assert!(
                    body.get("tools").is_none(),
                    "a summary request has no tools"
                );
                assert!(body["messages"].to_string().contains("seq 1 100000"));
                Reply::text("Counted once with seq; the numbers do not matter.")
            }),
            check(|body| {
                let text = body["messages"].to_string();
                assert!(text.contains("Counted once with seq"), "{text}");
                assert!(!text.contains("seq 1 100000"), "{text}");
                assert!(text.contains("seq 2 100000"), "{text}");
                Reply::text("done")
            }),
        ],
    )
    .await;
    let mut args = vec![
        "--config".to_owned(),
        config.display().to_string(),
        "run".to_owned(),
    ];
    args.extend(provider_flags(Kind::Anthropic, &fake));
    args.push("count twice".into());
    let out = run(dir.path(), args).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    assert!(
        stderr.contains(
            "⤵ compacted the conversation: 5 → 3 messages, 1 unreferenced spill files deleted"
        ),
        "{stderr}"
    );
    assert_eq!(fake.remaining(), 0);
    // The transcript records the compaction and the file it deleted.
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("session "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{stderr}"));
    let transcript =
        std::fs::read_to_string(crate::sessions_dir(dir.path()).join(format!("{id}.jsonl")))
            .unwrap();
    let compaction: Value = transcript
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["type"] == "compaction")
        .unwrap_or_else(|| panic!("{transcript}"));
    let deleted = compaction["deleted"].as_array().unwrap();
    assert_eq!(deleted.len(), 1, "{compaction}");
    let deleted = dir.path().join(deleted[0].as_str().unwrap());
    assert!(
        deleted.starts_with(dir.path().join(".toolgate/spill")),
        "{deleted:?}"
    );
    assert!(!deleted.exists(), "{deleted:?}");
}

/// Regression: with no key `toolgate run` sent the request anyway, retried for ~15 s
/// offline, printed each failure twice and never named the key.
#[tokio::test(flavor = "multi_thread")]
async fn no_key_for_a_cloud_endpoint_means_no_request_and_says_which_variable() {
    let dir = project();
    for (provider, var) in [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
    ] {
        // A cloud base URL that is never reached: the check comes first.
        let args = vec![
            "run".to_owned(),
            "--provider".to_owned(),
            provider.to_owned(),
            "--base-url".to_owned(),
            "https://api.example.invalid/v1".to_owned(),
            "say hi".to_owned(),
        ];
        let out = run(dir.path(), args).await;
        assert_eq!(out.status.code(), Some(2));
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains(&format!("{var} is not set, so nothing was sent"))
                && said.contains(&format!("export {var}=")),
            "{said}"
        );
        assert_eq!(said.lines().count(), 1, "{said}");
    }
}

/// Regression: a refused connection to a cloud host was retried for ~15 s with "raise
/// max_retries" as the advice.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_cloud_endpoint_fails_at_once_saying_what_failed() {
    let dir = project();
    // A name that cannot resolve (`.invalid` is reserved), with a key set.
    let args = vec![
        "run".to_owned(),
        "--json".to_owned(),
        "--base-url".to_owned(),
        "https://api.example.invalid/v1".to_owned(),
        "say hi".to_owned(),
    ];
    let dir_path = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        toolgate(&dir_path)
            .args(&args)
            .env("OPENAI_API_KEY", "sk-test")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = json_of(&out);
    let error = report["error"].as_str().unwrap();
    assert!(
        error.starts_with("cannot reach provider `openai` at https://api.example.invalid/v1: ")
            && !error.contains("max_retries"),
        "{error}"
    );
    assert_eq!(report["requests"], 1, "{report}");
}
