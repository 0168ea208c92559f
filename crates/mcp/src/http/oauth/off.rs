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
