//! The mounted servers' resources as one set: listed in config order, a URI read from the
//! first server that lists it (else the first whose template it fits), reads fitted to the
//! output budget for MCP clients, and the URIs more than one server lists.

use std::collections::HashMap;
use std::sync::Arc;

use toolgate_core::Decision;

use super::{ForwardError, Gateway, Inner, SaveBlob, fit_resource_contents, save_large_blobs};
use crate::sync::lock;

/// A resource URI that more than one mounted server lists ([`Gateway::resource_collisions`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ResourceCollision {
    /// The URI.
    pub uri: String,
    /// The server reads of it go to: the first in config order that lists it.
    pub read_from: String,
    /// The other servers that list it, in config order; their copy is never read.
    pub also_listed_by: Vec<String>,
}

impl Gateway {
    /// Every mounted server's resources, URIs as the servers gave them, in config order
    /// (a URI two servers list is read from the first).
    ///
    /// A server whose resources a permission rule denies (`mcp__<server>__*`, or the
    /// action `mcp.read`) is left out, here and in [`Gateway::resource_templates`].
    pub fn resources(&self) -> Vec<rmcp::model::Resource> {
        self.resources_for(None)
    }

    /// [`Gateway::resources`] as `caller` may read them (rules with a condition on the
    /// caller).
    pub fn resources_for(
        &self,
        caller: Option<&toolgate_core::Identity>,
    ) -> Vec<rmcp::model::Resource> {
        let mut seen = std::collections::HashSet::new();
        self.inner
            .readable_by(caller)
            .into_iter()
            .flat_map(|m| m.resources().resources.clone())
            .filter(|r| seen.insert(r.uri.clone()))
            .collect()
    }

    /// Whether a mounted server the rules let through lists `uri` or has a template it
    /// fits (what a read of it would be routed by).
    pub fn offers_uri(&self, uri: &str) -> bool {
        Inner::owner(&self.inner.readable(), uri).is_some()
    }

    /// Every mounted server's resource templates, in config order.
    pub fn resource_templates(&self) -> Vec<rmcp::model::ResourceTemplate> {
        self.resource_templates_for(None)
    }

    /// [`Gateway::resource_templates`] as `caller` may read them.
    pub fn resource_templates_for(
        &self,
        caller: Option<&toolgate_core::Identity>,
    ) -> Vec<rmcp::model::ResourceTemplate> {
        self.inner
            .readable_by(caller)
            .into_iter()
            .flat_map(|m| m.resources().templates.clone())
            .collect()
    }

    /// The contents at `uri`, from the server that listed it (else the first whose template
    /// it fits). `Err` says what went wrong, for the client.
    ///
    /// A server that asks for input to read it asks `caller`'s client, as for prompts.
    pub async fn read_resource(
        &self,
        uri: &str,
        caller: Option<Arc<dyn toolgate_core::ClientLink>>,
    ) -> Result<Vec<rmcp::model::ResourceContents>, ForwardError> {
        self.read_resource_as(uri, caller, None).await
    }

