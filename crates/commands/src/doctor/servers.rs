//! `toolgate doctor`: the mounted MCP servers and the catalog cache.

use toolgate_gateway::{CatalogCache, MAX_NAME_LEN, ServerState, Trust};
use toolgate_runtime::Runtime;

use super::{Report, bytes, unwritable};

/// Each configured server: where it came from, trust, login, start, tools and their names.
pub(super) async fn check(report: &mut Report, runtime: &Runtime, start: bool) {
    report.section("mcp servers");
    let gateway = &runtime.gateway;
    for problem in gateway.problems() {
        report.problem(&format!(
            "{problem}; fix that file (its other servers are skipped until then)"
        ));
    }
    if gateway.servers().next().is_none() {
        report.ok(
            "none configured (add [mcp_servers.NAME] to .toolgate/config.toml or a .mcp.json to mount one)",
        );
        return;
    }
    if start {
        gateway.start_all().await;
    }
    let cache = runtime
        .config
        .mcp
        .catalog_cache
        .then(CatalogCache::user_dir)
        .flatten()
        .map(CatalogCache::new);
    for status in gateway.status() {
        let Some(spec) = gateway.servers().find(|s| s.name == status.name) else {
            continue;
        };
        let name = &status.name;
        let origin = format!("{}, {}", trust_word(spec.trust), status.source);
        if let Some(auth) = status.auth.as_ref().and_then(crate::login::describe_status) {
            report.ok(&format!("{name}: {auth}"));
        }
        match &status.state {
            ServerState::Disabled => {
                report.ok(&format!("{name}: disabled (enabled = false) ({origin})"));
            }
            ServerState::Untrusted { reason, command } => report.problem(&format!(
                "{name}: not started: {reason}; check its command and the files it runs ({}), then run `{command}` ({origin})",
                status.transport
            )),
            ServerState::Failed(reason) => report.problem(&format!(
                "{name}: failed: {reason}; check its command or url ({}) and run `toolgate mcp tools {name}` to see it start ({origin})",
                status.transport
            )),
            ServerState::NameClash(reason) => {
                report.problem(&format!("{name}: not mounted: {reason} ({origin})"))
            }
            ServerState::NeedsLogin(reason) => report.problem(&format!(
                "{name}: needs login ({reason}); run `toolgate mcp login {name}` ({origin})"
            )),
            ServerState::Ready => report.ok(&format!(
                "{name}: ready, {} tool{}, started in {} ms ({origin})",
                status.tools,
                if status.tools == 1 { "" } else { "s" },
                status.startup.map_or(0, |d| d.as_millis())
            )),
            _ if !start => report.ok(&format!(
                "{name}: not started (--no-start), {} ({origin})",
                status.transport
            )),
            _ => report.warn(&format!(
                "{name}: still starting after its startup timeout; raise startup_timeout_sec in [mcp_servers.{name}] if it is slow to start ({origin})"
            )),
        }
        for note in &status.notes {
            report.warn(&format!(
                "{name}: {note}; ask the server's author to fix the tool, or hide it with disabled_tools in [mcp_servers.{name}]"
            ));
        }
        if let Some(cached) = cache.as_ref().and_then(|c| c.load(&spec)) {
            for tool in &cached.tools {
                let original: &str = &tool.name;
                if original.chars().count() > MAX_NAME_LEN {
                    report.warn(&format!(
                        "{name}: tool `{original}` has a {}-character name, over the {MAX_NAME_LEN} model APIs accept; it is offered under a shortened name with a hash — hide it with disabled_tools or ask the server's author for a shorter name",
                        original.chars().count()
                    ));
                }
                if tool.input_schema.get("type").and_then(|t| t.as_str()) != Some("object") {
                    report.warn(&format!(
                        "{name}: tool `{original}`'s input schema is not `\"type\": \"object\"`, which some clients refuse; ask the server's author to fix it"
                    ));
                }
            }
        }
    }
    collisions(report, runtime);
}

/// Resource URIs that more than one server lists: only the first server's is ever read.
fn collisions(report: &mut Report, runtime: &Runtime) {
    let collisions = runtime.gateway.resource_collisions();
    for line in toolgate_gateway::describe_collisions(&collisions) {
        report.warn(&format!(
            "{line}; if the servers are copies of one, disable one (enabled = false), else ask a server's author for distinct URIs"
        ));
    }
}

fn trust_word(trust: Trust) -> &'static str {
    match trust {
        Trust::User => "user config, needs no trust",
        Trust::Trusted => "project file, trusted",
        _ => "project file, not trusted",
    }
}

/// The catalog cache: where, how many entries, how much disk.
pub(super) fn catalog(report: &mut Report, runtime: &Runtime) {
    report.section("catalog cache");
    if !runtime.config.mcp.catalog_cache {
        report.ok(
            "off (mcp.catalog_cache = false): each session waits for its servers' first tool lists",
        );
        return;
    }
    let Some(dir) = CatalogCache::user_dir() else {
        report.warn(
            "no cache folder: neither XDG_CACHE_HOME nor HOME is an absolute path; set HOME so the first tools/list of a session is complete at once",
        );
        return;
    };
    let (mut entries, mut total) = (0usize, 0u64);
    if let Ok(read) = fs_err::read_dir(&dir) {
        for entry in read.flatten() {
            if let Ok(meta) = entry.metadata()
                && meta.is_file()
            {
                entries += 1;
                total += meta.len();
            }
        }
    }
    report.ok(&format!(
        "{}: {entries} entr{}, {}",
        dir.display(),
        if entries == 1 { "y" } else { "ies" },
        bytes(total)
    ));
    if let Some(problem) = unwritable(&dir) {
        report.warn(&format!(
            "{}: {problem}; make it writable, or set mcp.catalog_cache = false",
            dir.display()
        ));
    }
}
