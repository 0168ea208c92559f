//! What a model sees, pinned: the tools' schemas and typical results (paths, pids and
//! timings filtered).

use serde_json::{Value, json};

use toolgate_shell::ShellLimits;

use crate::fixtures::{Env, field};

fn filters(env: &Env) -> Vec<(String, String)> {
    vec![
        (
            regex_escape(&env.root.display().to_string()),
            "[root]".to_owned(),
        ),
        (
            r"\d+-\d+-\d+-[0-9a-f]{16}-(run_shell|job-\d+)-".to_owned(),
            "[spill]-$1-".to_owned(),
        ),
        (r"\d+\.\d+ s\b".to_owned(), "[duration]".to_owned()),
        (r"pid \d+".to_owned(), "pid [pid]".to_owned()),
    ]
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

#[test]
fn tool_schemas() {
    let env = Env::new();
    let schemas: Value = env
        .tools
        .iter()
        .map(|(name, tool)| {
            let input = Value::Object((*tool.spec().input_schema).clone());
            let output = tool
                .meta()
                .output_schema
                .as_ref()
                .map_or(Value::Null, |s| Value::Object((**s).clone()));
            (name.clone(), json!({ "input": input, "output": output }))
        })
        .collect::<serde_json::Map<_, _>>()
        .into();
    insta::assert_json_snapshot!(schemas);
}

#[tokio::test]
async fn results_as_the_model_sees_them() {
    // A small excerpt keeps the snapshot readable; the shape is the same at 16,000.
    let env = Env::with_limits(ShellLimits {
        inline_chars: 600,
        ..ShellLimits::default()
    });
    let mut shown = String::new();
    let mut show = |label: &str, text: &str| {
        shown.push_str(&format!("==== {label}\n{text}"));
    };
    let out = env.sh("echo to-out; echo to-err >&2; exit 3").await;
    show("failure, both streams", &out.text);
    let out = env
        .sh("for i in $(seq 1 3000); do echo \"step $i\"; done; echo 'error: step 3000 broke'; exit 1")
        .await;
    show("long failure, tail-biased", &out.text);
    let out = env
        .call(
            "run_shell",
            json!({ "command": "echo started; sleep 1000", "timeout_ms": 1000 }),
        )
        .await;
    show("timeout", &out.text);
    let out = env
        .call(
            "run_shell",
            json!({ "command": "printf 'one\\ntwo\\nthree\\n'; echo warn >&2", "background": true }),
        )
        .await;
    show("background start", &out.text);
    let id = field(&out, "job_id").as_str().unwrap().to_owned();
    // Let the job end so the pages below do not depend on timing.
    let (env_ref, id_ref) = (&env, &id);
    toolgate_test_support::wait_until_async("the job to end", || async move {
        let page = env_ref
            .call("job_output", json!({ "job_id": id_ref }))
            .await;
        field(&page, "eof") == Value::Bool(true)
    })
    .await;
    let page = env
        .call("job_output", json!({ "job_id": id, "limit": 4 }))
        .await;
    show("job_output, first page", &page.text);
    let last = env
        .call("job_output", json!({ "job_id": id, "offset": 4 }))
        .await;
    show("job_output, to the end", &last.text);
    let filters = filters(&env);
    let filters: Vec<(&str, &str)> = filters
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    insta::with_settings!({ filters => filters }, {
        insta::assert_snapshot!(shown);
    });
}
