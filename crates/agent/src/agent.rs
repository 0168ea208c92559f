//! The loop (it stays the same as tools grow): request → tool calls → dispatch through the
//! registry → one budget over the turn's results → append → repeat.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolgate_budget::SpillStore;
use toolgate_core::disclosure::{Strategy, Unmasked};
use toolgate_core::{
    Approval, Call, CallContext, Disclosure, Dispatcher, ExposureMode, Protocol, RawArgs,
    RenderOptions, Session, SessionInit, ToolOutput,
};
use toolgate_providers::{
    Event, Kind, Message, Provider, ProviderError, Request, ToolCall, ToolResult, Usage,
};

use crate::compact;
use crate::settings::AgentSettings;
use crate::transcript::{Record, Restored, Transcript, TranscriptError};

/// The system prompt when config gives none; `{root}` becomes the project root.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a careful software engineer working in the project at {root}, with tools to read, search and change its files and to run commands there. Work step by step: look before you change, keep changes small, and check your work by running it. Paths are relative to the project root. When a result says its full output was saved to a file, read that file with read_file (offset and limit) instead of running the command again. When you are done, answer with a short summary of what you did and what is left.";

/// The runtime pieces the loop uses: the same registry, dispatcher, budget and disclosure
/// as every other front end (`toolgate_runtime::Runtime`).
#[derive(Clone)]
pub struct Tools {
    /// Dispatcher (built-ins in process, mounted MCP servers, the per-turn budget).
    pub dispatcher: Arc<Dispatcher>,
    /// Progressive disclosure over the dispatcher's scope.
    pub disclosure: Arc<Disclosure>,
    /// Tool rendering options.
    pub render: RenderOptions,
    /// The spill store (for reference cleanup at compaction and close), if any.
    pub spill: Option<Arc<SpillStore>>,
    /// The project root (for the default system prompt).
    pub root: PathBuf,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The model answered without calling tools.
    Finished,
    /// `max_turns` model requests were made without a final answer.
    MaxTurns,
    /// The user cancelled (Ctrl-C).
    Cancelled,
    /// The provider failed (after retries).
    ProviderError,
    /// A tool reported a fatal failure (its server is gone, the host is broken).
    ToolFailed,
}

/// One tool call of a task, for reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// Tool name as the model wrote it.
    pub name: String,
    /// Arguments as the model wrote them (parsed when they are JSON).
    pub arguments: Value,
    /// Whether the result was an error.
    pub is_error: bool,
    /// Whether the budget saved its output to a spill file.
    pub spilled: bool,
    /// Characters of the result the model saw.
    pub result_chars: usize,
    /// Wall time, waiting for its turn included.
    pub duration_ms: u64,
}

/// Where the time of a task went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Timing {
    /// In model requests (network and generation).
    pub model_ms: u64,
    /// In tool calls.
    pub tools_ms: u64,
    /// Everything else: building requests, rendering tools, budgets, transcripts — the
    /// loop's own overhead.
    pub loop_us: u64,
}

/// The result of [`Agent::run`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// How it ended.
    pub status: Status,
    /// Model answers received (the turns counted against `max_turns`).
    pub turns: u32,
    /// HTTP requests sent to the model, failed ones and retries included.
    pub requests: u32,
    /// The model's last text.
    pub text: String,
    /// Every tool call, in order.
    pub tool_calls: Vec<CallRecord>,
    /// Tokens of this task.
    pub usage: Usage,
    /// What went wrong, for the statuses that are failures.
    pub error: Option<String>,
    /// Where the time went.
    pub timing: Timing,
}

/// What the loop reports while it works (a terminal shows it; `--json` ignores it).
#[derive(Debug, Clone)]
pub enum Progress {
    /// A model request is on its way.
    Waiting,
    /// Streamed text.
    Text(String),
    /// The model started a tool call.
    ToolCallStarted(String),
    /// A failed request is retried after `wait`.
    Retrying {
        /// Attempt that failed.
        attempt: u32,
        /// Wait before the next.
        wait: Duration,
        /// Why.
        reason: String,
    },
    /// The model's answer is complete.
    AnswerDone,
    /// Tools are running.
    ToolsRunning(Vec<String>),
    /// A tool call finished.
    ToolDone(CallRecord),
    /// The conversation was compacted.
    Compacted {
        /// Messages before.
        before: usize,
        /// Messages after.
        after: usize,
        /// Spill files deleted because nothing live referenced them.
        deleted: usize,
    },
}

