//! A skill file's frontmatter, strictly checked (`name` and `description` are required;
//! malformed candidates fail fast).
//!
//! The frontmatter is YAML between a first line `---` and the next `---`. The rules are the
//! ones Claude Code and Codex accept, so one skill folder works in all three: `name` is 1–64
//! characters of `[a-z0-9-]`, `description` is 1–1,024 characters. Visibility:
//! `disable-model-invocation: true` keeps a skill out of the model's catalog,
//! `user-invocable: false` keeps it from the user (no prompt). Other keys (`allowed-tools`,
//! `license`, `metadata`, …) belong to other clients and are ignored; the flags spelled
//! another way (`disable_model_invocation`) are refused, because ignoring them would show
//! the model a skill meant to be hidden from it.
//!
//! Every error says what is wrong and what to write instead; none quotes the file, whose
//! text may not be a skill at all.

use serde_norway::{Mapping, Value};

/// Why a skill file's frontmatter is refused. The text says what is wrong and what to write
/// instead; it never quotes the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontmatterError {
    /// The file does not start with a `---` line.
    #[error(
        "there is no frontmatter: the file must start with a line `---`, then `name: …` and `description: …`, then a line `---`"
    )]
    Missing,
    /// No closing `---` line (within [`MAX_FRONTMATTER`] bytes).
    #[error("the frontmatter is not closed: add a line `---` after `description: …`")]
    NotClosed,
    /// The frontmatter is larger than [`MAX_FRONTMATTER`].
    #[error(
        "the frontmatter is over {} KiB; keep it to `name`, `description` and the flags, and put the instructions below the closing `---`",
        MAX_FRONTMATTER / 1024
    )]
    TooLarge,
    /// The frontmatter does not parse as YAML.
    #[error(
        "the frontmatter is not valid YAML{} ({reason}); quote values that contain `: ` or start with a special character",
        at_line(*.line)
    )]
    Yaml {
        /// The line of the file (not of the frontmatter), when YAML knows it.
        line: Option<usize>,
        /// YAML's reason, without its position or any quoted text.
        reason: String,
    },
    /// The frontmatter is YAML, but not a mapping.
    #[error("the frontmatter must be `key: value` lines (`name:` and `description:`)")]
    NotKeyValue,
    /// A flag spelled with underscores or in camel case.
    #[error("`{wrong}` is not a frontmatter key; write `{right}` (with hyphens)")]
    Misspelled {
        /// The key as written.
        wrong: &'static str,
        /// The key as it must be written.
        right: &'static str,
    },
    /// A required key is absent.
    #[error("the frontmatter has no `{key}`; add `{key}:` with {what}")]
    MissingKey {
        /// `name` or `description`.
        key: &'static str,
        /// What its value should be.
        what: &'static str,
    },
    /// A required key holds a list or a table.
    #[error("`{key}` must be text, not a list or a table; write `{key}:` with {what}")]
    NotText {
        /// `name` or `description`.
        key: &'static str,
        /// What its value should be.
        what: &'static str,
    },
    /// The name breaks the naming rules.
    #[error(transparent)]
    Name(#[from] NameError),
    /// `description` is empty.
    #[error("`description` is empty; say what the skill does and when to use it")]
    EmptyDescription,
    /// `description` is longer than [`MAX_DESCRIPTION`].
    #[error(
        "`description` has {chars} characters; at most {MAX_DESCRIPTION} are allowed (Claude Code and Codex refuse longer ones): shorten it and move details into the body"
    )]
    LongDescription {
        /// Its length in characters.
        chars: usize,
    },
    /// A flag that is not `true` or `false`.
    #[error("`{key}` must be `true` or `false`")]
    NotAFlag {
        /// The flag's key.
        key: &'static str,
    },
    /// `argument-hint` is not text.
    #[error("`argument-hint` must be text, e.g. `argument-hint: \"[issue-number]\"`")]
    ArgumentHintNotText,
}

/// Why a skill name is refused ([`check_name`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name is empty.
    #[error("`name` is empty; give the skill a name such as `deploy-app`")]
    Empty,
    /// The name is longer than [`MAX_NAME`].
    #[error("`name` has {chars} characters; at most {MAX_NAME} are allowed")]
    TooLong {
        /// Its length in characters.
        chars: usize,
    },
    /// The name holds a character outside `[a-z0-9-]`.
    #[error(
        "`name` may only use lowercase letters, digits and `-` (found {found:?}); e.g. `name: {suggestion}`"
    )]
    BadCharacter {
        /// The first such character.
        found: char,
        /// The name in lowercase with other characters as `-`.
        suggestion: String,
    },
}

/// ` at line N of the file`, or nothing.
fn at_line(line: Option<usize>) -> String {
    line.map(|l| format!(" at line {l} of the file"))
        .unwrap_or_default()
}

/// Longest `name`, as Claude Code and Codex accept.
pub const MAX_NAME: usize = 64;
/// Longest `description`, in characters.
pub const MAX_DESCRIPTION: usize = 1_024;
/// Largest frontmatter read, in bytes: YAML past this is not a skill header.
pub const MAX_FRONTMATTER: usize = 64 * 1024;

