//! The fields a run reads of a JSON Lines document, picked out as the line is parsed: a tree of
//! the wanted (dotted) names walks the object, every other value is skipped unread
//! ([`IgnoredAny`]), and strings without escapes are borrowed from the line, not copied.

use std::borrow::Cow;
use std::fmt;

use polars::prelude::*;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::config::{Config, Keep, ReferenceConfig};
use crate::error::{Error, Result};
use crate::io::shard::Label;

use super::at;

/// A field's value as read from a line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value<'a> {
    Missing,
    Null,
    Bool(bool),
    Int(String),
    Float(f64),
    Str(Cow<'a, str>),
    /// An object or an array, named.
    Other(&'static str),
}

impl Value<'_> {
    /// What it is, for an error message.
    fn kind(&self) -> String {
        match self {
            Value::Missing => "missing".into(),
            Value::Null => "null".into(),
            Value::Bool(_) => "a boolean".into(),
            Value::Int(_) => "an integer".into(),
            Value::Float(_) => "a floating-point number".into(),
            Value::Str(_) => "a string".into(),
            Value::Other(k) => (*k).into(),
        }
    }
}

/// The fields a run reads, as a tree of their dotted paths; leaves are slots.
#[derive(Debug, Default)]
struct Node {
    children: Vec<(String, Child)>,
}

#[derive(Debug, Default)]
struct Child {
    slot: Option<usize>,
    inner: Node,
}

impl Node {
    fn add(&mut self, path: &[&str], slot: usize) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        let i = match self.children.iter().position(|(k, _)| k == first) {
            Some(i) => i,
            None => {
                self.children.push((first.to_string(), Child::default()));
                self.children.len() - 1
            }
        };
        let child = &mut self.children[i].1;
        if rest.is_empty() {
            child.slot.get_or_insert(slot);
        } else {
            child.inner.add(rest, slot);
        }
    }
}

/// Picks named fields out of JSON objects.
#[derive(Debug)]
pub(crate) struct Picker {
    root: Node,
    /// The field name of each slot, as given.
    names: Vec<String>,
    /// Two names of which one is inside the other (`q` and `q.body`): no line can give both a
    /// usable value, so every line is refused with a message saying so.
    nested: Option<(String, String)>,
}

impl Picker {
    pub(crate) fn new(names: &[&str]) -> Picker {
        let mut root = Node::default();
        for (slot, n) in names.iter().enumerate() {
            root.add(&n.split('.').collect::<Vec<_>>(), slot);
        }
        let nested = names.iter().find_map(|a| {
            let inside = names
                .iter()
                .find(|b| b.strip_prefix(a).is_some_and(|rest| rest.starts_with('.')))?;
            Some((a.to_string(), inside.to_string()))
        });
        Picker {
            root,
            names: names.iter().map(|s| s.to_string()).collect(),
            nested,
        }
    }

    /// The values of the fields in `line` (a JSON object), a slot each; an error says what is
    /// wrong with the line.
    pub(crate) fn pick<'a>(&self, line: &'a [u8]) -> std::result::Result<Vec<Value<'a>>, String> {
        if let Some((outer, inner)) = &self.nested {
            return Err(format!(
                "field '{outer}' is read as a value and field '{inner}' inside it too, which \
                 no line can give; name other fields"
            ));
        }
        let mut slots = vec![Value::Missing; self.names.len()];
        let mut de = serde_json::Deserializer::from_slice(line);
        let top = ObjectSeed {
            node: &self.root,
            slots: &mut slots,
            top: true,
        };
        top.deserialize(&mut de)
            .and_then(|()| de.end())
            .map_err(|e| format!("not valid JSON: {e}"))?;
        Ok(slots)
    }
}

/// The top-level keys of a line, for a message about a missing field.
fn keys_of(line: &[u8]) -> String {
    match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(line) {
        Ok(m) if m.is_empty() => "none".into(),
        Ok(m) => m.keys().cloned().collect::<Vec<_>>().join(", "),
        Err(_) => "unknown".into(),
    }
}

/// Deserializes an object, filling the slots of `node`'s fields; a value that is not an object
/// is an error at the top (the line) and fills nothing below it.
struct ObjectSeed<'n, 's, 'a> {
    node: &'n Node,
    slots: &'s mut [Value<'a>],
    top: bool,
}

impl<'de, 'n, 's> DeserializeSeed<'de> for ObjectSeed<'n, 's, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'n, 's> ObjectSeed<'n, 's, 'de> {
    fn not_object<E: de::Error>(&self, what: &str) -> std::result::Result<(), E> {
        if self.top {
            Err(E::custom(format!("the line is {what}, not a JSON object")))
        } else {
            Ok(())
        }
    }
}

