//! The audit hook: every answered call reaches the sink once, with the permission stage's
//! decision (and the rule that made it) and how the call ended.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use toolgate_core::disclosure::RUN_TOOL;
use toolgate_core::{
    Approval, ApprovalRequest, Approver, AskAnswer, AuditDecision, AuditOutcome, AuditRecord,
    AuditSink, Call, CallContext, Disclosure, DisclosureMode, DisclosureSettings, DispatchLimits,
    Dispatcher, Policy, RawArgs, Registry, Scope, Session, SessionInit,
};

use crate::fixtures::{dispatcher_with, provider, standard_tools};

/// What the sink was told of one call, owned.
#[derive(Debug, Clone)]
struct Seen {
    session: String,
    called: String,
    tool: Option<String>,
    args: Option<Value>,
    decision: AuditDecision,
    outcome: AuditOutcome,
    bytes: u64,
}

#[derive(Default)]
struct Collect(Mutex<Vec<Seen>>);

impl AuditSink for Collect {
    fn record(&self, r: &AuditRecord<'_>) {
        self.0.lock().unwrap().push(Seen {
            session: r.session.id().to_owned(),
            called: r.called.to_owned(),
            tool: r.tool.map(str::to_owned),
            args: r.args.cloned(),
            decision: r.decision.clone(),
            outcome: r.outcome,
            bytes: r.result.bytes,
        });
    }
}