/// The checked frontmatter of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frontmatter {
    /// The skill's name.
    pub name: String,
    /// What it does and when to use it, whitespace folded to single spaces.
    pub description: String,
    /// Whether the model may load it (`disable-model-invocation` not true).
    pub model_invocable: bool,
    /// Whether the user may invoke it (`user-invocable` not false).
    pub user_invocable: bool,
    /// What to pass after the skill's name (`argument-hint`), shown with its prompt.
    pub argument_hint: Option<String>,
}

/// Splits `text` into its checked frontmatter and its body (what follows the closing
/// `---`). The error says what is wrong and how to fix it.
///
/// ```
/// let text = "---\nname: deploy\ndescription: Deploy the site.\n---\nRun `make deploy`.\n";
/// let (front, body) = toolgate_skills::parse_skill(text).unwrap();
/// assert_eq!(front.name, "deploy");
/// assert_eq!(front.description, "Deploy the site.");
/// assert!(front.model_invocable);
/// assert_eq!(body.trim(), "Run `make deploy`.");
///
/// // A file without frontmatter is no skill, and the error says what to add.
/// assert!(toolgate_skills::parse_skill("just text").is_err());
/// ```
pub fn parse_skill(text: &str) -> Result<(Frontmatter, &str), FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (yaml, body) = split(text)?;
    if yaml.len() > MAX_FRONTMATTER {
        return Err(FrontmatterError::TooLarge);
    }
    let value: Value = serde_norway::from_str(yaml).map_err(|e| FrontmatterError::Yaml {
        // The location is 1-based within the frontmatter; the file has `---` above it.
        line: e.location().map(|l| l.line() + 1),
        reason: yaml_reason(&e),
    })?;
    let map = match value {
        Value::Mapping(map) => map,
        Value::Null => Mapping::new(),
        _ => return Err(FrontmatterError::NotKeyValue),
    };
    for (wrong, right) in [
        ("disable_model_invocation", "disable-model-invocation"),
        ("disableModelInvocation", "disable-model-invocation"),
        ("user_invocable", "user-invocable"),
        ("userInvocable", "user-invocable"),
        ("argument_hint", "argument-hint"),
    ] {
        if map.contains_key(wrong) {
            return Err(FrontmatterError::Misspelled { wrong, right });
        }
    }
    let name = required_string(&map, "name", "the skill's name, e.g. `name: deploy-app`")?;
    check_name(&name)?;
    let description = required_string(
        &map,
        "description",
        "what the skill does and when to use it",
    )?;
    let description = fold_whitespace(&description);
    if description.is_empty() {
        return Err(FrontmatterError::EmptyDescription);
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION {
        return Err(FrontmatterError::LongDescription { chars });
    }
    let disable_model = flag(&map, "disable-model-invocation")?.unwrap_or(false);
    let user_invocable = flag(&map, "user-invocable")?.unwrap_or(true);
    let argument_hint = match map.get("argument-hint") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(fold_whitespace(s)).filter(|s| !s.is_empty()),
        Some(_) => return Err(FrontmatterError::ArgumentHintNotText),
    };
    Ok((
        Frontmatter {
            name,
            description,
            model_invocable: !disable_model,
            user_invocable,
            argument_hint,
        },
        body,
    ))
}

/// The YAML between the opening and closing `---` lines, and the body after them.
fn split(text: &str) -> Result<(&str, &str), FrontmatterError> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(FrontmatterError::Missing)?;
    if first.trim_end() != "---" {
        return Err(FrontmatterError::Missing);
    }
    let start = first.len();
    let mut at = start;
    for line in lines {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            return Ok((&text[start..at], &text[at + line.len()..]));
        }
        at += line.len();
        if at - start > MAX_FRONTMATTER {
            break;
        }
    }
    Err(FrontmatterError::NotClosed)
}

/// The string value of `key`, or an error saying what to write.
fn required_string(
    map: &Mapping,
    key: &'static str,
    what: &'static str,
) -> Result<String, FrontmatterError> {
    match map.get(key) {
        None | Some(Value::Null) => Err(FrontmatterError::MissingKey { key, what }),
        Some(Value::String(s)) => Ok(s.clone()),
        // `name: 2024` or `description: yes` are numbers and booleans to YAML.
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(Value::Bool(b)) => Ok(b.to_string()),
        Some(_) => Err(FrontmatterError::NotText { key, what }),
    }
}

/// A boolean flag: absent, `true` or `false`.
fn flag(map: &Mapping, key: &'static str) -> Result<Option<bool>, FrontmatterError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
        Some(_) => Err(FrontmatterError::NotAFlag { key }),
    }
}

/// Checks a skill name: 1–64 characters of `[a-z0-9-]`.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME {
        return Err(NameError::TooLong {
            chars: name.chars().count(),
        });
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        let suggestion: String = name
            .to_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        return Err(NameError::BadCharacter {
            found: bad,
            suggestion: suggestion.trim_matches('-').to_owned(),
        });
    }
    Ok(())
}