/// Receives [`Progress`].
pub type Observer<'a> = &'a mut (dyn FnMut(Progress) + Send);

/// An agent could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The transcript.
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
}

/// One conversation with a model over the runtime's tools.
pub struct Agent {
    tools: Tools,
    provider: Provider,
    settings: AgentSettings,
    system: String,
    session: Arc<Session>,
    messages: Vec<Message>,
    transcript: Option<Transcript>,
    /// Spill files this session created and has not deleted.
    own_spills: BTreeSet<PathBuf>,
    unmasked_recorded: Vec<String>,
    usage: Usage,
    /// Prompt tokens of the last request and characters appended since.
    last_prompt_tokens: u64,
    chars_since: usize,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.provider)
            .field("messages", &self.messages.len())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// A new conversation; `approval` answers the tools' `ask` rules (a terminal's user, or
    /// [`Approval::Nobody`] where nobody watches: then those calls do not run). The session
    /// (what `read_file` saw, unmasked tools) is [`Agent::session`]; it has no MCP client
    /// and no profile, so no client-side cut applies.
    pub fn new(
        tools: Tools,
        provider: Provider,
        settings: AgentSettings,
        approval: Approval,
    ) -> Self {
        let system = settings.system_prompt.clone().unwrap_or_else(|| {
            DEFAULT_SYSTEM_PROMPT.replace("{root}", &tools.root.display().to_string())
        });
        Self {
            tools,
            provider,
            settings,
            system,
            session: {
                let session = Session::new(SessionInit {
                    approval,
                    profile: None,
                    client: None,
                    identity: None,
                    rate_key: None,
                });
                // The audit log's client: toolgate's own agent loop.
                session.name_client("toolgate agent");
                session
            },
            messages: Vec::new(),
            transcript: None,
            own_spills: BTreeSet::new(),
            unmasked_recorded: Vec::new(),
            usage: Usage::default(),
            last_prompt_tokens: 0,
            chars_since: 0,
        }
    }

    /// Saves the conversation as a new transcript in `dir`.
    pub fn record_to(&mut self, dir: &Path) -> Result<(), AgentError> {
        self.transcript = Some(Transcript::create(
            dir,
            self.provider.name(),
            self.provider.model(),
        )?);
        Ok(())
    }

    /// Continues the session `id` (or `last`) saved in `dir`.
    pub fn resume(&mut self, dir: &Path, id: &str) -> Result<(), AgentError> {
        let (transcript, restored) = Transcript::open(dir, id)?;
        let Restored {
            messages,
            spills,
            unmasked,
            usage,
            ..
        } = restored;
        self.chars_since = messages.iter().map(Message::chars).sum();
        self.messages = messages;
        self.own_spills = spills.into_iter().collect();
        self.session.ext::<Unmasked>().unmask(&unmasked);
        self.unmasked_recorded = unmasked;
        self.usage = usage;
        self.transcript = Some(transcript);
        Ok(())
    }

    /// The session id, when the conversation is recorded.
    pub fn session_id(&self) -> Option<&str> {
        self.transcript.as_ref().map(Transcript::id)
    }

    /// The session, shared by its tool calls.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The provider.
    pub fn provider(&self) -> &Provider {
        &self.provider
    }

    /// Tokens used by the whole session (resumed parts included).
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The system prompt.
    pub fn system(&self) -> &str {
        &self.system
    }

    fn protocol(&self) -> Protocol {
        match self.provider.kind() {
            Kind::OpenAi => Protocol::OpenAi,
            Kind::Anthropic => Protocol::Anthropic,
        }
    }

    /// The tool array of the next request and how many of its tools are the stable part.
    /// Strict providers get the unmasked tools backfilled as one sorted block after it;
    /// the others call found tools through `run_tool` (or by name), so their array never
    /// changes.
    pub fn tool_array(&self) -> (Vec<Value>, usize) {
        let snapshot = self.tools.dispatcher.snapshot();
        let strategy = if self.provider.kind().strict_tool_names() {
            Strategy::Backfill
        } else {
            Strategy::for_protocol(self.protocol(), ExposureMode::Proxy)
        };
        let unmasked = self.session.ext::<Unmasked>().names();
        let exposed = self
            .tools
            .disclosure
            .exposed_with(&snapshot, &unmasked, strategy);
        let stable = exposed.base.len();
        (exposed.render(self.protocol(), &self.tools.render), stable)
    }

    /// The bytes of the stable prefix (system + stable tools) as the provider sends them.
    pub fn stable_prefix_bytes(&self) -> usize {
        let (tools, stable) = self.tool_array();
        self.provider
            .stable_prefix(&Request {
                system: &self.system,
                tools: &tools,
                stable_tools: stable,
                messages: &self.messages,
            })
            .len()
    }

    fn append(&mut self, message: Message, spills: Vec<PathBuf>) {
        self.chars_since += message.chars();
        self.own_spills.extend(spills.iter().cloned());
        self.write(&Record::Message {
            message: message.clone(),
            spills,
        });
        self.messages.push(message);
    }

    fn write(&mut self, record: &Record) {
        if let Some(t) = &mut self.transcript
            && let Err(e) = t.append(record)
        {
            // The conversation goes on; only its record is incomplete.
            tracing::warn!(%e, "could not write the transcript");
        }
    }

    /// Runs one task (a user message) to its end: the model's final answer, the turn
    /// limit, a provider failure or `cancel`. Tools get `cancel` through their
    /// [`CallContext`]; a cancelled turn still leaves a well-formed conversation.
    pub fn run<'a>(
        &'a mut self,
        task: &'a str,
        observer: Observer<'a>,
        cancel: &'a CancellationToken,
    ) -> futures::future::BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let started = Instant::now();
            let mut outcome = Outcome {
                status: Status::Finished,
                turns: 0,
                requests: 0,
                text: String::new(),
                tool_calls: Vec::new(),
                usage: Usage::default(),
                error: None,
                timing: Timing::default(),
            };
            let mut model_time = Duration::ZERO;
            let mut tool_time = Duration::ZERO;
            self.append(Message::user(task), Vec::new());
            loop {
                if outcome.turns >= self.settings.max_turns {
                    outcome.status = Status::MaxTurns;
                    outcome.error = Some(format!(
                        "stopped after {} model requests without a final answer; continue with --resume {} or raise --max-turns",
                        outcome.turns,
                        self.session_id().unwrap_or("ID")
                    ));
                    break;
                }
                self.compact_if_needed(observer, cancel).await;
                let (tools, stable) = self.tool_array();
                self.record_unmasked();
                observer(Progress::Waiting);
                let request_started = Instant::now();
                // One request now, one more per retry the provider reports.
                outcome.requests += 1;
                let requests = &mut outcome.requests;
                let response = {
                    let request = Request {
                        system: &self.system,
                        tools: &tools,
                        stable_tools: stable,
                        messages: &self.messages,
                    };
                    let mut on_event = |event: Event| {
                        observer(match event {
                            Event::Text(t) => Progress::Text(t),
                            Event::ToolCall { name } => Progress::ToolCallStarted(name),
                            Event::Retrying {
                                attempt,
                                wait,
                                reason,
                            } => {
                                *requests += 1;
                                Progress::Retrying {
                                    attempt,
                                    wait,
                                    reason,
                                }
                            }
                        });
                    };
                    self.provider
                        .complete(&request, &mut on_event, cancel)
                        .await
                };
                model_time += request_started.elapsed();
                observer(Progress::AnswerDone);
                let response = match response {
                    Ok(r) => r,
                    Err(ProviderError::Cancelled { .. }) => {
                        // The user stopped the answer: the conversation records that, so the
                        // next message follows an assistant turn in both protocols.
                        self.append(
                            Message::assistant("[the user interrupted this answer]"),
                            Vec::new(),
                        );
                        outcome.status = Status::Cancelled;
                        break;
                    }
                    Err(e) => {
                        // Nothing to append: the next attempt (`--resume`) sends the same
                        // conversation again.
                        outcome.status = Status::ProviderError;
                        outcome.error = Some(e.to_string());
                        break;
                    }
                };
                outcome.turns += 1;
                outcome.usage += response.usage;
                self.usage += response.usage;
                self.last_prompt_tokens =
                    response.usage.input_tokens + response.usage.output_tokens;
                self.chars_since = 0;
                self.write(&Record::Usage {
                    usage: response.usage,
                });
                outcome.text = response.text.clone();
                self.append(response.message(), Vec::new());
                if response.tool_calls.is_empty() {
                    outcome.status = Status::Finished;
                    break;
                }
                let tools_started = Instant::now();
                let (results, records, spills, fatal) =
                    self.dispatch(&response.tool_calls, observer, cancel).await;
                tool_time += tools_started.elapsed();
                outcome.tool_calls.extend(records);
                self.append(Message::Tool { results }, spills);
                if cancel.is_cancelled() {
                    outcome.status = Status::Cancelled;
                    break;
                }
                if let Some(message) = fatal {
                    outcome.status = Status::ToolFailed;
                    outcome.error = Some(message);
                    break;
                }
            }
            let total = started.elapsed();
            outcome.timing = Timing {
                model_ms: model_time.as_millis() as u64,
                tools_ms: tool_time.as_millis() as u64,
                loop_us: total.saturating_sub(model_time + tool_time).as_micros() as u64,
            };
            outcome
        })
    }

    /// Runs one answer's tool calls as one turn: read-only calls side by side, mutating
    /// ones alone and in order (the session's `OrderGate`), then one budget over all the
    /// results, largest spilled first.
    async fn dispatch(
        &mut self,
        calls: &[ToolCall],
        observer: Observer<'_>,
        cancel: &CancellationToken,
    ) -> (
        Vec<ToolResult>,
        Vec<CallRecord>,
        Vec<PathBuf>,
        Option<String>,
    ) {
        observer(Progress::ToolsRunning(
            calls.iter().map(|c| c.name.clone()).collect(),
        ));
        let ctx = CallContext {
            cancel: cancel.child_token(),
            ..CallContext::new(Arc::clone(&self.session))
        };
        let batch: Vec<Call> = calls
            .iter()
            .map(|c| Call {
                name: c.name.clone(),
                args: RawArgs::Text(c.arguments.clone()),
            })
            .collect();
        let outputs = self.tools.dispatcher.call_batch_timed(batch, &ctx).await;
        let mut results = Vec::with_capacity(calls.len());
        let mut records = Vec::with_capacity(calls.len());
        let mut spills = Vec::new();
        let mut fatal = None;
        for (call, (output, took)) in calls.iter().zip(outputs) {
            let content = model_text(&output);
            let record = CallRecord {
                name: call.name.clone(),
                arguments: serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.clone())),
                is_error: output.is_error,
                spilled: !output.spills.is_empty(),
                result_chars: content.chars().count(),
                duration_ms: took.as_millis() as u64,
            };
            observer(Progress::ToolDone(record.clone()));
            if output.fatal && fatal.is_none() {
                fatal = Some(format!("`{}` failed: {}", call.name, output.text.trim()));
            }
            spills.extend(output.spills.iter().map(|s| s.path.clone()));
            records.push(record);
            results.push(ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error: output.is_error,
            });
        }
        (results, records, spills, fatal)
    }

    fn record_unmasked(&mut self) {
        let names = self.session.ext::<Unmasked>().names();
        if names != self.unmasked_recorded {
            self.write(&Record::Unmasked {
                names: names.clone(),
            });
            self.unmasked_recorded = names;
        }
    }

    /// Tokens the next request will carry, as far as known: the last request's count plus
    /// what was appended since, at about 4 characters per token.
    pub fn estimated_prompt_tokens(&self) -> u64 {
        let since = (self.chars_since / 4) as u64;
        if self.last_prompt_tokens == 0 {
            let all: usize = self.messages.iter().map(Message::chars).sum();
            ((all + self.system.len()) / 4) as u64
        } else {
            self.last_prompt_tokens + since
        }
    }

    fn context_tokens(&self) -> u64 {
        self.settings.context_tokens.max(1_000)
    }

    async fn compact_if_needed(&mut self, observer: Observer<'_>, cancel: &CancellationToken) {
        let limit = self.context_tokens() * u64::from(self.settings.compact_percent.min(100)) / 100;
        if self.estimated_prompt_tokens() <= limit {
            return;
        }
        self.compact(observer, cancel).await;
    }

    /// Compacts the conversation now: the newest messages stay word for word, the older
    /// ones become a summary (written by the model, or extracted when that fails), and the
    /// session's spill files that no live message references any more are deleted. Returns
    /// whether anything changed.
    pub fn compact<'a>(
        &'a mut self,
        observer: Observer<'a>,
        cancel: &'a CancellationToken,
    ) -> futures::future::BoxFuture<'a, bool> {
        Box::pin(async move {
            let keep_chars = (self.context_tokens() * u64::from(self.settings.keep_percent.min(90))
                / 100
                * 4) as usize;
            let Some(cut) = compact::cut_point(&self.messages, keep_chars) else {
                return false;
            };
            let before = self.messages.len();
            let summary = compact::summarize(&self.provider, &self.messages[..cut], cancel).await;
            let mut messages = vec![compact::head_message(&self.messages, &summary)];
            messages.extend(self.messages[cut..].iter().cloned());
            let live_text: Vec<&str> = messages.iter().flat_map(Message::texts).collect();
            let unreferenced: Vec<PathBuf> = self
                .own_spills
                .iter()
                .filter(|p| !compact::referenced(p, &live_text))
                .cloned()
                .collect();
            let deleted = match &self.tools.spill {
                Some(store) => store
                    .release(unreferenced.iter().map(PathBuf::as_path))
                    .unwrap_or_else(|e| {
                        tracing::warn!(%e, "could not delete unreferenced spill files");
                        Vec::new()
                    }),
                None => Vec::new(),
            };
            for path in &unreferenced {
                self.own_spills.remove(path);
            }
            self.write(&Record::Compaction {
                messages: messages.clone(),
                deleted: unreferenced,
            });
            self.chars_since = messages.iter().map(Message::chars).sum();
            self.last_prompt_tokens = 0;
            self.messages = messages;
            observer(Progress::Compacted {
                before,
                after: self.messages.len(),
                deleted: deleted.len(),
            });
            true
        })
    }

    /// Ends the session: the session's spill files that no message references are
    /// deleted (the transcript keeps the referenced ones alive for `--resume`).
    pub fn close(&mut self) -> usize {
        let live_text: Vec<&str> = self.messages.iter().flat_map(Message::texts).collect();
        let unreferenced: Vec<PathBuf> = self
            .own_spills
            .iter()
            .filter(|p| !compact::referenced(p, &live_text))
            .cloned()
            .collect();
        let Some(store) = &self.tools.spill else {
            return 0;
        };
        let deleted = store
            .release(unreferenced.iter().map(PathBuf::as_path))
            .unwrap_or_default();
        for path in &unreferenced {
            self.own_spills.remove(path);
        }
        deleted.len()
    }
}

/// The text a model gets for a result: media it cannot receive here is named, not lost
/// silently.
fn model_text(output: &ToolOutput) -> String {
    if output.media.is_empty() {
        return output.text.clone();
    }
    let mut text = output.text.clone();
    for media in &output.media {
        let what = match media {
            toolgate_core::Media::Image { mime, .. } => format!("an image ({mime})"),
            toolgate_core::Media::Blob { uri, mime, .. } => format!("a document ({mime}, {uri})"),
            toolgate_core::Media::Audio { mime, .. } => format!("audio ({mime})"),
            toolgate_core::Media::Resource {
                uri, text: body, ..
            } => {
                text.push_str(&format!("\n[resource {uri}]\n{body}"));
                continue;
            }
            toolgate_core::Media::ResourceLink { uri, .. } => format!("a link to {uri}"),
        };
        text.push_str(&format!(
            "\n[the result also held {what}, which this agent cannot pass to the model]"
        ));
    }
    text
}