impl Collect {
    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn audited(policy: Policy) -> (Dispatcher, Arc<Collect>) {
    let sink = Arc::new(Collect::default());
    let d = dispatcher_with(standard_tools(), policy).with_audit(sink.clone());
    (d, sink)
}

async fn call(d: &Dispatcher, name: &str, args: Value) -> toolgate_core::ToolOutput {
    d.call(name, RawArgs::Json(args), CallContext::unattended())
        .await
}

#[tokio::test]
async fn allowed_denied_failed_and_timed_out_calls_are_each_one_record() {
    let policy = Policy::from_lists(&["echo".into()], &[], &["read_file".into()]).unwrap();
    let project = Policy::from_lists(&[], &[], &["fs.write".into()]).unwrap();
    let (d, sink) = audited(policy.tightened_by("project config", project));

    let out = call(&d, "echo", json!({"text": "hi"})).await;
    assert_eq!(out.text, "hi");
    let out = call(&d, "read_file", json!({"path": "a"})).await;
    assert!(out.is_error);
    let out = call(&d, "write_note", json!({"title": "t", "body": "b"})).await;
    assert!(out.is_error);
    call(&d, "fail", json!({})).await;
    call(&d, "slow", json!({"ms": 5_000})).await;
    call(&d, "no_such_tool", json!({})).await;

    let seen = sink.take();
    let got: Vec<(&str, &str, AuditOutcome)> = seen
        .iter()
        .map(|s| (s.called.as_str(), s.decision.as_str(), s.outcome))
        .collect();
    assert_eq!(
        got,
        [
            ("echo", "allowed", AuditOutcome::Ok),
            ("read_file", "denied", AuditOutcome::Refused),
            ("write_note", "denied", AuditOutcome::Refused),
            ("fail", "allowed", AuditOutcome::ToolError),
            ("slow", "allowed", AuditOutcome::Timeout),
            ("no_such_tool", "unchecked", AuditOutcome::Refused),
        ]
    );
    assert_eq!(
        seen[0].decision,
        AuditDecision::Allowed {
            rule: Some(r#"allow = ["echo"]"#.into()),
            source: None
        }
    );
    assert_eq!(seen[0].bytes, 2);
    assert_eq!(seen[0].args, Some(json!({"text": "hi"})));
    // The denying rule, and the layer it came from.
    assert_eq!(
        seen[1].decision,
        AuditDecision::Denied {
            rule: Some(r#"deny = ["read_file"]"#.into()),
            source: None
        }
    );
    let AuditDecision::Denied { rule, source } = &seen[2].decision else {
        panic!("{:?}", seen[2])
    };
    assert!(rule.as_deref().unwrap().contains(r#"deny = ["fs.write"]"#));
    assert_eq!(source.as_deref(), Some("project config"));
    // An unknown tool was never resolved; its session is the caller's.
    assert_eq!(seen[5].tool, None);
    assert_eq!(seen[0].tool.as_deref(), Some("echo"));
    assert_ne!(
        seen[0].session, seen[1].session,
        "one session per unattended call"
    );
}

struct Answer(bool);

impl Approver for Answer {
    fn approve(&self, _request: ApprovalRequest) -> BoxFuture<'static, bool> {
        let yes = self.0;
        Box::pin(async move { yes })
    }
}

fn ctx_answering(yes: bool) -> CallContext {
    CallContext::new(Session::new(SessionInit {
        approval: Approval::By(Arc::new(Answer(yes))),
        profile: None,
        client: None,
        identity: None,
        rate_key: None,
    }))
}

#[tokio::test]
async fn asked_calls_record_the_answer() {
    let policy = Policy::from_lists(&[], &["echo".into()], &[]).unwrap();
    let (d, sink) = audited(policy);
    for (ctx, expected) in [
        (CallContext::unattended(), AskAnswer::Nobody),
        (ctx_answering(true), AskAnswer::Approved),
        (ctx_answering(false), AskAnswer::Declined),
    ] {
        d.call("echo", RawArgs::Json(json!({"text": "x"})), ctx)
            .await;
        let seen = sink.take();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            seen[0].decision,
            AuditDecision::Asked {
                rule: Some(r#"ask = ["echo"]"#.into()),
                source: None,
                answer: expected
            }
        );
        let outcome = match expected {
            AskAnswer::Approved => AuditOutcome::Ok,
            _ => AuditOutcome::Refused,
        };
        assert_eq!(seen[0].outcome, outcome);
    }
}

#[tokio::test]
async fn a_batch_gives_one_record_per_call_in_call_order() {
    let (d, sink) = audited(Policy::from_lists(&[], &[], &["fail".into()]).unwrap());
    let batch = ["echo", "fail", "nope", "echo"]
        .into_iter()
        .map(|name| Call {
            name: name.into(),
            args: RawArgs::Text(r#"{"text": "b"}"#.into()),
        })
        .collect();
    let ctx = CallContext::unattended();
    let out = d.call_batch(batch, &ctx).await;
    assert_eq!(out.len(), 4);
    let seen = sink.take();
    let got: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.called.as_str(), s.decision.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("echo", "allowed"),
            ("fail", "denied"),
            ("nope", "unchecked"),
            ("echo", "allowed")
        ]
    );
    assert!(seen.iter().all(|s| s.session == ctx.session.id()));
}

#[tokio::test]
async fn a_run_tool_call_records_the_name_called_and_the_target() {
    let registry = Arc::new(Registry::new());
    registry
        .register(None, provider("test", standard_tools()), 0)
        .unwrap();
    let settings = DisclosureSettings {
        mode: DisclosureMode::On,
        ..DisclosureSettings::default()
    };
    let disclosure = Arc::new(Disclosure::new(&settings, &Default::default()).unwrap());
    disclosure.attach(&registry, Scope::global()).unwrap();
    let sink = Arc::new(Collect::default());
    let d = Dispatcher::new(
        registry,
        Scope::global(),
        Policy::allow_all(),
        DispatchLimits::default(),
    )
    .with_audit(sink.clone());
    let out = call(
        &d,
        RUN_TOOL,
        json!({"name": "echo", "input": {"text": "via proxy"}}),
    )
    .await;
    assert_eq!(out.text, "via proxy");
    let seen = sink.take();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].called, RUN_TOOL);
    assert_eq!(seen[0].tool.as_deref(), Some("echo"));
    // The target's arguments, which its digest is of.
    assert_eq!(seen[0].args, Some(json!({"text": "via proxy"})));
}

#[tokio::test]
async fn a_cancelled_call_is_recorded_as_cancelled() {
    let (d, sink) = audited(Policy::allow_all());
    let ctx = CallContext::unattended();
    ctx.cancel.cancel();
    let out = d
        .call("slow", RawArgs::Json(json!({"ms": 5_000})), ctx)
        .await;
    assert!(out.is_error && out.text.contains("cancelled"), "{out:?}");
    let seen = sink.take();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].decision.as_str(), "allowed");
    assert_eq!(seen[0].outcome, AuditOutcome::Cancelled);
}

