//! Small tools shared by the tests: typed tools for the normal paths, hand-written
//! [`DynTool`]s for what the typed trait cannot express (malformed specs, sync panics).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate_core::{
    CallContext, Concurrency, DispatchLimits, Dispatcher, DynTool, Policy, ProviderError, Registry,
    Scope, StaticProvider, Tool, ToolError, ToolMeta, ToolOutput, ToolProvider, TypedTool,
};
use toolgate_test_support::FnTool;

/// A read-only tool's metadata with the given action.
pub fn read_only(action: &str) -> ToolMeta {
    ToolMeta {
        concurrency: Concurrency::ReadOnly,
        action: action.to_owned(),
        idempotent: true,
        destructive: false,
        ..ToolMeta::default()
    }
}

/// What a fixture tool returns in `structuredContent`.
#[derive(Serialize, JsonSchema)]
pub struct TextOut {
    /// The result text.
    pub text: String,
}

/// No arguments at all.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// A tool with a configurable name and description, for precedence tests: its description
/// says where it came from.
pub struct Stub {
    pub name: String,
    pub description: String,
}

impl Tool for Stub {
    type Args = NoArgs;
    type Output = TextOut;

    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn meta(&self) -> ToolMeta {
        read_only("test.stub")
    }
    async fn call(&self, _args: NoArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self.description.clone()))
    }
}

/// A stub tool named `name` whose description is `origin`.
pub fn stub(name: &str, origin: &str) -> Arc<dyn DynTool> {
    TypedTool::erased(Stub {
        name: name.to_owned(),
        description: origin.to_owned(),
    })
}

/// Arguments of [`Echo`].
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EchoArgs {
    /// Text to send back.
    pub text: String,
}

/// `echo`: returns its argument.
pub struct Echo;

impl Tool for Echo {
    type Args = EchoArgs;
    type Output = TextOut;

    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Send the text back unchanged."
    }
    fn meta(&self) -> ToolMeta {
        read_only("test.echo")
    }
    async fn call(&self, args: EchoArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args.text))
    }
}

/// Arguments of [`ReadFile`].
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// File to read, relative to the project root.
    pub path: String,
    /// Most lines to return.
    pub limit: Option<u32>,
}

/// `read_file`: a pretend reader, read-only, action `fs.read`.
pub struct ReadFile;

impl Tool for ReadFile {
    type Args = ReadFileArgs;
    type Output = TextOut;

    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Read a text file as numbered lines."
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta {
            display: "Read file".to_owned(),
            timeout: Some(Duration::from_secs(30)),
            spillable: false,
            ..read_only("fs.read")
        }
    }
    async fn call(&self, args: ReadFileArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!(
            "read {} (limit {:?})",
            args.path, args.limit
        )))
    }
}

/// Arguments of [`WriteNote`].
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteNoteArgs {
    /// Note title.
    pub title: String,
    /// Note body.
    pub body: String,
}

/// `write_note`: a pretend writer, mutating, action `fs.write`.
pub struct WriteNote {
    pub timeout: Option<Duration>,
}

impl Tool for WriteNote {
    type Args = WriteNoteArgs;
    type Output = TextOut;

    fn name(&self) -> &str {
        "write_note"
    }
    fn description(&self) -> &str {
        "Save a note under a title, replacing any note of that title."
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta {
            timeout: self.timeout,
            action: "fs.write".to_owned(),
            ..ToolMeta::default()
        }
    }
    async fn call(&self, args: WriteNoteArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!(
            "saved {} ({} bytes)",
            args.title,
            args.body.len()
        )))
    }
}

/// Arguments of [`Slow`].
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlowArgs {
    /// How long to sleep, in milliseconds.
    pub ms: u64,
}

/// `slow`: sleeps; `timeout` is its declared per-call limit.
pub struct Slow {
    pub timeout: Option<Duration>,
}

impl Tool for Slow {
    type Args = SlowArgs;
    type Output = TextOut;

    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Sleep for a while."
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta {
            timeout: self.timeout,
            ..read_only("test.slow")
        }
    }
    async fn call(&self, args: SlowArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(Duration::from_millis(args.ms)).await;
        Ok(ToolOutput::text("woke up"))
    }
}

/// `explode`: panics inside its handler.
pub struct Explode;

impl Tool for Explode {
    type Args = NoArgs;
    type Output = TextOut;

    fn name(&self) -> &str {
        "explode"
    }
    fn description(&self) -> &str {
        "Always panics."
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta::default()
    }
    async fn call(&self, _args: NoArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        panic!("boom in the handler");
    }
}

/// `fail`: returns a recoverable error that says what to do next.
pub struct Fail;

pub const FAIL_MESSAGE: &str = "the note is locked by another writer; wait a moment and retry";

impl Tool for Fail {
    type Args = NoArgs;
    type Output = TextOut;

    fn name(&self) -> &str {
        "fail"
    }
    fn description(&self) -> &str {
        "Always fails."
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta::default()
    }
    async fn call(&self, _args: NoArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::recoverable(FAIL_MESSAGE))
    }
}

