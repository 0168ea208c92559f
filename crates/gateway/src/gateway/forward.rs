//! What the gateway forwards beside tools, prompts and reads: completion of prompt and
//! template arguments, subscriptions to resources' updates, and the client's roots changing.

use std::sync::Arc;

use rmcp::model::{ArgumentInfo, CompletionContext, CompletionInfo, Reference};

use toolgate_core::Decision;

use super::{ForwardError, Gateway};
use crate::mount::{Mount, Upstream};

/// One subscriber's interest in a mounted server's resource ([`Gateway::follow`]): the
/// server is subscribed while any is held, and unsubscribed when the last is dropped.
pub struct Followed {
    mount: Arc<Mount>,
    uri: String,
}

impl std::fmt::Debug for Followed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Followed")
            .field("server", &self.mount.spec.name)
            .field("uri", &self.uri)
            .finish()
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        self.mount.unfollow(&self.uri, Upstream::Unsubscribe);
    }
}

impl Gateway {
    /// Suggestions for `argument` of prompt `name` (as [`Gateway::prompts`] lists it), from
    /// its server with the prompt's own name; none when the server offers no completion.
    pub fn complete_prompt<'a>(
        &'a self,
        name: &'a str,
        argument: &'a ArgumentInfo,
        context: Option<&'a CompletionContext>,
    ) -> futures::future::BoxFuture<'a, Result<CompletionInfo, ForwardError>> {
        Box::pin(async move {
            // A prompt the rules keep from the client is not completed either.
            let owner = self.inner.prompt_owner(name);
            if let Some((mount, prompt)) =
                owner.filter(|_| self.inner.prompt_verdict(name, None).decision != Decision::Deny)
            {
                return mount
                    .complete(Reference::for_prompt(prompt.name), argument, context)
                    .await
                    .map_err(ForwardError::upstream);
            }
            Err(ForwardError::UnknownPrompt {
                name: name.to_owned(),
            })
        })
    }

    /// Suggestions for `argument` of the resource template `template` (its URI template as
    /// listed), from the first server that lists it; none when that server offers no
    /// completion.
    pub fn complete_resource<'a>(
        &'a self,
        template: &'a str,
        argument: &'a ArgumentInfo,
        context: Option<&'a CompletionContext>,
    ) -> futures::future::BoxFuture<'a, Result<CompletionInfo, ForwardError>> {
        Box::pin(async move {
            // A server whose resources the rules keep from the client lists no templates.
            let owner = self.inner.readable().into_iter().find(|m| {
                m.resources()
                    .templates
                    .iter()
                    .any(|t| t.uri_template == template)
            });
            match owner {
                Some(mount) => mount
                    .complete(Reference::for_resource(template), argument, context)
                    .await
                    .map_err(ForwardError::upstream),
                None => Err(ForwardError::UnknownResource {
                    uri: template.to_owned(),
                }),
            }
        })
    }

    /// Follows `uri`'s updates on the server that offers it (as [`Gateway::read_resource`]
    /// routes it): the server is subscribed once however many follow, until the last
    /// [`Followed`] is dropped. Its updates arrive on [`Gateway::resource_updates`].
    pub fn follow<'a>(
        &'a self,
        uri: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Followed, ForwardError>> {
        Box::pin(async move {
            let mounted = self.inner.mounted();
            let best = mounted
                .iter()
                .filter_map(|m| m.serves(uri).map(|fit| (fit, m)))
                .max_by_key(|(fit, _)| *fit);
            let Some((_, mount)) = best else {
                return Err(ForwardError::UnknownResource {
                    uri: uri.to_owned(),
                });
            };
            mount.follow(uri).await.map_err(ForwardError::upstream)?;
            Ok(Followed {
                mount: Arc::clone(mount),
                uri: uri.to_owned(),
            })
        })
    }

    /// The URIs of every server's `notifications/resources/updated`, as they arrive.
    pub fn resource_updates(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.inner.updates.subscribe()
    }

    /// Tells every ready server that the client's roots changed
    /// (`notifications/roots/list_changed`), so it asks again.
    pub fn client_roots_changed(&self) {
        for mount in self.inner.mounts().iter() {
            mount.roots_changed();
        }
    }
}
