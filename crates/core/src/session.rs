//! The session: everything a call learns about who it runs for, as one typed value.
//!
//! A session is an MCP connection, a `toolgate call`, an agent conversation. Every front end
//! builds its [`Session`] through [`Session::new`] from a [`SessionInit`] whose fields are
//! all required, so a front end that forgets one (who approves `ask` rules, the way back to
//! the client, the caller's identity) does not compile. What the session holds:
//!
//! - the arrival-order gate of its calls ([`OrderGate`]) and its end ([`Session::end`],
//!   which cancels every call still running);
//! - who answers `ask` rules ([`Approval`]; [`Approval::Nobody`] turns `ask` into a refusal
//!   that tells the model to ask the user to change the rule);
//! - the client's profile (what the client in front does to results), set at construction
//!   or once the client names itself;
//! - the client's link ([`ClientLink`]: what it can be asked — elicitation, sampling,
//!   roots, by protocol revision — and the handle to ask it);
//! - the caller's identity ([`Identity`]; `None` on stdio and the command line);
//! - an id of its own and the client's name, for the audit log;
//! - [`Extensions`], keyed by type, for tool-private state only (what `read_file` saw of
//!   each file, the job table, unmasked tools).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::approver::Approver;
use crate::client::ClientLink;
use crate::identity::Identity;
use crate::profile::{ClientLimits, ClientProfile, ToolNames};
use crate::schedule::OrderGate;

/// Who answers a session's `ask` rules.
#[derive(Clone)]
pub enum Approval {
    /// Nobody can be asked (an MCP server, a script, a test): a call an `ask` rule holds
    /// does not run, and its result tells the model to ask the user to move the rule to
    /// `allow`. A deliberate choice, not a fallback.
    Nobody,
    /// This approver answers (the agent CLI's user on a terminal).
    By(Arc<dyn Approver>),
}

impl std::fmt::Debug for Approval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Nobody => "Nobody",
            Self::By(_) => "By(..)",
        })
    }
}

/// Everything a front end must decide to open a session. No field has a default.
pub struct SessionInit {
    /// Who answers `ask` rules.
    pub approval: Approval,
    /// The client's profile when the front end knows it already (`toolgate call --client`);
    /// `None` when the client names itself later (MCP `initialize`) or there is no client
    /// that cuts results (the agent loop).
    pub profile: Option<ClientProfile>,
    /// The way back to the client, for requests made while a call runs; `None` where there
    /// is nobody to ask (the command line, the agent loop).
    pub client: Option<Arc<dyn ClientLink>>,
    /// The caller, as the transport authenticated them; `None` on stdio and the command line.
    pub identity: Option<Identity>,
    /// Whom the session's calls count against for `[rate_limits]` when it has no identity,
    /// as the transport knows them (a digest of the static token, the client's address), so
    /// that every session of one caller shares one budget; never a secret. `None`: the
    /// session alone.
    pub rate_key: Option<String>,
}

