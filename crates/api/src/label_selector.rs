//! Label selectors, as `GET /jobs?query=` takes them: Kubernetes' syntax
//! (`key`, `!key`, `key=value`, `key==value`, `key!=value`,
//! `key in (a,b)`, `key notin (a,b)`, comma-separated, all must hold) and
//! Jobdeck's older `key:value`, which means `key=value`.
//!
//! As in Kubernetes, `key!=value` and `key notin (…)` also match a job
//! without the key.

use std::collections::BTreeMap;

/// One condition of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelCondition {
    /// `key`: the job has the label.
    Exists(String),
    /// `!key`: the job does not have the label.
    Absent(String),
    /// `key=value`, `key==value`, `key:value`.
    Equals(String, String),
    /// `key!=value`: the label is missing or has another value.
    NotEquals(String, String),
    /// `key in (a,b)`: the label has one of the values.
    In(String, Vec<String>),
    /// `key notin (a,b)`: the label is missing or has none of the values.
    NotIn(String, Vec<String>),
}

/// The most conditions one selector may hold, and values one set may list:
/// each becomes a bound value of one SQL query.
pub const SELECTOR_CONDITIONS_MAX: usize = 50;
pub const SELECTOR_SET_VALUES_MAX: usize = 100;

impl LabelCondition {
    /// The key the condition is about.
    pub fn key(&self) -> &str {
        match self {
            LabelCondition::Exists(k)
            | LabelCondition::Absent(k)
            | LabelCondition::Equals(k, _)
            | LabelCondition::NotEquals(k, _)
            | LabelCondition::In(k, _)
            | LabelCondition::NotIn(k, _) => k,
        }
    }

    /// Whether a job with `labels` satisfies the condition.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(self.key());
        match self {
            LabelCondition::Exists(_) => value.is_some(),
            LabelCondition::Absent(_) => value.is_none(),
            LabelCondition::Equals(_, wanted) => value == Some(wanted),
            LabelCondition::NotEquals(_, unwanted) => value != Some(unwanted),
            LabelCondition::In(_, set) => value.is_some_and(|v| set.contains(v)),
            LabelCondition::NotIn(_, set) => value.is_none_or(|v| !set.contains(v)),
        }
    }
}

/// The conditions of `selector`, or what is wrong with it, in words that
/// quote the condition.
pub fn parse_label_selector(selector: &str) -> Result<Vec<LabelCondition>, String> {
    let mut conditions = Vec::new();
    for part in split_conditions(selector)? {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        conditions.push(parse_condition(part)?);
    }
    if conditions.len() > SELECTOR_CONDITIONS_MAX {
        return Err(format!("holds {} conditions; at most {SELECTOR_CONDITIONS_MAX} are allowed", conditions.len()));
    }
    Ok(conditions)
}

