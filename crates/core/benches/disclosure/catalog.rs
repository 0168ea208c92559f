//! The benchmark's catalog: real tool lists of MCP servers from npm (dumped by
//! `bench/disclosure/dump_tools.mjs`), toolgate's own tools, tools with Chinese descriptions,
//! and deterministic synthetic distractors; plus the query set.

use std::collections::HashSet;

use serde_json::{Map, Value, json};
use toolgate_core::disclosure::IndexEntry;

const MCP_SERVERS: &str = include_str!("../fixtures/mcp_servers.json");
const TOOLGATE_TOOLS: &str = include_str!("../fixtures/toolgate_tools.json");
const ZH_TOOLS: &str = include_str!("../fixtures/zh_tools.json");
const QUERIES: &str = include_str!("../fixtures/queries.tsv");

/// One benchmark query.
#[derive(Debug, Clone)]
pub struct Query {
    /// `en`, `name` or `zh`.
    pub kind: String,
    /// Acceptable answers (full tool names).
    pub expected: Vec<String>,
    /// The query text.
    pub text: String,
}

impl Query {
    /// Whether the query is in the held-out half: fixed once by a stable hash of its text —
    /// FNV-1a, 64 bits, over the UTF-8 bytes; odd hashes are held out — so the split does
    /// not move when queries are added or reordered. Ranking changes are chosen by looking
    /// at the other half (the tuning half) only, and judged on this one.
    pub fn held_out(&self) -> bool {
        fnv1a(self.text.as_bytes()) % 2 == 1
    }
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn entry(name: String, tool: &Value) -> IndexEntry {
    IndexEntry {
        name,
        description: tool["description"].as_str().unwrap_or_default().to_owned(),
        input_schema: tool["inputSchema"].as_object().cloned().unwrap_or_default(),
    }
}

fn server_tools(json: &str, out: &mut Vec<IndexEntry>) {
    let doc: Value = serde_json::from_str(json).unwrap_or(Value::Null);
    for server in doc["servers"].as_array().into_iter().flatten() {
        let name = server["server"].as_str().unwrap_or_default();
        for tool in server["tools"].as_array().into_iter().flatten() {
            let tool_name = tool["name"].as_str().unwrap_or_default();
            out.push(entry(format!("mcp__{name}__{tool_name}"), tool));
        }
    }
}

/// The real tools: MCP servers, toolgate's own, the Chinese-described ones.
pub fn real_tools() -> Vec<IndexEntry> {
    let mut out = Vec::new();
    server_tools(MCP_SERVERS, &mut out);
    server_tools(ZH_TOOLS, &mut out);
    let own: Value = serde_json::from_str(TOOLGATE_TOOLS).unwrap_or(Value::Null);
    for tool in own.as_array().into_iter().flatten() {
        let name = tool["name"].as_str().unwrap_or_default().to_owned();
        out.push(entry(name, tool));
    }
    out
}

/// The query set.
pub fn queries() -> Vec<Query> {
    QUERIES
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut parts = l.splitn(3, '\t');
            let kind = parts.next()?.to_owned();
            let expected = parts.next()?.split('|').map(str::to_owned).collect();
            let text = parts.next()?.to_owned();
            Some(Query {
                kind,
                expected,
                text,
            })
        })
        .collect()
}

/// A small deterministic generator (SplitMix64), so the catalog is the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const SYLLABLES: &[&str] = &[
    "zor", "vex", "kal", "mira", "tun", "bex", "orb", "qua", "lin", "dra", "fen", "pix", "sol",
    "tek", "nova", "rux", "yal", "cor", "hep", "jun",
];

const VERBS: &[&str] = &[
    "create",
    "get",
    "list",
    "update",
    "delete",
    "search",
    "archive",
    "restore",
    "export",
    "import",
    "sync",
    "validate",
    "approve",
    "assign",
    "close",
    "reopen",
    "publish",
    "schedule",
    "cancel",
    "send",
    "upload",
    "download",
    "merge",
    "clone",
    "tag",
    "move",
    "copy",
    "rename",
    "lock",
    "unlock",
    "subscribe",
    "notify",
    "summarize",
    "translate",
    "monitor",
    "query",
    "fetch",
    "read",
    "write",
    "run",
    "start",
    "stop",
];