/// `text` with runs of whitespace (newlines of a folded YAML block) as single spaces.
fn fold_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A YAML error's reason without its position (which [`parse_skill`] gives as a line of
/// the frontmatter) and without any quoted text.
fn yaml_reason(error: &serde_norway::Error) -> String {
    let text = error.to_string();
    let reason = text.split(" at line ").next().unwrap_or(&text);
    reason.chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> (Frontmatter, &str) {
        parse_skill(text).unwrap()
    }

    fn err(text: &str) -> String {
        parse_skill(text).unwrap_err().to_string()
    }

    #[test]
    fn name_description_and_body() {
        let (fm, body) =
            ok("---\nname: deploy-app\ndescription: Deploys the app.\n---\n# Steps\nrun it\n");
        assert_eq!(fm.name, "deploy-app");
        assert_eq!(fm.description, "Deploys the app.");
        assert!(fm.model_invocable && fm.user_invocable);
        assert_eq!(fm.argument_hint, None);
        assert_eq!(body, "# Steps\nrun it\n");
    }

    #[test]
    fn folded_descriptions_crlf_and_a_bom_are_read() {
        let text = "\u{feff}---\r\nname: x\r\ndescription: >\r\n  one\r\n  two\r\n---\r\nbody\r\n";
        let (fm, body) = ok(text);
        assert_eq!(fm.description, "one two");
        assert_eq!(body, "body\r\n");
    }

    #[test]
    fn the_visibility_flags_of_seed_003_section_5() {
        let (fm, _) = ok("---\nname: a\ndescription: d\ndisable-model-invocation: true\n---\n");
        assert!(!fm.model_invocable && fm.user_invocable);
        let (fm, _) = ok("---\nname: a\ndescription: d\nuser-invocable: false\n---\n");
        assert!(fm.model_invocable && !fm.user_invocable);
        let (fm, _) = ok(
            "---\nname: a\ndescription: d\nuser-invocable: false\ndisable-model-invocation: true\n---\n",
        );
        assert!(!fm.model_invocable && !fm.user_invocable);
    }

    #[test]
    fn a_flag_spelled_with_underscores_is_refused_not_ignored() {
        let e = err("---\nname: a\ndescription: d\ndisable_model_invocation: true\n---\n");
        assert!(e.contains("write `disable-model-invocation`"), "{e}");
    }

    #[test]
    fn a_flag_that_is_not_a_boolean_is_refused() {
        let e = err("---\nname: a\ndescription: d\nuser-invocable: maybe\n---\n");
        assert_eq!(e, "`user-invocable` must be `true` or `false`");
    }

    #[test]
    fn missing_fields_say_what_to_add() {
        assert!(err("---\ndescription: d\n---\n").contains("no `name`; add `name:`"));
        assert!(err("---\nname: a\n---\n").contains("no `description`; add `description:`"));
        assert!(err("# just markdown\n").contains("there is no frontmatter"));
        assert!(err("---\nname: a\ndescription: d\n").contains("not closed"));
        assert!(err("").contains("there is no frontmatter"));
    }

    #[test]
    fn names_follow_claude_code_and_codex() {
        assert!(ok("---\nname: a-1\ndescription: d\n---\n").0.name == "a-1");
        let e = err("---\nname: Deploy App\ndescription: d\n---\n");
        assert!(e.contains("e.g. `name: deploy-app`"), "{e}");
        let long = "a".repeat(65);
        let e = err(&format!("---\nname: {long}\ndescription: d\n---\n"));
        assert!(e.contains("65 characters; at most 64"), "{e}");
        let e = err("---\nname: [a, b]\ndescription: d\n---\n");
        assert!(e.contains("must be text"), "{e}");
    }

    #[test]
    fn descriptions_over_1024_characters_are_refused() {
        let long = "é".repeat(1_025);
        let e = err(&format!("---\nname: a\ndescription: {long}\n---\n"));
        assert!(e.contains("1025 characters; at most 1024"), "{e}");
        let fits = "é".repeat(1_024);
        assert_eq!(
            ok(&format!("---\nname: a\ndescription: {fits}\n---\n"))
                .0
                .description
                .chars()
                .count(),
            1_024
        );
    }

    #[test]
    fn invalid_yaml_names_the_line_and_quotes_nothing() {
        let e = err("---\nname: a\ndescription: secret-token: x: y\n---\n");
        assert!(
            e.starts_with("the frontmatter is not valid YAML at line 3 of the file"),
            "{e}"
        );
        assert!(!e.contains("secret-token"), "{e}");
    }

    #[test]
    fn yaml_alias_bombs_do_not_expand() {
        let mut yaml =
            String::from("---\nname: a\ndescription: d\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = i - 1;
            yaml.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        yaml.push_str("---\n");
        // Refused (serde_norway's repetition limit), not expanded to 10^12 nodes.
        let e = parse_skill(&yaml).unwrap_err().to_string();
        assert!(
            e.contains("not valid YAML (repetition limit exceeded)"),
            "{e}"
        );
    }

    #[test]
    fn argument_hint_is_kept() {
        let (fm, _) = ok("---\nname: a\ndescription: d\nargument-hint: \"[issue]\"\n---\n");
        assert_eq!(fm.argument_hint.as_deref(), Some("[issue]"));
    }
}
