//! Text normalisation for the tool index: identifier splitting, light English stemming,
//! a small synonym table, CJK character n-grams and a Chinese→English glossary.
//!
//! Both sides go through the same functions, so a stem only has to be consistent, not a
//! real word ("create", "created" and "creation" all become `creat`).

use std::collections::HashMap;
use std::sync::OnceLock;

/// Lower-cased, stemmed terms of `text`, appended to `out`. Identifiers are split on `_`,
/// `-`, `__` and camelCase; CJK runs give character unigrams and bigrams.
pub(crate) fn terms(text: &str, out: &mut Vec<String>) {
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    for c in text.chars() {
        if is_cjk(c) {
            flush_word(&mut word, out);
            cjk.push(c);
        } else if c.is_alphanumeric() {
            flush_cjk(&mut cjk, out);
            word.push(c);
        } else {
            flush_word(&mut word, out);
            flush_cjk(&mut cjk, out);
        }
    }
    flush_word(&mut word, out);
    flush_cjk(&mut cjk, out);
}

/// The CJK character runs of `text` (for glossary look-ups).
pub(crate) fn cjk_runs(text: &str) -> Vec<String> {
    let mut runs = Vec::new();
    let mut run = String::new();
    for c in text.chars() {
        if is_cjk(c) {
            run.push(c);
        } else if !run.is_empty() {
            runs.push(std::mem::take(&mut run));
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    runs
}

/// Whether `c` is a Han, kana or Hangul character.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FFFF) // Extensions B–F
}

/// Function characters that say nothing about a tool (的, 一个, 在 …): dropped as
/// unigrams, and bigrams made only of them are dropped too.
const CJK_STOP: &str = "的了在是和与把给里上下中个一这那我你他它们吗呢吧啊将被对从到为以及或等之其也都就要会能可用让向条次些某请帮";

fn flush_cjk(run: &mut Vec<char>, out: &mut Vec<String>) {
    for c in run.iter() {
        if !CJK_STOP.contains(*c) {
            out.push(c.to_string());
        }
    }
    for pair in run.windows(2) {
        if !(CJK_STOP.contains(pair[0]) && CJK_STOP.contains(pair[1])) {
            out.push(pair.iter().collect());
        }
    }
    run.clear();
}

/// Whether a term is a single CJK character (a unigram: weak evidence on its own).
pub(crate) fn is_unigram(term: &str) -> bool {
    let mut chars = term.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if is_cjk(c))
}

fn flush_word(word: &mut String, out: &mut Vec<String>) {
    if word.is_empty() {
        return;
    }
    for part in split_camel(word) {
        let lower = part.to_lowercase();
        if STOPWORDS.contains(&lower.as_str()) {
            continue;
        }
        out.push(stem(&lower));
    }
    word.clear();
}

/// Splits `createIssue` → `create`, `Issue`; `HTTPServer` → `HTTP`, `Server`. Digits stay
/// with their word (`base64`, `s3`).
fn split_camel(word: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (pos, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        let boundary = c.is_uppercase()
            && (prev.is_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_uppercase() && next_lower));
        if boundary {
            parts.push(&word[start..pos]);
            start = pos;
        }
    }
    parts.push(&word[start..]);
    parts
}

/// Words too common in tool descriptions to tell tools apart.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "please", "so",
    "some", "that", "the", "their", "then", "there", "these", "this", "to", "us", "use", "used",
    "using", "want", "was", "we", "what", "when", "which", "will", "with", "you", "your",
];

/// A light stemmer: plurals, `-ing`, `-ed`, `-tion`/`-sion` and a final `e`. Not Porter:
/// it only has to map the forms tool descriptions use onto one key, on both sides.
pub(crate) fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.is_ascii() {
        return word.to_owned();
    }
    let mut w = word.to_owned();
    // Plurals.
    if w.len() > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.ends_with("sses")
        || w.ends_with("xes")
        || w.ends_with("ches")
        || w.ends_with("shes")
        || w.ends_with("zes")
    {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.truncate(w.len() - 1);
    }
    // Verb and noun endings.
    if w.len() >= 6 && w.ends_with("ing") {
        w.truncate(w.len() - 3);
        undouble(&mut w);
    } else if w.len() >= 5 && w.ends_with("ed") && !w.ends_with("eed") {
        w.truncate(w.len() - 2);
        undouble(&mut w);
    } else if w.len() >= 7 && (w.ends_with("tion") || w.ends_with("sion")) {
        w.truncate(w.len() - 3);
    }
    if w.len() > 3 && w.ends_with('e') {
        w.truncate(w.len() - 1);
    }
    w
}

