//! Who is calling ([`Identity`]), as the transport authenticated them. The session holds it;
//! the permission rules, the registry's visibility filters and the client link read it, so it
//! sits below all of them.

/// Who is calling, as the transport authenticated them (team mode's door); per-identity
/// rules and per-user logins read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The stable subject (a token's `sub`, an account id).
    pub subject: String,
    /// Who vouched for it (a token's `iss`), when known.
    pub issuer: Option<String>,
    /// The groups the issuer put in the token (`groups`), for per-group rules.
    pub groups: Vec<String>,
    /// The scopes the token grants (`scope`, or `scp` as a list).
    pub scopes: Vec<String>,
}

impl Identity {
    /// Whether `other` is the same caller: same issuer and subject. Groups and scopes may
    /// differ between two tokens of one caller (a refreshed token), the caller does not.
    pub fn same_caller(&self, other: &Identity) -> bool {
        self.issuer == other.issuer && self.subject == other.subject
    }
}