impl<'de, 'n, 's> Visitor<'de> for ObjectSeed<'n, 's, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        while let Some(i) = map.next_key_seed(KeySeed(self.node))? {
            match i.map(|i| &self.node.children[i].1) {
                Some(Child { slot: Some(s), .. }) => {
                    self.slots[*s] = map.next_value_seed(LeafSeed)?;
                }
                Some(Child { inner, .. }) => map.next_value_seed(ObjectSeed {
                    node: inner,
                    slots: &mut *self.slots,
                    top: false,
                })?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.not_object("an array")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<(), E> {
        self.not_object("a boolean")
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<(), E> {
        self.not_object("a number")
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<(), E> {
        self.not_object("a number")
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<(), E> {
        self.not_object("a number")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<(), E> {
        self.not_object("a string")
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        self.not_object("null")
    }
}

/// A key: the index of the child of that name, if the run reads it (no allocation when the key
/// has no escapes).
struct KeySeed<'n>(&'n Node);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<usize>;
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, k: &str) -> std::result::Result<Self::Value, E> {
        Ok(self.0.children.iter().position(|(name, _)| name == k))
    }
}

/// A field's value.
struct LeafSeed;

impl<'de> DeserializeSeed<'de> for LeafSeed {
    type Value = Value<'de>;
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LeafSeed {
    type Value = Value<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Self::Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Self::Value, E> {
        Ok(Value::Int(v.to_string()))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Self::Value, E> {
        Ok(Value::Int(v.to_string()))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Self::Value, E> {
        Ok(Value::Float(v))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
        Ok(Value::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
        Ok(Value::Str(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Self::Value, E> {
        Ok(Value::Str(Cow::Owned(v)))
    }
    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Value::Other("an object"))
    }
    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Other("an array"))
    }
}

/// The fields a run reads, their slots, and how each is checked.
pub(super) struct Fields {
    pub(super) picker: Picker,
    pub(super) id: usize,
    pub(super) priority: Option<usize>,
    pub(super) labels: Vec<(Label, usize)>,
    /// Whether a line must hold the id field.
    id_explicit: bool,
    flags: &'static Flags,
}

/// The options that name the text and id fields, for messages.
struct Flags {
    text: &'static str,
    id: &'static str,
    text_hint: &'static str,
    id_hint: &'static str,
}

const RUN_FLAGS: Flags = Flags {
    text: "text-column",
    id: "id-column",
    text_hint: "the text must be a JSON string; name the right field with --text-column",
    id_hint: "choose another field with --id-column",
};

const REFERENCE_FLAGS: Flags = Flags {
    text: "reference-text-column",
    id: "reference-id-column",
    text_hint:
        "an item's text must be a JSON string; name the right field with --reference-text-column",
    id_hint: "choose another field with --reference-id-column",
};

impl Fields {
    /// The fields of a run's input file `file`: the run's columns, but a sealed journal file of
    /// the server's has its own `text` and `id` ([`crate::index::fold`]).
    pub(super) fn new(cfg: &Config, file: &str) -> Fields {
        let journal = crate::index::fold::is_fold_file(file);
        let mut names: Vec<&str> = match journal {
            true => vec!["text", "id"],
            false => vec![&cfg.text_column, &cfg.id_column],
        };
        let priority = match &cfg.keep {
            Keep::Column(c) => {
                names.push(c);
                Some(names.len() - 1)
            }
            _ => None,
        };
        let mut labels = Vec::new();
        for l in Label::ALL {
            if let Some(c) = l.column(cfg) {
                names.push(c);
                labels.push((l, names.len() - 1));
            }
        }
        Fields {
            picker: Picker::new(&names),
            id: 1,
            priority,
            labels,
            id_explicit: journal || cfg.id_column_explicit,
            flags: &RUN_FLAGS,
        }
    }

    /// The fields of a `--reference` file: the item's text and id.
    pub(super) fn reference(cfg: &ReferenceConfig) -> Fields {
        Fields {
            picker: Picker::new(&[&cfg.text_column, &cfg.id_column]),
            id: 1,
            priority: None,
            labels: Vec::new(),
            id_explicit: cfg.id_column_explicit,
            flags: &REFERENCE_FLAGS,
        }
    }
}

/// The columns of a shard, as they are read line by line.
pub(super) struct Columns {
    pub(super) text: StringChunkedBuilder,
    pub(super) id: StringChunkedBuilder,
    pub(super) priority: Vec<Option<f64>>,
    pub(super) labels: Vec<StringChunkedBuilder>,
    pub(super) line: Vec<u64>,
}

impl Columns {
    pub(super) fn new(fields: &Fields, rows: usize) -> Columns {
        let b = |name: &str| StringChunkedBuilder::new(name.into(), rows);
        Columns {
            text: b(&fields.picker.names[0]),
            id: b(&fields.picker.names[fields.id]),
            priority: Vec::with_capacity(rows),
            labels: fields.labels.iter().map(|(l, _)| b(l.alias())).collect(),
            line: Vec::with_capacity(rows),
        }
    }

    /// Adds one document's fields, checking their types.
    pub(super) fn push(
        &mut self,
        fields: &Fields,
        file: &str,
        line: u64,
        doc: &[u8],
    ) -> Result<()> {
        let v = fields.picker.pick(doc).map_err(|msg| at(file, line, msg))?;
        let wrong = |slot: usize, expected: &'static str, hint: &'static str| Error::FieldType {
            file: file.to_string(),
            line,
            field: fields.picker.names[slot].clone(),
            found: v[slot].kind(),
            expected,
            hint,
        };
        match &v[0] {
            Value::Str(s) => self.text.append_value(s),
            Value::Null => self.text.append_null(),
            Value::Missing => {
                return Err(Error::MissingField {
                    file: file.to_string(),
                    line,
                    field: fields.picker.names[0].clone(),
                    present: keys_of(doc),
                    flag: fields.flags.text,
                })
            }
            _ => return Err(wrong(0, "a string", fields.flags.text_hint)),
        }
        match &v[fields.id] {
            Value::Str(s) => self.id.append_value(s),
            Value::Int(s) => self.id.append_value(s),
            Value::Null => self.id.append_null(),
            Value::Missing if fields.id_explicit => {
                return Err(Error::MissingField {
                    file: file.to_string(),
                    line,
                    field: fields.picker.names[fields.id].clone(),
                    present: keys_of(doc),
                    flag: fields.flags.id,
                })
            }
            Value::Missing => self.id.append_null(),
            _ => {
                return Err(wrong(
                    fields.id,
                    "a string or an integer",
                    fields.flags.id_hint,
                ))
            }
        }
        if let Some(p) = fields.priority {
            self.priority.push(match &v[p] {
                Value::Int(s) => s.parse::<f64>().ok(),
                Value::Float(x) => Some(*x),
                Value::Bool(b) => Some(f64::from(u8::from(*b))),
                Value::Null | Value::Missing => None,
                _ => {
                    return Err(wrong(
                        p,
                        "a number (the largest value is kept)",
                        "--keep takes first, longest, a numeric priority field, or FIELD=v1,v2,... to rank the values of a field of labels",
                    ))
                }
            });
        }
        for ((label, slot), b) in fields.labels.iter().zip(&mut self.labels) {
            match &v[*slot] {
                Value::Str(s) => b.append_value(s),
                Value::Int(s) => b.append_value(s),
                Value::Bool(x) => b.append_value(if *x { "true" } else { "false" }),
                Value::Null | Value::Missing => b.append_null(),
                _ => return Err(wrong(*slot, "a string, integer or boolean", label.hint())),
            }
        }
        self.line.push(line);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picker_reads_named_and_nested_fields_and_skips_the_rest() {
        let p = Picker::new(&["text", "id", "metadata.url", "n"]);
        let line = br#"{"id": 7, "skip": {"text": "no"}, "text": "a\u00e9\"b", "metadata": {"x": [1, {"url": 2}], "url": "u"}, "n": 1.5}"#;
        let v = p.pick(line).unwrap();
        assert_eq!(v[0], Value::Str("a\u{e9}\"b".into()));
        assert_eq!(v[1], Value::Int("7".into()));
        assert_eq!(v[2], Value::Str("u".into()));
        assert_eq!(v[3], Value::Float(1.5));
        let v = p.pick(br#"{"metadata": 3, "text": null}"#).unwrap();
        assert_eq!(v[0], Value::Null);
        assert_eq!(v[1], Value::Missing);
        assert_eq!(v[2], Value::Missing);
    }

    #[test]
    fn a_field_inside_another_read_field_is_refused() {
        let p = Picker::new(&["q.body", "q"]);
        let e = p.pick(br#"{"q": {"body": "x"}}"#).unwrap_err();
        assert!(
            e.contains("'q' is read as a value and field 'q.body'"),
            "{e}"
        );
        // A name that only starts alike is another field.
        let p = Picker::new(&["qa", "q"]);
        assert!(p.pick(br#"{"q": "x", "qa": "y"}"#).is_ok());
    }

    #[test]
    fn a_line_that_is_no_object_or_no_json_is_an_error() {
        let p = Picker::new(&["text"]);
        for (line, says) in [
            (&b"[1, 2]"[..], "an array, not a JSON object"),
            (b"\"text\"", "a string, not a JSON object"),
            (b"{\"text\": \"a\"", "not valid JSON"),
            (b"{\"text\": \"a\"} x", "trailing characters"),
            (b"{\"text\": \"\xff\"}", "not valid JSON"),
        ] {
            let e = p.pick(line).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }
}