#[tokio::test]
async fn a_call_dropped_while_it_runs_is_still_recorded_as_cancelled() {
    let (d, sink) = audited(Policy::allow_all());
    {
        let call = d.call(
            "slow",
            RawArgs::Json(json!({"ms": 5_000})),
            CallContext::unattended(),
        );
        futures::pin_mut!(call);
        // One poll takes it through the permission stage into the sleeping tool.
        assert!(futures::poll!(call.as_mut()).is_pending());
        assert!(sink.take().is_empty(), "not answered yet");
    }
    let seen = sink.take();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].tool.as_deref(), Some("slow"));
    assert_eq!(seen[0].decision.as_str(), "allowed");
    assert_eq!(seen[0].outcome, AuditOutcome::Cancelled);
    assert_eq!(seen[0].args, Some(json!({"ms": 5_000})));
}

#[tokio::test]
async fn a_caller_over_a_rate_limit_gets_a_wait_and_the_audit_says_rate_limited() {
    let (d, sink) = audited(Policy::allow_all());
    let tools = std::collections::BTreeMap::from([("echo".to_owned(), 1_u32)]);
    let limits = toolgate_core::RateLimits::new(0, 0, &tools).unwrap();
    let d = d.with_rate_limits(Arc::new(limits));
    let ctx = CallContext::unattended();
    let first = d
        .call("echo", RawArgs::Json(json!({"text": "a"})), ctx.clone())
        .await;
    assert_eq!(first.text, "a");
    let second = d
        .call("echo", RawArgs::Json(json!({"text": "b"})), ctx.clone())
        .await;
    assert!(second.is_error);
    assert!(
        second.text.contains("rate limit") && second.text.contains("retry after"),
        "{}",
        second.text
    );
    let wait = second.structured["retry_after_ms"].as_u64().unwrap();
    assert!(wait > 0 && wait <= 60_000, "{wait}");
    // Other tools are not limited, and neither is another session.
    assert!(!call(&d, "read_file", json!({"path": "a"})).await.is_error);
    let other = CallContext::unattended();
    assert_eq!(
        d.call("echo", RawArgs::Json(json!({"text": "c"})), other)
            .await
            .text,
        "c"
    );
    let outcomes: Vec<AuditOutcome> = sink.take().iter().map(|s| s.outcome).collect();
    assert_eq!(
        outcomes,
        [
            AuditOutcome::Ok,
            AuditOutcome::RateLimited,
            AuditOutcome::Ok,
            AuditOutcome::Ok
        ]
    );
}

#[tokio::test]
async fn a_conditional_rule_is_recorded_as_written_and_only_for_the_callers_it_applies_to() {
    let allow = [r#"echo if group = "eng""#.to_owned()];
    let deny = [r#"echo unless group = "eng""#.to_owned()];
    let (d, sink) = audited(Policy::from_lists(&allow, &[], &deny).unwrap());
    let eng = CallContext::new(Session::new(SessionInit {
        approval: Approval::Nobody,
        profile: None,
        client: None,
        identity: Some(toolgate_core::Identity {
            subject: "alice".into(),
            issuer: None,
            groups: vec!["eng".into()],
            scopes: Vec::new(),
        }),
        rate_key: None,
    }));
    let out = d
        .call("echo", RawArgs::Json(json!({"text": "hi"})), eng)
        .await;
    assert_eq!(out.text, "hi");
    let out = call(&d, "echo", json!({"text": "hi"})).await;
    assert!(out.is_error);
    let seen = sink.take();
    assert_eq!(
        seen[0].decision,
        AuditDecision::Allowed {
            rule: Some(r#"allow = ["echo if group = \"eng\""]"#.into()),
            source: None
        }
    );
    assert_eq!(
        seen[1].decision,
        AuditDecision::Denied {
            rule: Some(r#"deny = ["echo unless group = \"eng\""]"#.into()),
            source: None
        }
    );
}
