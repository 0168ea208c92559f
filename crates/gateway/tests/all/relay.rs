//! A mounted server's questions to callers: waiting for a person's answer holds nothing the
//! other callers of the server need.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::Notify;
use toolgate_core::{
    Approval, AskError, CallContext, ClientAsk, ClientLink, RawArgs, Session, SessionInit,
};

use crate::support::{fake, setup, stdio};

/// A client whose user takes their time: each form is noted as `asked`, and answered
/// ("accept") only once the test says `answer`.
#[derive(Default)]
struct SlowUser {
    asked: Notify,
    answer: Arc<Notify>,
}

impl ClientLink for SlowUser {
    fn can_ask(&self, ask: ClientAsk) -> Result<(), &'static str> {
        (ask == ClientAsk::FormElicitation)
            .then_some(())
            .ok_or("forms only")
    }

    fn request(&self, _: ClientAsk, _: Value) -> BoxFuture<'static, Result<Value, AskError>> {
        self.asked.notify_one();
        let answer = Arc::clone(&self.answer);
        Box::pin(async move {
            answer.notified().await;
            Ok(json!({"action": "accept", "content": {}}))
        })
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

#[tokio::test]
async fn a_question_left_open_does_not_hold_the_server_for_other_callers() {
    let builder = setup();
    let mut config = stdio(&fake(), &["normal"], &builder.mark);
    let env = config.env.as_mut().unwrap();
    env.insert("FAKE_ASK".to_owned(), "1".to_owned());
    // Long enough for any loaded machine; before the fix the other call waited all of it
    // and failed.
    config.tool_timeout_sec = Some(30.0);
    let rig = builder.server("s", config).build();
    rig.gateway.start_all().await;

    let user = Arc::new(SlowUser::default());
    let alice = Session::new(SessionInit {
        approval: Approval::Nobody,
        profile: None,
        client: Some(Arc::clone(&user) as Arc<dyn ClientLink>),
        identity: None,
        rate_key: None,
    });
    let dispatcher = Arc::clone(&rig.dispatcher);
    let asking = tokio::spawn(async move {
        dispatcher
            .call(
                "mcp__s__ask",
                RawArgs::Json(json!({})),
                CallContext::new(alice),
            )
            .await
    });
    user.asked.notified().await;
    // Alice's form is open: Bob's call that changes the server runs now, not after it.
    let bob = rig.call("mcp__s__note", json!({})).await;
    assert!(!bob.is_error, "{}", bob.text);
    assert_eq!(bob.text, "noted");
    assert!(!asking.is_finished());
    // Alice answers: her call takes the server back and ends.
    user.answer.notify_one();
    let alice = asking.await.unwrap();
    assert!(!alice.is_error, "{}", alice.text);
    assert_eq!(alice.text, "answered accept");
    rig.finish().await;
}
