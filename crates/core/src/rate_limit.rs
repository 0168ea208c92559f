//! Rate limits per caller and per tool (`[rate_limits]`): token buckets (`governor`), one
//! per caller — the session's authenticated identity, else the transport's key for the
//! caller (the static token's digest, the client's address), else the session itself — for
//! all tools together and for each tool pattern that has its own limit. A call over a limit
//! is refused before it runs, with a result that says when to retry.

use std::num::NonZeroU32;
use std::time::Duration;

use globset::{Glob, GlobMatcher};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::session::Session;

/// Callers remembered by one bucket set before idle ones (full again) are forgotten.
const PRUNE_ABOVE: usize = 10_000;

/// One limit: its bucket per caller, and what it applies to.
struct Limit {
    /// `[rate_limits] per_minute`, or the tool pattern as written.
    rule: String,
    /// `None` for the limit on all tools.
    tools: Option<GlobMatcher>,
    per_minute: NonZeroU32,
    buckets: DefaultKeyedRateLimiter<String>,
}

/// The configured limits; checked for every call that passed the permission stage.
pub struct RateLimits {
    limits: Vec<Limit>,
    clock: DefaultClock,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.limits.iter().map(|l| (&l.rule, l.per_minute)))
            .finish()
    }
}

/// A `[rate_limits]` entry that cannot be used; the text says what to write instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RateLimitError {
    /// A tool pattern allowed no call at all.
    #[error(
        "[rate_limits.tools] \"{pattern}\" = 0 allows no call; deny the tool in [permissions] instead, or give it a number of calls per minute"
    )]
    Zero {
        /// The pattern as configured.
        pattern: String,
    },
    /// A tool pattern that is not a glob.
    #[error("[rate_limits.tools] \"{pattern}\" is not a tool name or glob: {source}")]
    Pattern {
        /// The pattern as configured.
        pattern: String,
        /// Why it does not parse.
        #[source]
        source: globset::Error,
    },
}

/// Why a call was refused: the limit it hit and when the caller may try again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limited {
    /// The limit as configured: `[rate_limits] per_minute` or `[rate_limits.tools] "PATTERN"`.
    pub rule: String,
    /// Calls per minute it allows each caller.
    pub per_minute: u32,
    /// How long until one more call fits.
    pub retry_after: Duration,
}

impl RateLimits {
    /// `per_minute` calls per caller for all tools together (0 = no such limit), up to
    /// `burst` at once (0 = as many as `per_minute`), and per tool pattern (`run_shell`,
    /// `mcp__github__*`) its own calls per minute per caller.
    pub fn new<'a>(
        per_minute: u32,
        burst: u32,
        tools: impl IntoIterator<Item = (&'a String, &'a u32)>,
    ) -> Result<Self, RateLimitError> {
        let quota = |rate: NonZeroU32| {
            let burst = NonZeroU32::new(burst).unwrap_or(rate);
            Quota::per_minute(rate).allow_burst(burst)
        };
        let mut limits = Vec::new();
        if let Some(rate) = NonZeroU32::new(per_minute) {
            limits.push(Limit {
                rule: "[rate_limits] per_minute".to_owned(),
                tools: None,
                per_minute: rate,
                buckets: DefaultKeyedRateLimiter::keyed(quota(rate)),
            });
        }
        for (pattern, &rate) in tools {
            let Some(rate) = NonZeroU32::new(rate) else {
                return Err(RateLimitError::Zero {
                    pattern: pattern.clone(),
                });
            };
            let matcher = Glob::new(pattern)
                .map_err(|source| RateLimitError::Pattern {
                    pattern: pattern.clone(),
                    source,
                })?
                .compile_matcher();
            limits.push(Limit {
                rule: format!("[rate_limits.tools] \"{pattern}\""),
                tools: Some(matcher),
                per_minute: rate,
                buckets: DefaultKeyedRateLimiter::keyed(quota(rate)),
            });
        }
        Ok(Self {
            limits,
            clock: DefaultClock::default(),
        })
    }

    /// Whether no limit is configured.
    pub fn is_empty(&self) -> bool {
        self.limits.is_empty()
    }

    /// Takes one call of `tool` by `caller` from every limit that applies; the first limit
    /// with no call left refuses it (the tool's own limits are checked before the one on all
    /// tools, so a refused call costs the caller nothing of the other tools' share).
    pub fn check(&self, caller: &str, tool: &str) -> Result<(), Limited> {
        let applying = self
            .limits
            .iter()
            .filter(|l| l.tools.as_ref().is_some_and(|m| m.is_match(tool)))
            .chain(self.limits.iter().filter(|l| l.tools.is_none()));
        for limit in applying {
            if limit.buckets.len() > PRUNE_ABOVE {
                limit.buckets.retain_recent();
            }
            if let Err(not_until) = limit.buckets.check_key(&caller.to_owned()) {
                return Err(Limited {
                    rule: limit.rule.clone(),
                    per_minute: limit.per_minute.get(),
                    retry_after: not_until.wait_time_from(self.clock.now()),
                });
            }
        }
        Ok(())
    }
}

