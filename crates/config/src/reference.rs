//! The configuration reference (the TOML block of docs/configuration.md, `toolgate config
//! reference`), generated from [`Config`] itself: its JSON schema gives every key and, from
//! the fields' doc comments, what each means; the serialized [`Config::default`] gives the
//! values. A key added without a doc comment, or a changed default, changes the reference, and
//! the config crate's tests compare it with the docs.
//!
//! A field's doc comment is read in two parts: its first paragraph is the explanation users
//! read in the reference; later paragraphs are notes for developers (why the default is what
//! it is, which issue asked for it) and stay out of the reference.

use serde_json::{Map, Value as Json};

use crate::Config;

/// Column at which explanations start (keys and values are padded to it).
const COLUMN: usize = 31;
/// Longest line of the reference.
const WIDTH: usize = 100;

/// The JSON schema of [`Config`] as a config file writes it.
pub fn schema() -> schemars::Schema {
    schemars::schema_for!(Config)
}

/// The configuration reference: every key of [`Config`], table by table in schema order, as
/// `key = default` with its explanation. Keys with no default (unset `Option`s, and every key
/// of a map entry such as `[mcp_servers.NAME]`) are commented out and show an example
/// value, so the whole text parses as TOML equal to the built-in defaults.
pub fn reference() -> String {
    let schema = schema().to_value();
    let defaults = toml::Value::try_from(Config::default()).ok();
    let mut out = Out::default();
    out.comment_lines(&[
        "~/.config/toolgate/config.toml — every key, with its default. A key shown as",
        "`# key = value` is unset by default; its value is an example.",
    ]);
    out.blank();
    let walker = Walker {
        defs: schema.get("$defs").and_then(Json::as_object),
    };
    walker.table(
        &mut out,
        &Table {
            path: String::new(),
            schema: &schema,
            description: "",
            defaults: defaults.as_ref().and_then(toml::Value::as_table),
            set: true,
        },
    );
    out.text
}

/// Every dotted key of [`Config`]'s schema (`read.max_lines`, `mcp_servers.NAME.command`)
/// whose field has no doc comment, so no explanation in the reference.
pub fn undocumented_keys() -> Vec<String> {
    let schema = schema().to_value();
    let walker = Walker {
        defs: schema.get("$defs").and_then(Json::as_object),
    };
    let mut missing = Vec::new();
    walker.undocumented("", &schema, &mut missing);
    missing
}

/// One table being rendered.
struct Table<'a> {
    /// Dotted path; empty for the top level.
    path: String,
    /// Its (struct) schema.
    schema: &'a Json,
    /// What the field holding it says.
    description: &'a str,
    /// Its values in the defaults, when it has any.
    defaults: Option<&'a toml::Table>,
    /// Whether the table exists by default (a map entry or an unset `Option` does not).
    set: bool,
}

/// Reads schemas, resolving `$ref`s into `$defs`.
struct Walker<'a> {
    defs: Option<&'a Map<String, Json>>,
}