/// `runn` → `run`, `stopp` → `stop`; `fill`, `press`, `add` stay.
fn undouble(w: &mut String) {
    let b = w.as_bytes();
    let n = b.len();
    if n >= 4
        && b[n - 1] == b[n - 2]
        && !matches!(
            b[n - 1],
            b'l' | b's' | b'z' | b'a' | b'e' | b'i' | b'o' | b'u'
        )
    {
        w.truncate(n - 1);
    }
}

/// Groups of words that mean the same to someone looking for a tool. A query word of a group
/// also searches for the other members (at [`SYNONYM_WEIGHT`]); members may be phrases.
const SYNONYMS: &[&[&str]] = &[
    &[
        "delete", "remove", "rm", "del", "erase", "unlink", "destroy", "purge",
    ],
    &["get", "fetch", "retrieve", "obtain", "load"],
    &["read", "view", "cat", "open"],
    &["list", "ls", "enumerate", "show all"],
    &["search", "find", "lookup", "look up", "query", "locate"],
    &[
        "create", "make", "new", "add", "generate", "open", "set up", "setup",
    ],
    &["update", "modify", "edit", "change", "patch", "alter"],
    &["run", "execute", "exec", "invoke", "launch"],
    &["stop", "kill", "terminate", "cancel", "abort"],
    &["write", "save", "store", "persist"],
    &["move", "rename", "mv"],
    &["copy", "cp", "duplicate"],
    &["send", "post", "publish"],
    &["repo", "repository"],
    &["dir", "directory", "folder"],
    &["pr", "pull request", "merge request", "mr"],
    &["msg", "message"],
    &["db", "database"],
    &["config", "configuration", "settings", "cfg"],
    &["env", "environment"],
    &["info", "information", "details", "metadata"],
    &["auth", "authentication", "login"],
    &["img", "image", "picture", "photo"],
    &["doc", "docs", "document", "documentation"],
    &["tmp", "temp", "temporary"],
    &["cmd", "command", "shell"],
    &["proc", "process"],
    &["param", "parameter", "arg", "argument"],
    &["pkg", "package"],
    &["lib", "library"],
    &["desc", "description"],
    &["url", "uri", "link"],
    &["issue", "ticket", "bug"],
    &["user", "account", "member", "profile"],
    &["email", "mail"],
    &["schedule", "cron", "timer", "reminder"],
    &["memory", "remember", "recall"],
    &["page", "webpage", "website", "site"],
    &["screenshot", "screen capture", "screen shot"],
    &["multiple", "several", "many", "bulk"],
    &["regex", "regular expression", "regexp", "pattern"],
    &["coordinates", "latitude", "longitude", "lat", "lng"],
    &["click", "press", "tap"],
    &["navigate", "goto", "go to", "visit"],
    &["web", "internet", "online"],
    &["directions", "route"],
    &["location", "place", "address"],
    &["summary", "summarize", "overview"],
    &["think", "thought", "reasoning", "reason"],
    &["output", "log", "logs"],
    &["job", "task", "background"],
    &["notify", "notification", "alert"],
    &["env", "variable", "var"],
    &["commit", "changeset"],
    &["tab", "tabs"],
];

/// Weight of a synonym's terms relative to the query word it stands for.
pub(crate) const SYNONYM_WEIGHT: f32 = 0.6;

/// Weight of the English terms a Chinese query word is translated to.
pub(crate) const GLOSSARY_WEIGHT: f32 = 1.0;

/// Weight of a CJK unigram of the query: bigrams carry the meaning, a lone character is
/// weak evidence (文 is in 文件, 文档 and 文本).
pub(crate) const UNIGRAM_WEIGHT: f32 = 0.3;