/// Records how many probe calls run at once and in which order they start.
#[derive(Default)]
pub struct Tracker {
    active: AtomicUsize,
    max_active: AtomicUsize,
    /// Set when a mutating probe ran while any other probe was active.
    pub mutating_overlapped: AtomicBool,
    /// Ids in the order the calls started.
    pub started: Mutex<Vec<String>>,
}

impl Tracker {
    /// Most probe calls seen running at once.
    pub fn max_active(&self) -> usize {
        self.max_active.load(Ordering::SeqCst)
    }

    /// Ids in start order.
    pub fn started(&self) -> Vec<String> {
        self.started.lock().unwrap().clone()
    }

    async fn run(&self, id: &str, concurrency: Concurrency) {
        let before = self.active.fetch_add(1, Ordering::SeqCst);
        self.max_active.fetch_max(before + 1, Ordering::SeqCst);
        self.started.lock().unwrap().push(id.to_owned());
        if concurrency == Concurrency::Mutating && before != 0 {
            self.mutating_overlapped.store(true, Ordering::SeqCst);
        }
        // Long enough that overlapping calls really overlap, short enough to stay quick.
        tokio::time::sleep(Duration::from_millis(40)).await;
        if concurrency == Concurrency::Mutating && self.active.load(Ordering::SeqCst) != 1 {
            self.mutating_overlapped.store(true, Ordering::SeqCst);
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Arguments of [`Probe`].
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeArgs {
    /// Label of this call, echoed back.
    pub id: String,
}

/// `probe_read` / `probe_write`: records concurrency in a shared [`Tracker`].
pub struct Probe {
    pub tracker: Arc<Tracker>,
    pub concurrency: Concurrency,
}

impl Tool for Probe {
    type Args = ProbeArgs;
    type Output = TextOut;

    fn name(&self) -> &str {
        match self.concurrency {
            Concurrency::ReadOnly => "probe_read",
            Concurrency::Mutating => "probe_write",
            Concurrency::Detached => "probe_detached",
        }
    }
    fn description(&self) -> &str {
        "Records when it runs."
    }
    fn meta(&self) -> ToolMeta {
        ToolMeta {
            concurrency: self.concurrency,
            action: "test.probe".to_owned(),
            ..ToolMeta::default()
        }
    }
    async fn call(&self, args: ProbeArgs, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        self.tracker.run(&args.id, self.concurrency).await;
        Ok(ToolOutput::text(args.id))
    }
}

/// A hand-written [`DynTool`] with an arbitrary spec (the schema exactly as given) and the
/// default declaration; answers "ok".
pub fn raw_tool(name: &str, description: &str, schema: Value) -> FnTool {
    FnTool::new(name)
        .describe(description)
        .raw_schema(schema)
        .meta(ToolMeta::default())
}

/// A provider whose listing fails while `failing` is set, and counts how often it is asked.
pub struct Flaky {
    pub name: String,
    pub failing: AtomicBool,
    pub listed: AtomicUsize,
    pub tools: Vec<Arc<dyn DynTool>>,
}

impl Flaky {
    /// A flaky provider offering `tools`, initially working.
    pub fn new(name: &str, tools: Vec<Arc<dyn DynTool>>) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_owned(),
            failing: AtomicBool::new(false),
            listed: AtomicUsize::new(0),
            tools,
        })
    }

    /// How many times `tools()` was called.
    pub fn listed(&self) -> usize {
        self.listed.load(Ordering::SeqCst)
    }

    /// Makes listing fail (`true`) or work (`false`).
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl ToolProvider for Flaky {
    fn name(&self) -> &str {
        &self.name
    }
    fn tools(&self) -> Result<Vec<Arc<dyn DynTool>>, ProviderError> {
        self.listed.fetch_add(1, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) {
            return Err(ProviderError::Unavailable {
                provider: self.name.clone(),
                reason: "the server is restarting".to_owned(),
            });
        }
        Ok(self.tools.clone())
    }
}

/// A static provider, erased.
pub fn provider(name: &str, tools: Vec<Arc<dyn DynTool>>) -> Arc<dyn ToolProvider> {
    Arc::new(StaticProvider::new(name, tools))
}

/// A dispatcher over the global layer holding `tools`, under `policy`.
pub fn dispatcher_with(tools: Vec<Arc<dyn DynTool>>, policy: Policy) -> Dispatcher {
    let registry = Registry::new();
    registry.register(None, provider("test", tools), 0).unwrap();
    Dispatcher::new(
        Arc::new(registry),
        Scope::global(),
        policy,
        DispatchLimits::default(),
    )
}

/// The standard set of dispatch fixtures, allowed by default.
pub fn standard_tools() -> Vec<Arc<dyn DynTool>> {
    vec![
        TypedTool::erased(Echo),
        TypedTool::erased(ReadFile),
        TypedTool::erased(WriteNote { timeout: None }),
        TypedTool::erased(Slow {
            timeout: Some(Duration::from_millis(50)),
        }),
        TypedTool::erased(Explode),
        TypedTool::erased(Fail),
    ]
}
