//! A build without JWT checks: no [`OAuthSettings`] can be made, so no [`Validator`] exists.

use toolgate_core::Identity;

use super::{OAuthSettings, Rejection};

/// Checks access tokens: left out of this build (the `jwt` feature, part of `team`).
pub(crate) enum Validator {}

impl Validator {
    pub(crate) fn new(settings: OAuthSettings) -> Self {
        match settings.jwt {}
    }

    pub(crate) fn settings(&self) -> &OAuthSettings {
        match *self {}
    }

    pub(crate) async fn validate(&self, _token: &str) -> Result<Identity, Rejection> {
        match *self {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn oauth_settings_are_refused_with_the_feature_that_has_them() {
        let refused = OAuthSettings::new("https://login.example.com", "toolgate", Vec::new())
            .unwrap_err()
            .to_string();
        assert!(refused.contains("--features team"), "{refused}");
    }

    use super::OAuthSettings;
}