/// Chinese words tool users type, with the English vocabulary of tool descriptions, so that a
/// Chinese query also finds the (mostly English) catalog. Lexical search cannot cross
/// languages on its own; this covers the verbs and nouns tools are made of.
const GLOSSARY: &[(&str, &str)] = &[
    ("删除", "delete remove"),
    ("移除", "remove delete"),
    ("读取", "read"),
    ("读", "read"),
    ("查看", "view read show"),
    ("网址", "url"),
    ("链接", "link url"),
    ("论文", "paper"),
    ("邮件", "email"),
    ("写入", "write"),
    ("写", "write"),
    ("保存", "save write"),
    ("文件夹", "directory folder"),
    ("文件", "file"),
    ("目录", "directory"),
    ("列出", "list"),
    ("列表", "list"),
    ("搜索", "search"),
    ("查找", "search find"),
    ("检索", "search retrieve"),
    ("查询", "query search"),
    ("创建", "create"),
    ("新建", "create new"),
    ("添加", "add"),
    ("更新", "update"),
    ("修改", "modify edit"),
    ("编辑", "edit"),
    ("替换", "replace"),
    ("运行", "run"),
    ("执行", "execute run"),
    ("命令", "command"),
    ("停止", "stop"),
    ("终止", "terminate kill"),
    ("仓库", "repository"),
    ("问题", "issue"),
    ("拉取请求", "pull request"),
    ("合并请求", "merge request"),
    ("合并", "merge"),
    ("分支", "branch"),
    ("提交", "commit"),
    ("评论", "comment"),
    ("用户", "user"),
    ("消息", "message"),
    ("频道", "channel"),
    ("发送", "send"),
    ("回复", "reply"),
    ("网页", "web page"),
    ("网站", "website"),
    ("截图", "screenshot"),
    ("点击", "click"),
    ("浏览器", "browser"),
    ("导航", "navigate"),
    ("打开", "open navigate"),
    ("数据库", "database"),
    ("表", "table"),
    ("记忆", "memory"),
    ("实体", "entity entities"),
    ("关系", "relation"),
    ("观察", "observation"),
    ("知识图谱", "knowledge graph"),
    ("地图", "map"),
    ("地址", "address"),
    ("坐标", "coordinates"),
    ("路线", "directions route"),
    ("距离", "distance"),
    ("天气", "weather"),
    ("图片", "image"),
    ("图像", "image"),
    ("通知", "notify notification"),
    ("任务", "task"),
    ("子任务", "subtask"),
    ("安排", "schedule"),
    ("重命名", "rename move"),
    ("移动", "move"),
    ("复制", "copy"),
    ("内容", "content"),
    ("信息", "info"),
    ("大小", "size"),
    ("后台", "background"),
    ("输出", "output"),
    ("进程", "process"),
    ("文档", "documentation docs"),
    ("代码", "code"),
    ("新闻", "news"),
    ("节点", "node"),
    ("思考", "thinking thought"),
    ("步骤", "step"),
    ("标签", "label"),
    ("文本", "text"),
    ("环境变量", "environment variable"),
    ("回显", "echo"),
    ("相加", "add sum"),
    ("求和", "sum add"),
    ("树", "tree"),
    ("结构", "structure"),
    ("元数据", "metadata info"),
    ("日志", "log"),
    ("页面", "page"),
    ("表单", "form"),
    ("填写", "fill"),
    ("上传", "upload"),
    ("下载", "download"),
    ("爬取", "scrape crawl"),
    ("抓取", "scrape fetch"),
    ("深度研究", "deep research"),
    ("研究", "research"),
    ("库", "library"),
    ("项目", "project"),
    ("版本", "release version"),
    ("标记", "tag"),
    ("星标", "star"),
    ("派生", "fork"),
    ("组织", "organization"),
    ("团队", "team"),
    ("工作流", "workflow"),
    ("数据", "data"),
    ("资源", "resource"),
    ("提示", "prompt"),
    ("模型", "model"),
    ("采样", "sampling"),
    ("长时间", "long running"),
    ("对话框", "dialog"),
    ("控制台", "console"),
    ("网络请求", "network request"),
    ("悬停", "hover"),
    ("拖拽", "drag"),
    ("按键", "key press"),
    ("输入", "type input"),
    ("关闭", "close"),
    ("调整", "resize"),
    ("等待", "wait"),
    ("评估", "evaluate"),
    ("脚本", "script"),
];