    /// [`Gateway::read_resource`] for the caller `identity`, as rules with a condition on
    /// the caller decide.
    pub fn read_resource_as<'a>(
        &'a self,
        uri: &'a str,
        caller: Option<Arc<dyn toolgate_core::ClientLink>>,
        identity: Option<&'a toolgate_core::Identity>,
    ) -> futures::future::BoxFuture<'a, Result<Vec<rmcp::model::ResourceContents>, ForwardError>>
    {
        Box::pin(async move {
            // A URI no server is known to offer yet waits for the servers still starting (no
            // catalog yet), as a tool call does.
            let mut owner = Inner::owner(&self.inner.readable_by(identity), uri);
            if owner.is_none() && Inner::owner(&self.inner.mounted(), uri).is_none() {
                self.start_all().await;
                owner = Inner::owner(&self.inner.readable_by(identity), uri);
            }
            let Some(mount) = owner else {
                if let Some(hidden) = Inner::owner(&self.inner.mounted(), uri) {
                    let verdict = self.inner.resource_verdict(&hidden, identity);
                    let what = format!("reading `{uri}` from MCP server `{}`", hidden.spec.name);
                    return Err(ForwardError::Refused(super::refusal(&what, &verdict)));
                }
                return Err(ForwardError::UnknownResource {
                    uri: uri.to_owned(),
                });
            };
            let verdict = self.inner.resource_verdict(&mount, identity);
            if verdict.decision != Decision::Allow {
                let what = format!("reading `{uri}` from MCP server `{}`", mount.spec.name);
                return Err(ForwardError::Refused(super::refusal(&what, &verdict)));
            }
            mount
                .read_resource(uri, caller)
                .await
                .map_err(ForwardError::upstream)
        })
    }

    /// Fits the prompts and resource reads served over MCP ([`Gateway::get_prompt_for`],
    /// [`Gateway::read_resource_for`]) to `budget`, as the dispatcher fits tool results.
    pub fn use_budget(&self, budget: Arc<dyn toolgate_core::ResultBudget>) {
        *lock(&self.inner.budget) = Some(budget);
    }

    /// [`Gateway::read_resource`], each text fitted to the budget ([`Gateway::use_budget`])
    /// for a client with `limits`: a huge text comes back as an excerpt and a pointer to the
    /// spill file holding all of it, naming `read_file` as the client does (`names`).
    pub async fn read_resource_for(
        &self,
        uri: &str,
        caller: Option<Arc<dyn toolgate_core::ClientLink>>,
        limits: toolgate_core::ClientLimits,
        names: &toolgate_core::ToolNames,
        identity: Option<&toolgate_core::Identity>,
    ) -> Result<Vec<rmcp::model::ResourceContents>, ForwardError> {
        let mut contents = self.read_resource_as(uri, caller, identity).await?;
        if let Some(budget) = lock(&self.inner.budget).clone() {
            fit_resource_contents(&mut contents, budget.as_ref(), limits, names);
        }
        if let Some(save) = lock(&self.inner.save_blob).clone() {
            save_large_blobs(&mut contents, &save);
        }
        Ok(contents)
    }

    /// Saves binary resource contents too large to send ([`super::MAX_BLOB_CHARS`]) with `save`
    /// (the spill store), so [`Gateway::read_resource_for`] names the file instead.
    pub fn use_blob_spill(&self, save: SaveBlob) {
        *lock(&self.inner.save_blob) = Some(save);
    }

    /// The resource URIs more than one mounted server lists, each with the servers in
    /// config order: reads go to the first.
    pub fn resource_collisions(&self) -> Vec<ResourceCollision> {
        let mut listed: Vec<(String, Vec<String>)> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        for mount in self.inner.mounted() {
            let offered = mount.resources();
            let mut own = std::collections::HashSet::new();
            for resource in &offered.resources {
                if !own.insert(resource.uri.as_str()) {
                    continue;
                }
                let server = mount.spec.name.clone();
                match at.get(&resource.uri) {
                    Some(&i) => listed[i].1.push(server),
                    None => {
                        at.insert(resource.uri.clone(), listed.len());
                        listed.push((resource.uri.clone(), vec![server]));
                    }
                }
            }
        }
        listed
            .into_iter()
            .filter(|(_, servers)| servers.len() > 1)
            .map(|(uri, mut servers)| ResourceCollision {
                uri,
                read_from: servers.remove(0),
                also_listed_by: servers,
            })
            .collect()
    }

    /// A receiver that changes whenever a server's resources or templates do.
    pub fn resource_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.resource_changes.subscribe()
    }
}

/// One sentence per group of [`ResourceCollision`]s that the same servers share, for
/// humans: "resource `test://a` is listed by `a` and `b`; reads go to `a`, the first in
/// config order".
pub fn describe_collisions(collisions: &[ResourceCollision]) -> Vec<String> {
    const SHOWN: usize = 3;
    let mut groups: Vec<(&ResourceCollision, Vec<&str>)> = Vec::new();
    for c in collisions {
        let same = |(g, _): &&mut (&ResourceCollision, Vec<&str>)| {
            g.read_from == c.read_from && g.also_listed_by == c.also_listed_by
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some((_, uris)) => uris.push(&c.uri),
            None => groups.push((c, vec![&c.uri])),
        }
    }
    groups
        .into_iter()
        .map(|(c, uris)| {
            let mut servers: Vec<String> = std::iter::once(&c.read_from)
                .chain(&c.also_listed_by)
                .map(|s| format!("`{s}`"))
                .collect();
            let last = servers.pop().unwrap_or_default();
            let servers = format!("{} and {last}", servers.join(", "));
            let what = match uris.as_slice() {
                [uri] => format!("resource `{uri}` is"),
                many => {
                    let mut shown: Vec<String> =
                        many.iter().take(SHOWN).map(|u| format!("`{u}`")).collect();
                    if many.len() > SHOWN {
                        shown.push(format!("{} more", many.len() - SHOWN));
                    }
                    format!("{} resource URIs ({}) are", many.len(), shown.join(", "))
                }
            };
            format!(
                "{what} listed by {servers}; reads go to `{}`, the first in config order",
                c.read_from
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{ResourceCollision, describe_collisions};

    #[test]
    fn collisions_are_told_once_per_group_of_servers() {
        let c = |uri: &str, first: &str, others: &[&str]| ResourceCollision {
            uri: uri.to_owned(),
            read_from: first.to_owned(),
            also_listed_by: others.iter().map(|s| (*s).to_owned()).collect(),
        };
        let all = [
            c("a://1", "one", &["two"]),
            c("a://2", "one", &["two"]),
            c("b://x", "two", &["three", "four"]),
            c("a://3", "one", &["two"]),
            c("a://4", "one", &["two"]),
        ];
        assert_eq!(
            describe_collisions(&all),
            [
                "4 resource URIs (`a://1`, `a://2`, `a://3`, 1 more) are listed by `one` and `two`; reads go to `one`, the first in config order",
                "resource `b://x` is listed by `two`, `three` and `four`; reads go to `two`, the first in config order",
            ]
        );
    }
}