/// One session. Built by [`Session::new`]; shared by its calls through
/// [`crate::CallContext::session`].
pub struct Session {
    id: String,
    client_name: OnceLock<String>,
    order: Arc<OrderGate>,
    end: CancellationToken,
    approval: Approval,
    profile: OnceLock<Arc<ClientProfile>>,
    client: Option<Arc<dyn ClientLink>>,
    identity: Option<Identity>,
    rate_key: Option<String>,
    extensions: Extensions,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("approval", &self.approval)
            .field("profile", &self.profile.get().map(|p| p.name.clone()))
            .field("client", &self.client.is_some())
            .field("identity", &self.identity)
            .field("ended", &self.end.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Opens a session.
    pub fn new(init: SessionInit) -> Arc<Self> {
        let SessionInit {
            approval,
            profile,
            client,
            identity,
            rate_key,
        } = init;
        let slot = OnceLock::new();
        if let Some(profile) = profile {
            let _ = slot.set(Arc::new(profile));
        }
        Arc::new(Self {
            id: new_session_id(),
            client_name: OnceLock::new(),
            order: Arc::default(),
            end: CancellationToken::new(),
            approval,
            profile: slot,
            client,
            identity,
            rate_key,
            extensions: Extensions::default(),
        })
    }

    /// A session with nobody to ask and no client: what a test, a benchmark or an embedded
    /// one-off call gets. Front ends build theirs with [`Session::new`].
    pub fn unattended() -> Arc<Self> {
        Self::new(SessionInit {
            approval: Approval::Nobody,
            profile: None,
            client: None,
            identity: None,
            rate_key: None,
        })
    }

    /// This session's id: unique among sessions (of every toolgate process, as far as
    /// 64 random bits go), so an audit log's lines can be grouped by session.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Names the client once it says who it is (an MCP `clientInfo.name`, or the front end's
    /// own name: `toolgate call`); the first name stays.
    pub fn name_client(&self, name: &str) {
        let _ = self.client_name.set(name.to_owned());
    }

    /// The client's name, once known.
    pub fn client_name(&self) -> Option<&str> {
        self.client_name.get().map(String::as_str)
    }

    /// The line this session's calls take their places in.
    pub fn order(&self) -> &Arc<OrderGate> {
        &self.order
    }

    /// Cancelled when the session ends; every call's cancellation descends from it.
    pub fn ended(&self) -> &CancellationToken {
        &self.end
    }

    /// Ends the session: every call still running is cancelled (the transport closed).
    pub fn end(&self) {
        self.end.cancel();
    }

    /// Who answers `ask` rules.
    pub fn approval(&self) -> &Approval {
        &self.approval
    }

    /// The client's profile, once known.
    pub fn profile(&self) -> Option<Arc<ClientProfile>> {
        self.profile.get().cloned()
    }

    /// Sets the client's profile when it names itself; the first one stays (a second
    /// `initialize` on the same session changes nothing). Returns whether this one was kept.
    pub fn adopt_profile(&self, profile: ClientProfile) -> bool {
        self.profile.set(Arc::new(profile)).is_ok()
    }

    /// The result-size limits of this session's client: the one accessor every sizing
    /// decision reads (the budget, the paging tools, shell excerpts); none without a profile.
    pub fn limits(&self) -> ClientLimits {
        self.profile()
            .map(|p| ClientLimits::from_profile(&p))
            .unwrap_or_default()
    }

    /// How this session's client names toolgate's tools to its model: result text that tells
    /// the model to call one names it so. Own names without a profile.
    pub fn tool_names(&self) -> ToolNames {
        self.profile()
            .map(|p| ToolNames::from_profile(&p))
            .unwrap_or_default()
    }

    /// The way back to the client, where there is one.
    pub fn client(&self) -> Option<&Arc<dyn ClientLink>> {
        self.client.as_ref()
    }

    /// The caller, as the transport authenticated them.
    pub fn identity(&self) -> Option<&Identity> {
        self.identity.as_ref()
    }

    /// Whom the session's calls count against for rate limits when it has no identity.
    pub fn rate_key(&self) -> Option<&str> {
        self.rate_key.as_deref()
    }

    /// Tool-private state of type `T`, created on first use.
    pub fn ext<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.extensions.get()
    }
}

/// 16 hex digits from a randomly keyed hash of the process, the time and a counter: ids
/// that do not repeat across sessions or processes (not secrets: nothing is keyed by them).
fn new_session_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    format!("{:016x}", hasher.finish())
}

/// Tool-private session state keyed by type — for example what `read_file` last saw of
/// each file. Nothing the dispatcher or a front end needs lives here.
#[derive(Default)]
pub struct Extensions {
    slots: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Extensions {
    /// The value of type `T`, created on first use.
    pub fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = slots
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()) as Arc<dyn Any + Send + Sync>)
            .clone();
        drop(slots);
        match slot.downcast::<T>() {
            Ok(value) => value,
            // Unreachable: the slot for TypeId::of::<T>() always holds a T.
            Err(_) => Arc::new(T::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_profile_stays() {
        let session = Session::unattended();
        assert_eq!(session.limits(), ClientLimits::default());
        assert!(session.adopt_profile(ClientProfile::codex()));
        assert!(!session.adopt_profile(ClientProfile::conservative()));
        assert_eq!(
            session.limits(),
            ClientLimits::from_profile(&ClientProfile::codex())
        );
    }

    #[test]
    fn extensions_are_per_session_and_per_type() {
        #[derive(Default)]
        struct Seen(Mutex<Vec<u32>>);
        let a = Session::unattended();
        let b = Session::unattended();
        a.ext::<Seen>().0.lock().unwrap().push(1);
        assert_eq!(*a.ext::<Seen>().0.lock().unwrap(), vec![1]);
        assert!(b.ext::<Seen>().0.lock().unwrap().is_empty());
    }

    #[test]
    fn sessions_have_distinct_ids_and_keep_the_first_client_name() {
        let a = Session::unattended();
        let b = Session::unattended();
        assert_ne!(a.id(), b.id());
        assert_eq!(a.id().len(), 16);
        assert_eq!(a.client_name(), None);
        a.name_client("claude-code");
        a.name_client("other");
        assert_eq!(a.client_name(), Some("claude-code"));
    }

    #[test]
    fn ending_cancels_what_descends_from_it() {
        let session = Session::unattended();
        let call = session.ended().child_token();
        session.end();
        assert!(call.is_cancelled());
    }
}