/// What the query side needs from the tables, built once.
pub(crate) struct Tables {
    /// Stemmed term → stemmed terms of its synonyms.
    pub(crate) synonyms: HashMap<String, Vec<String>>,
    /// Chinese word → stemmed English terms, longest words first.
    pub(crate) glossary: Vec<(&'static str, Vec<String>)>,
}

/// The shared tables.
pub(crate) fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut synonyms: HashMap<String, Vec<String>> = HashMap::new();
        for group in SYNONYMS {
            let stemmed: Vec<Vec<String>> = group
                .iter()
                .map(|member| {
                    let mut out = Vec::new();
                    terms(member, &mut out);
                    out
                })
                .collect();
            for (i, member) in stemmed.iter().enumerate() {
                // A phrase member is a key as its words joined by a space ("look up"),
                // matched against consecutive query words.
                if member.is_empty() {
                    continue;
                }
                let key = member.join(" ");
                let entry = synonyms.entry(key.clone()).or_default();
                for (j, other) in stemmed.iter().enumerate() {
                    if i == j {
                        continue;
                    }
                    for t in other {
                        if *t != key && !member.contains(t) && !entry.contains(t) {
                            entry.push(t.clone());
                        }
                    }
                }
            }
        }
        let mut glossary: Vec<(&'static str, Vec<String>)> = GLOSSARY
            .iter()
            .map(|(zh, en)| {
                let mut out = Vec::new();
                terms(en, &mut out);
                (*zh, out)
            })
            .collect();
        glossary.sort_by(|a, b| {
            b.0.chars()
                .count()
                .cmp(&a.0.chars().count())
                .then(a.0.cmp(b.0))
        });
        Tables { synonyms, glossary }
    })
}

/// English terms for the Chinese words in `run`, longest match first, left to right.
pub(crate) fn translate(run: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = run.chars().collect();
    let glossary = &tables().glossary;
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..].iter().collect();
        match glossary.iter().find(|(zh, _)| rest.starts_with(zh)) {
            Some((zh, en)) => {
                out.extend(en.iter().cloned());
                i += zh.chars().count();
            }
            None => i += 1,
        }
    }
}

/// The key two names share when they are "the same name": lower case, letters and digits
/// only (`read_file`, `readFile`, `read file` → `readfile`).
pub(crate) fn name_key(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Optimal string alignment distance, giving up (returning `limit + 1`) past `limit`.
pub(crate) fn edit_distance(a: &[u8], b: &[u8], limit: usize) -> usize {
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    let n = b.len();
    let mut prev2 = vec![0usize; n + 1];
    let mut prev: Vec<usize> = (0..=n).collect();
    let mut cur = vec![0usize; n + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=n {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(prev2[j - 2] + 1);
            }
            cur[j] = v;
            row_min = row_min.min(v);
        }
        if row_min > limit {
            return limit + 1;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[n]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        terms(text, &mut out);
        out
    }

    #[test]
    fn identifiers_split_on_separators_and_camel_case() {
        assert_eq!(
            t("mcp__github__create_issue"),
            ["mcp", "github", "creat", "issu"]
        );
        assert_eq!(t("getFileContents"), ["get", "fil", "content"]);
        assert_eq!(t("HTTPServer-status"), ["http", "server", "status"]);
        assert_eq!(t("base64 s3"), ["base64", "s3"]);
    }

    #[test]
    fn inflections_share_a_stem() {
        for group in [
            &["create", "created", "creating", "creation", "creates"][..],
            &["file", "files"],
            &["directory", "directories"],
            &["run", "running", "runs"],
            &["search", "searches", "searching", "searched"],
            &["delete", "deleted", "deletion", "deleting"],
            &["branch", "branches"],
            &["process", "processes"],
            &["stop", "stopped"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.iter().all(|s| s == &stems[0]),
                "{group:?} → {stems:?}"
            );
        }
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("add"), "add");
        assert_eq!(stem("added"), "add");
    }

    #[test]
    fn cjk_gives_unigrams_and_bigrams() {
        assert_eq!(
            t("删除文件"),
            ["删", "除", "文", "件", "删除", "除文", "文件"]
        );
        assert_eq!(t("读取 README"), ["读", "取", "读取", "readm"]);
    }

    #[test]
    fn synonyms_are_symmetric_and_stemmed() {
        let tables = tables();
        assert!(tables.synonyms["remov"].contains(&"delet".to_owned()));
        assert!(tables.synonyms["delet"].contains(&"remov".to_owned()));
        assert!(tables.synonyms["pr"].contains(&"pull".to_owned()));
    }

    #[test]
    fn glossary_prefers_longest_words() {
        let mut out = Vec::new();
        translate("删除文件夹", &mut out);
        assert_eq!(out, ["delet", "remov", "directory", "folder"]);
    }

    #[test]
    fn edit_distance_counts_transpositions_once() {
        assert_eq!(edit_distance(b"read_file", b"raed_file", 2), 1);
        assert_eq!(edit_distance(b"readfile", b"readfle", 2), 1);
        assert_eq!(edit_distance(b"abc", b"xyzxyz", 2), 3);
    }
}