/// What a field holds, as the reference shows it.
enum Shape<'a> {
    /// A struct: its own `[table]`.
    Struct(&'a Json),
    /// A map of structs (`[mcp_servers.NAME]`): the value type's table under `NAME`.
    Map(&'a Json),
    /// Anything else: one `key = value` line.
    Leaf,
}

impl<'a> Walker<'a> {
    /// `schema` with a `$ref` followed, and an `Option`'s null alternative dropped.
    fn resolve(&self, schema: &'a Json) -> &'a Json {
        if let Some(name) = schema
            .get("$ref")
            .and_then(Json::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            && let Some(def) = self.defs.and_then(|d| d.get(name))
        {
            return self.resolve(def);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = schema.get(key).and_then(Json::as_array) {
                let not_null: Vec<&Json> = options.iter().filter(|o| !is_null(o)).collect();
                if let [only] = not_null.as_slice()
                    && not_null.len() < options.len()
                {
                    return self.resolve(only);
                }
            }
        }
        schema
    }

    fn shape(&self, schema: &'a Json) -> Shape<'a> {
        let resolved = self.resolve(schema);
        if resolved.get("properties").is_some() {
            return Shape::Struct(resolved);
        }
        if let Some(values) = resolved
            .get("additionalProperties")
            .filter(|v| v.is_object())
        {
            let values = self.resolve(values);
            if values.get("properties").is_some() {
                return Shape::Map(values);
            }
        }
        Shape::Leaf
    }

    /// Renders `table`: its header, its keys, then its sub-tables.
    fn table(&self, out: &mut Out, table: &Table<'_>) {
        if !table.path.is_empty() {
            out.blank();
            let header = format!("[{}]", table.path);
            out.entry(&header, !table.set, table.description);
        }
        let mut subtables = Vec::new();
        for (key, field) in properties(table.schema) {
            let description = explanation(field);
            let path = join(&table.path, key);
            let default = table.defaults.and_then(|d| d.get(key));
            match self.shape(field) {
                Shape::Struct(schema) => subtables.push(Table {
                    path,
                    schema,
                    description,
                    defaults: default.and_then(toml::Value::as_table),
                    set: table.set && default.is_some(),
                }),
                Shape::Map(schema) => subtables.push(Table {
                    path: join(&path, "NAME"),
                    schema,
                    description,
                    defaults: None,
                    set: false,
                }),
                Shape::Leaf => match default.filter(|_| table.set) {
                    Some(value) => out.entry(&format!("{key} = {value}"), false, description),
                    None => {
                        let example = example(self.resolve(field), field);
                        out.entry(&format!("{key} = {example}"), true, description);
                    }
                },
            }
        }
        for sub in &subtables {
            self.table(out, sub);
        }
    }

    /// Collects the dotted keys under `schema` whose field has no description.
    fn undocumented(&self, path: &str, schema: &'a Json, missing: &mut Vec<String>) {
        for (key, field) in properties(self.resolve(schema)) {
            let dotted = join(path, key);
            if explanation(field).is_empty() {
                missing.push(dotted.clone());
            }
            match self.shape(field) {
                Shape::Struct(inner) => self.undocumented(&dotted, inner, missing),
                Shape::Map(values) => self.undocumented(&join(&dotted, "NAME"), values, missing),
                Shape::Leaf => {
                    // A list of tables (`[[disclosure.promote]]`): their keys too.
                    if let Some(items) = self.resolve(field).get("items") {
                        let items = self.resolve(items);
                        if items.get("properties").is_some() {
                            self.undocumented(&dotted, items, missing);
                        }
                    }
                }
            }
        }
    }
}

/// The properties of a struct schema, in schema order.
fn properties(schema: &Json) -> impl Iterator<Item = (&String, &Json)> {
    schema
        .get("properties")
        .and_then(Json::as_object)
        .into_iter()
        .flatten()
}

fn is_null(schema: &Json) -> bool {
    schema.get("type").and_then(Json::as_str) == Some("null")
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The first paragraph of a field's description, on one line.
fn explanation(field: &Json) -> &str {
    let description = field
        .get("description")
        .and_then(Json::as_str)
        .unwrap_or_default();
    description.split("\n\n").next().unwrap_or_default().trim()
}

/// A value to show for a key with no default: the schema's default (a map entry's
/// fields), its first example, or a placeholder of its type.
fn example(resolved: &Json, field: &Json) -> String {
    let shown = [
        field.get("default"),
        field.get("examples").and_then(|e| e.get(0)),
    ]
    .into_iter()
    .flatten()
    .find(|v| !v.is_null())
    .and_then(|v| toml::Value::try_from(v).ok());
    if let Some(value) = shown {
        return value.to_string();
    }
    let kind = match resolved.get("type") {
        Some(Json::Array(kinds)) => kinds.iter().find(|k| k.as_str() != Some("null")),
        other => other,
    };
    match kind.and_then(Json::as_str) {
        Some("boolean") => "false",
        Some("integer" | "number") => "0",
        Some("array") => "[]",
        Some("object") => "{}",
        _ => "\"...\"",
    }
    .to_owned()
}

/// The reference being written.
#[derive(Default)]
struct Out {
    text: String,
}

impl Out {
    fn blank(&mut self) {
        self.text.push('\n');
    }

    fn comment_lines(&mut self, lines: &[&str]) {
        for line in lines {
            self.text.push_str("# ");
            self.text.push_str(line);
            self.text.push('\n');
        }
    }

    /// `code` (commented out when `unset`) with `explanation` wrapped beside it.
    fn entry(&mut self, code: &str, unset: bool, explanation: &str) {
        let code = if unset {
            format!("# {code}")
        } else {
            code.to_owned()
        };
        let mut lines = wrap(explanation, WIDTH - COLUMN - 2).into_iter();
        let Some(first) = lines.next() else {
            self.text.push_str(&code);
            self.text.push('\n');
            return;
        };
        let code_width = code.chars().count();
        let first_width = WIDTH.saturating_sub(code_width + 3);
        let (first, rest) = if code_width < COLUMN {
            (
                format!("{code:<COLUMN$}# {first}"),
                lines.collect::<Vec<_>>(),
            )
        } else {
            // A long line: its explanation starts after it, rewrapped to the room left.
            let mut words = wrap(explanation, first_width.max(20)).into_iter();
            let first = words.next().unwrap_or_default();
            let rest = wrap(&words.collect::<Vec<_>>().join(" "), WIDTH - COLUMN - 2);
            (format!("{code} # {first}"), rest)
        };
        self.text.push_str(&first);
        self.text.push('\n');
        for line in rest {
            self.text.push_str(&format!("{:COLUMN$}# {line}\n", ""));
        }
    }
}

/// `text` cut into lines of at most `width` characters at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrap_cuts_at_spaces_within_the_width() {
        assert_eq!(
            wrap("one two three four", 9),
            ["one two", "three", "four"].map(str::to_owned)
        );
        assert!(wrap("", 10).is_empty());
        assert_eq!(wrap("averyveryverylongword x", 5).len(), 2);
    }
}
