//! Edits of a JSON Lines document that leave the rest of its bytes as they are: where a field's
//! value lies in the line (to put a shortened text in its place), and fields added at its end.
//! The line was parsed once already, so the scanner only has to find its way, not check it.

use std::ops::Range;

/// Walks the bytes of one JSON value.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    /// A string from its opening quote: the span with both quotes.
    fn string(&mut self) -> Option<Range<usize>> {
        let start = self.i;
        self.i += 1;
        loop {
            match *self.b.get(self.i)? {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Some(start..self.i);
                }
                _ => self.i += 1,
            }
        }
    }

    /// Any value from its first byte: its span.
    fn value(&mut self) -> Option<Range<usize>> {
        let start = self.i;
        match *self.b.get(self.i)? {
            b'"' => self.string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.b.get(self.i)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(start..self.i);
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while self
                    .b
                    .get(self.i)
                    .is_some_and(|c| !matches!(c, b',' | b'}' | b']') && !c.is_ascii_whitespace())
                {
                    self.i += 1;
                }
                Some(start..self.i)
            }
        }
    }

    /// In the object starting here, the span of the value at `path` (the last, when a key
    /// repeats, as the parser reads it).
    fn find(&mut self, path: &[&str]) -> Option<Range<usize>> {
        let (first, rest) = path.split_first()?;
        let mut found = None;
        let b = self.b;
        self.members(|key, value| {
            if key == *first {
                found = match rest.is_empty() {
                    true => Some(value),
                    false => Scan { b, i: value.start }.find(rest),
                };
            }
        })?;
        found
    }

    /// Calls `each` with every member of the object starting here: its key and its value's
    /// span. `None` when it is no object.
    fn members(&mut self, mut each: impl FnMut(String, Range<usize>)) -> Option<()> {
        self.ws();
        if self.b.get(self.i) != Some(&b'{') {
            return None;
        }
        self.i += 1;
        loop {
            self.ws();
            match *self.b.get(self.i)? {
                b'}' => return Some(()),
                b',' => {
                    self.i += 1;
                    continue;
                }
                _ => {}
            }
            let key = self.string()?;
            let key: String = serde_json::from_slice(&self.b[key]).ok()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return None;
            }
            self.i += 1;
            self.ws();
            let value = self.value()?;
            each(key, value);
        }
    }
}

/// The span of the value of field `name` (a dotted path) in the JSON object `line`.
pub(crate) fn value_span(line: &[u8], name: &str) -> Option<Range<usize>> {
    let path: Vec<&str> = name.split('.').collect();
    Scan { b: line, i: 0 }.find(&path)
}

/// The top-level fields of the JSON object `line`, in order: each key and its value's span (a
/// key that repeats is given once, at its first place, with its last value, as the parser
/// reads it). `None` when `line` is no object.
pub(crate) fn fields(line: &[u8]) -> Option<Vec<(String, Range<usize>)>> {
    let mut out: Vec<(String, Range<usize>)> = Vec::new();
    let mut seen: ahash::AHashMap<String, usize> = ahash::AHashMap::new();
    Scan { b: line, i: 0 }.members(|key, value| match seen.get(&key) {
        Some(&at) => out[at].1 = value,
        None => {
            seen.insert(key.clone(), out.len());
            out.push((key, value));
        }
    })?;
    Some(out)
}

/// `line` (a JSON object, without its line end) with `fields` (names and JSON values) added
/// before its closing brace.
pub(crate) fn with_fields(line: &[u8], fields: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let end = line.iter().rposition(|&c| c == b'}').unwrap_or(line.len());
    let empty = line[..end]
        .iter()
        .rev()
        .find(|c| !c.is_ascii_whitespace())
        .is_some_and(|&c| c == b'{');
    let mut out = Vec::with_capacity(line.len() + 64);
    out.extend_from_slice(&line[..end]);
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 || !empty {
            out.push(b',');
        }
        out.extend_from_slice(serde_json::to_string(k).unwrap_or_default().as_bytes());
        out.push(b':');
        out.extend_from_slice(v);
    }
    out.extend_from_slice(&line[end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_listed_in_order_with_their_values() {
        let line = br#" {"b": {"x": [1, "}"]}, "a":"q\"", "n" :-1.5e3, "b": null ,"e":{}}"#;
        let f = fields(line).unwrap();
        let got: Vec<(&str, &[u8])> = (f.iter())
            .map(|(k, r)| (k.as_str(), &line[r.clone()]))
            .collect();
        let want: [(&str, &[u8]); 4] = [
            ("b", b"null"),
            ("a", br#""q\"""#),
            ("n", b"-1.5e3"),
            ("e", b"{}"),
        ];
        assert_eq!(got, want);
        assert_eq!(fields(b"[1]"), None);
        assert_eq!(fields(b"{}"), Some(Vec::new()));
    }

    #[test]
    fn finds_a_value_among_others_and_nested() {
        let line = br#"{"a": {"text": "no"}, "n": -1.5e3, "l": [1, "]", {"x": "}"}], "text": "a \"q\" b", "m": {"u": "x"}}"#;
        let span = value_span(line, "text").unwrap();
        assert_eq!(&line[span], br#""a \"q\" b""#);
        assert_eq!(&line[value_span(line, "n").unwrap()], b"-1.5e3");
        assert_eq!(&line[value_span(line, "m.u").unwrap()], br#""x""#);
        assert_eq!(&line[value_span(line, "a.text").unwrap()], br#""no""#);
        assert_eq!(value_span(line, "absent"), None);
        assert_eq!(value_span(br#"{"t": 1, "t": 2}"#, "t"), Some(14..15));
        assert_eq!(value_span(br#"{"te\u0078t": "y"}"#, "text"), Some(14..17));
    }

    #[test]
    fn fields_are_added_before_the_closing_brace() {
        let v = br#""x""#.to_vec();
        assert_eq!(
            with_fields(br#"{"a":1}"#, &[("k", v.clone())]),
            br#"{"a":1,"k":"x"}"#
        );
        assert_eq!(with_fields(b"{ }", &[("k", v.clone())]), br#"{ "k":"x"}"#);
        assert_eq!(
            with_fields(br#"{"a":1} "#, &[("k", v), ("n", b"2".to_vec())]),
            br#"{"a":1,"k":"x","n":2} "#
        );
    }
}