const OBJECTS: &[&str] = &[
    "invoice",
    "customer",
    "ticket",
    "deployment",
    "cluster",
    "bucket",
    "record",
    "report",
    "metric",
    "alert",
    "dashboard",
    "contact",
    "lead",
    "order",
    "shipment",
    "playlist",
    "track",
    "event",
    "calendar",
    "note",
    "task",
    "document",
    "folder",
    "file",
    "issue",
    "message",
    "channel",
    "page",
    "comment",
    "user",
    "project",
    "workspace",
    "repository",
    "branch",
    "commit",
    "image",
    "video",
    "webhook",
    "secret",
    "token",
    "database",
    "table",
    "row",
    "column",
    "schema",
    "backup",
    "snapshot",
    "log",
    "job",
    "pipeline",
    "build",
    "release",
    "environment",
    "variable",
    "domain",
    "certificate",
    "email",
    "thread",
    "reaction",
    "node",
    "graph",
    "entity",
    "relation",
    "observation",
    "form",
    "tab",
    "window",
    "screenshot",
    "element",
    "url",
    "website",
    "paper",
    "library",
    "doc",
];

const QUALIFIERS: &[&str] = &[
    "",
    "",
    "",
    "",
    "by_id",
    "batch",
    "status",
    "details",
    "history",
    "settings",
    "permissions",
    "members",
    "stats",
];

const EXTRAS: &[&str] = &[
    "Returns the {o} ID and its status.",
    "Supports pagination with cursor and limit.",
    "Requires the {o}_id parameter.",
    "Only available to workspace admins.",
    "Results are sorted by creation time, newest first.",
    "Use filters to narrow the result set.",
    "The operation is asynchronous; poll the job for completion.",
    "Fails if the {o} does not exist.",
];

const ZH_VERBS: &[&str] = &[
    "创建", "删除", "查询", "更新", "导出", "导入", "同步", "归档", "审批", "发送",
];
const ZH_OBJECTS: &[&str] = &[
    "订单",
    "客户",
    "发票",
    "工单",
    "报表",
    "合同",
    "库存",
    "审批单",
    "员工",
    "考勤",
    "会议室",
    "短信",
    "文件",
    "消息",
    "任务",
    "页面",
];

/// `count` synthetic tools: made-up services with plausible tools whose words overlap the real
/// ones (file, issue, message, page, screenshot …). A (verb, object) pair that is the name of
/// a real tool is skipped, so a query with a clear intent keeps a single right answer. About
/// one in ten has a Chinese description.
pub fn distractors(count: usize, real: &[IndexEntry]) -> Vec<IndexEntry> {
    // Compared without plural `s`, so `delete_observation` is as taken as
    // `delete_observations`.
    let key = |name: &str| -> String {
        name.to_lowercase()
            .replace('-', "_")
            .split('_')
            .map(|w| w.strip_suffix('s').unwrap_or(w))
            .collect::<Vec<_>>()
            .join("_")
    };
    let reserved: HashSet<String> = real
        .iter()
        .map(|e| key(e.name.rsplit("__").next().unwrap_or(&e.name)))
        .collect();
    let mut rng = Rng(0x5eed_0015);
    let mut names = HashSet::new();
    let mut out = Vec::with_capacity(count);
    let mut service = String::new();
    let mut display = String::new();
    while out.len() < count {
        if out.len() % 20 == 0 {
            let a = rng.pick(SYLLABLES);
            let b = rng.pick(SYLLABLES);
            service = format!("{a}{b}{}", out.len() / 20);
            display = format!("{}{b}", a[..1].to_uppercase() + &a[1..]);
        }
        let chinese = rng.next().is_multiple_of(10);
        let (tool, description) = if chinese {
            let v = rng.pick(ZH_VERBS);
            let o = rng.pick(ZH_OBJECTS);
            let i = rng.next() % 1000;
            (format!("op_{i}"), format!("在 {display} 系统中{v}{o}"))
        } else {
            let v = rng.pick(VERBS);
            let o = rng.pick(OBJECTS);
            let q = rng.pick(QUALIFIERS);
            let tool = if q.is_empty() {
                format!("{v}_{o}")
            } else {
                format!("{v}_{o}_{q}")
            };
            if reserved.contains(&key(&tool)) {
                continue;
            }
            let extra = rng.pick(EXTRAS).replace("{o}", o);
            let q_text = q.replace('_', " ");
            let verb = v[..1].to_uppercase() + &v[1..];
            (
                tool,
                format!("{verb} a {o} {q_text} in {display}. {extra}").replace("  ", " "),
            )
        };
        let name = format!("mcp__{service}__{tool}");
        if !names.insert(name.clone()) {
            continue;
        }
        let object = tool.split('_').nth(1).unwrap_or("item").to_owned();
        let schema = json!({
            "type": "object",
            "properties": {
                format!("{object}_id"): {"type": "string", "description": format!("ID of the {object}")},
                "limit": {"type": "integer", "description": "Most results to return"},
                "cursor": {"type": "string", "description": "Pagination cursor from the last call"},
            },
        });
        let input_schema: Map<String, Value> = schema.as_object().cloned().unwrap_or_default();
        out.push(IndexEntry {
            name,
            description,
            input_schema,
        });
    }
    out
}