/// `selector` split at the commas that are not inside a set's parentheses.
fn split_conditions(selector: &str) -> Result<Vec<&str>, String> {
    let (mut parts, mut start, mut open) = (Vec::new(), 0, false);
    for (at, c) in selector.char_indices() {
        match c {
            '(' if open => return Err(format!("'{selector}' opens a set inside a set")),
            '(' => open = true,
            ')' if !open => return Err(format!("'{selector}' closes a set it did not open")),
            ')' => open = false,
            ',' if !open => {
                parts.push(&selector[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    if open {
        return Err(format!("'{selector}' leaves a set open: a set is written (a,b)"));
    }
    parts.push(&selector[start..]);
    Ok(parts)
}

fn parse_condition(part: &str) -> Result<LabelCondition, String> {
    let invalid = || format!("'{part}' is not a valid label condition");
    if let Some(key) = part.strip_prefix('!') {
        return Ok(LabelCondition::Absent(key_of(key.trim(), part)?));
    }
    if let Some((head, rest)) = part.split_once('(') {
        let set = rest.trim_end().strip_suffix(')').ok_or_else(invalid)?;
        let mut words = head.split_whitespace();
        let (Some(key), Some(operator), None) = (words.next(), words.next(), words.next()) else {
            return Err(invalid());
        };
        let key = key_of(key, part)?;
        let values: Vec<String> = set.split(',').map(|v| value_of(v.trim(), part)).collect::<Result<_, _>>()?;
        if set.trim().is_empty() {
            return Err(format!("'{part}' gives an empty set: name at least one value"));
        }
        if values.len() > SELECTOR_SET_VALUES_MAX {
            return Err(format!(
                "'{part}' lists {} values; at most {SELECTOR_SET_VALUES_MAX} are allowed",
                values.len()
            ));
        }
        return match operator {
            "in" => Ok(LabelCondition::In(key, values)),
            "notin" => Ok(LabelCondition::NotIn(key, values)),
            _ => Err(format!("'{part}': a set follows 'in' or 'notin'")),
        };
    }
    for (operator, make) in [
        ("!=", LabelCondition::NotEquals as fn(String, String) -> LabelCondition),
        ("==", LabelCondition::Equals),
        ("=", LabelCondition::Equals),
        (":", LabelCondition::Equals),
    ] {
        if let Some((key, value)) = part.split_once(operator) {
            return Ok(make(key_of(key.trim(), part)?, value_of(value.trim(), part)?));
        }
    }
    Ok(LabelCondition::Exists(key_of(part, part)?))
}

/// Characters a key may not hold: the selector's own syntax, quotes and
/// whitespace.
fn is_key_char(c: char) -> bool {
    !c.is_whitespace() && !c.is_control() && !"\"\\(),=!:".contains(c)
}

fn key_of(key: &str, part: &str) -> Result<String, String> {
    if key.is_empty() || !key.chars().all(is_key_char) {
        return Err(format!("'{part}' is not a valid label condition: '{key}' is no label key"));
    }
    Ok(key.to_string())
}

fn value_of(value: &str, part: &str) -> Result<String, String> {
    if value.chars().any(|c| c.is_control() || "()=!".contains(c)) {
        return Err(format!("'{part}' is not a valid label condition: '{value}' is no label value"));
    }
    Ok(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use LabelCondition as C;

    fn s(text: &str) -> String {
        text.to_string()
    }

    #[test]
    fn every_form_of_kubernetes_and_the_older_colon_parse() {
        let parsed = parse_label_selector(
            "team, !draft, env=prod, tier==gpu, owner!=bob, zone in (a, b), stage notin (test),kind:train",
        )
        .unwrap();
        assert_eq!(
            parsed,
            [
                C::Exists(s("team")),
                C::Absent(s("draft")),
                C::Equals(s("env"), s("prod")),
                C::Equals(s("tier"), s("gpu")),
                C::NotEquals(s("owner"), s("bob")),
                C::In(s("zone"), vec![s("a"), s("b")]),
                C::NotIn(s("stage"), vec![s("test")]),
                C::Equals(s("kind"), s("train")),
            ]
        );
        assert_eq!(parse_label_selector("").unwrap(), []);
        assert_eq!(parse_label_selector("a.io/team=x").unwrap(), [C::Equals(s("a.io/team"), s("x"))]);
        assert_eq!(parse_label_selector("k=").unwrap(), [C::Equals(s("k"), s(""))], "an empty value is a value");
    }

    #[test]
    fn a_broken_selector_says_which_condition() {
        for (selector, said) in [
            ("zone in (a, b", "leaves a set open"),
            ("zone in a, b)", "closes a set it did not open"),
            ("zone in ((a))", "opens a set inside a set"),
            ("zone in ()", "gives an empty set"),
            ("zone within (a)", "a set follows 'in' or 'notin'"),
            ("zone (a)", "is not a valid label condition"),
            ("two words", "'two words' is no label key"),
            ("\"k\"=v", "is no label key"),
            ("=v", "'' is no label key"),
            ("!", "'' is no label key"),
            ("k=v=w", "'v=w' is no label value"),
        ] {
            let error = parse_label_selector(selector).unwrap_err();
            assert!(error.contains(said), "{selector}: {error}");
        }
        let many = vec!["k"; SELECTOR_CONDITIONS_MAX + 1].join(",");
        assert!(parse_label_selector(&many).unwrap_err().contains("at most 50"));
        let big_set = format!("k in ({})", vec!["v"; SELECTOR_SET_VALUES_MAX + 1].join(","));
        assert!(parse_label_selector(&big_set).unwrap_err().contains("at most 100"));
    }

    #[test]
    fn negative_conditions_match_a_job_without_the_key_as_kubernetes_does() {
        let labels: BTreeMap<String, String> = [(s("env"), s("prod"))].into();
        let none = BTreeMap::new();
        for (condition, with, without) in [
            (C::Exists(s("env")), true, false),
            (C::Absent(s("env")), false, true),
            (C::Equals(s("env"), s("prod")), true, false),
            (C::NotEquals(s("env"), s("prod")), false, true),
            (C::NotEquals(s("env"), s("dev")), true, true),
            (C::In(s("env"), vec![s("dev"), s("prod")]), true, false),
            (C::NotIn(s("env"), vec![s("dev")]), true, true),
            (C::NotIn(s("env"), vec![s("prod")]), false, true),
        ] {
            assert_eq!((condition.matches(&labels), condition.matches(&none)), (with, without), "{condition:?}");
        }
    }
}