/// Whom a session's calls count against: its authenticated identity, else the transport's
/// key for the caller (every session of that caller shares the buckets: a fresh session or
/// a stateless request gets no fresh budget), else the session itself.
pub fn caller_of(session: &Session) -> String {
    match (session.identity(), session.rate_key()) {
        (Some(identity), _) => format!(
            "identity\u{0}{}\u{0}{}",
            identity.issuer.as_deref().unwrap_or_default(),
            identity.subject
        ),
        (None, Some(key)) => format!("key\u{0}{key}"),
        (None, None) => format!("session\u{0}{}", session.id()),
    }
}

/// The result a refused call gets: which limit, and when to retry.
pub fn refusal(tool: &str, limited: &Limited) -> String {
    // Whole seconds, rounded up: "retry after 0 s" would invite an immediate retry.
    let secs = limited.retry_after.as_millis().div_ceil(1000).max(1);
    format!(
        "error: rate limit: `{tool}` was not run — {rule} allows {n} calls a minute per caller; retry after {secs} s, or do something else meanwhile",
        rule = limited.rule,
        n = limited.per_minute,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn limits(per_minute: u32, burst: u32, tools: &[(&str, u32)]) -> RateLimits {
        let tools: BTreeMap<String, u32> =
            tools.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        RateLimits::new(per_minute, burst, &tools).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_caller_past_its_share_is_refused_with_a_wait_and_others_are_not() {
        let limits = limits(2, 0, &[]);
        assert_eq!(limits.check("ada", "read_file"), Ok(()));
        assert_eq!(limits.check("ada", "grep"), Ok(()));
        let refused = limits.check("ada", "read_file").unwrap_err();
        assert_eq!(refused.rule, "[rate_limits] per_minute");
        assert_eq!(refused.per_minute, 2);
        // One call back every 30 s at 2 a minute.
        assert!(
            refused.retry_after > Duration::ZERO && refused.retry_after <= Duration::from_secs(30)
        );
        assert_eq!(limits.check("bob", "read_file"), Ok(()));
        assert!(refusal("read_file", &refused).contains("retry after"));
    }

    #[test]
    fn a_tool_pattern_limits_only_its_tools_and_spares_the_overall_share() {
        let limits = limits(3, 0, &[("mcp__github__*", 1)]);
        assert_eq!(limits.check("ada", "mcp__github__search"), Ok(()));
        let refused = limits.check("ada", "mcp__github__issues").unwrap_err();
        assert_eq!(refused.rule, "[rate_limits.tools] \"mcp__github__*\"");
        // The refused call took nothing of the overall 3: two more of other tools fit.
        assert_eq!(limits.check("ada", "read_file"), Ok(()));
        assert_eq!(limits.check("ada", "grep"), Ok(()));
        assert!(limits.check("ada", "grep").is_err());
    }

    #[test]
    fn sessions_with_one_rate_key_are_one_caller_and_keyless_sessions_are_their_own() {
        use crate::session::{Approval, SessionInit};
        let keyed = |key: Option<&str>| {
            caller_of(&Session::new(SessionInit {
                approval: Approval::Nobody,
                profile: None,
                client: None,
                identity: None,
                rate_key: key.map(str::to_owned),
            }))
        };
        assert_eq!(keyed(Some("token:ab")), keyed(Some("token:ab")));
        assert_ne!(keyed(Some("token:ab")), keyed(Some("address:127.0.0.1")));
        assert_ne!(keyed(None), keyed(None));
    }

    #[test]
    fn burst_caps_calls_at_once_below_the_rate() {
        let limits = limits(600, 2, &[]);
        assert_eq!(limits.check("ada", "grep"), Ok(()));
        assert_eq!(limits.check("ada", "grep"), Ok(()));
        assert!(limits.check("ada", "grep").is_err());
    }

    #[test]
    fn bad_patterns_and_zero_limits_are_refused_with_what_to_do() {
        let tools: BTreeMap<String, u32> = [("run_shell".to_owned(), 0)].into();
        let e = RateLimits::new(0, 0, &tools).unwrap_err().to_string();
        assert!(e.contains("deny the tool in [permissions]"), "{e}");
        let tools: BTreeMap<String, u32> = [("mcp__[".to_owned(), 5)].into();
        let e = RateLimits::new(0, 0, &tools).unwrap_err().to_string();
        assert!(e.contains("not a tool name or glob"), "{e}");
        assert!(limits(0, 0, &[]).is_empty());
    }
}
