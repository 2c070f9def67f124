//! `apply --format`: a shard written in the other format.
//!
//! - Parquet to JSON Lines: each row an object, its columns as fields in column order (nested
//!   lists and structs as JSON arrays and objects, numbers and booleans as JSON ones, any other
//!   type as its text).
//! - JSON Lines to Parquet: each line's top-level fields become columns, in the order they first
//!   appear in the file. A column's type holds every value it has in the file: booleans, 64-bit
//!   integers, floats (integers and floats mixed), strings; a field holding objects or arrays, or
//!   values of more than one kind, is a string column of each value's JSON text as it was in the
//!   line. A missing field is null. The types are read from the whole file first (a first pass),
//!   so every row group of the output has the same columns.

use std::io::Write;

use polars::prelude::*;

use crate::error::{Error, Result};
use crate::io::jsonl::edit;

/// Rows per row group of a Parquet file written from JSON Lines.
const ROWS_PER_GROUP: usize = 65_536;

/// What a field's values are, as a Parquet column type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Int,
    Float,
    Str,
    /// Objects, arrays or mixed kinds: the JSON text of each value.
    Json,
}

impl Kind {
    /// The kind of one JSON value's bytes.
    fn of(v: &[u8]) -> Kind {
        match v.first() {
            Some(b'"') => Kind::Str,
            Some(b't' | b'f') => Kind::Bool,
            Some(b'n') => Kind::Null,
            Some(b'{' | b'[') => Kind::Json,
            _ if parse::<i64>(v).is_some() => Kind::Int,
            _ => Kind::Float,
        }
    }

    /// The kind that holds values of both.
    fn join(self, other: Kind) -> Kind {
        match (self, other) {
            (a, b) if a == b => a,
            (Kind::Null, k) | (k, Kind::Null) => k,
            (Kind::Int, Kind::Float) | (Kind::Float, Kind::Int) => Kind::Float,
            _ => Kind::Json,
        }
    }
}

fn parse<T: std::str::FromStr>(v: &[u8]) -> Option<T> {
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// The columns of JSON objects: names in the order they first appear, each with its kind.
#[derive(Debug, Default, Clone)]
pub(super) struct Columns {
    cols: Vec<(String, Kind)>,
    at: ahash::AHashMap<String, usize>,
}

impl Columns {
    /// Takes in the fields of one JSON object line (`file`'s, for an error).
    pub(super) fn add(&mut self, line: &[u8], file: &str) -> Result<()> {
        for (name, span) in fields_of(line, file)? {
            let kind = Kind::of(&line[span]);
            self.column(&name, kind);
        }
        Ok(())
    }

    /// Takes in the columns of `other`, after its own.
    pub(super) fn join(&mut self, other: &Columns) {
        for (name, kind) in &other.cols {
            self.column(name, *kind);
        }
    }

    fn column(&mut self, name: &str, kind: Kind) {
        match self.at.get(name) {
            Some(&i) => self.cols[i].1 = self.cols[i].1.join(kind),
            None => {
                self.at.insert(name.to_string(), self.cols.len());
                self.cols.push((name.to_string(), kind));
            }
        }
    }

    /// The Parquet schema (a column of only nulls is a string column).
    pub(super) fn schema(&self) -> Schema {
        (self.cols.iter())
            .map(|(n, k)| {
                let dt = match k {
                    Kind::Bool => DataType::Boolean,
                    Kind::Int => DataType::Int64,
                    Kind::Float => DataType::Float64,
                    Kind::Null | Kind::Str | Kind::Json => DataType::String,
                };
                Field::new(n.as_str().into(), dt)
            })
            .collect()
    }
}

fn fields_of(line: &[u8], file: &str) -> Result<Vec<(String, std::ops::Range<usize>)>> {
    // The line was parsed when the run read it: a line that is no object here changed since.
    edit::fields(line).ok_or_else(|| Error::ShardChanged {
        file: file.to_string(),
        what: "a kept line is no longer a JSON object".into(),
    })
}

/// One column's values being gathered.
enum Values {
    Bool(Vec<Option<bool>>),
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Str(Vec<Option<String>>),
}

/// JSON object lines gathered into columns of `columns`' types and written as Parquet row
/// groups of [`ROWS_PER_GROUP`] rows.
pub(super) struct ToParquet<W: Write> {
    columns: Columns,
    values: Vec<Values>,
    rows: usize,
    writer: polars::io::parquet::write::BatchedWriter<W>,
    file: String,
    path: String,
}

impl<W: Write> ToParquet<W> {
    /// `file`: the input (for errors); `path`: the output.
    pub(super) fn new(
        w: W,
        columns: Columns,
        tag: &str,
        file: &str,
        path: String,
    ) -> Result<ToParquet<W>> {
        let schema = columns.schema();
        let writer =
            super::shard_writer(w, ParquetCompression::Zstd(None), ROWS_PER_GROUP, tag, None)
                .batched(&schema)
                .map_err(|e| Error::Output {
                    path: path.clone(),
                    source: e.into(),
                })?;
        let mut out = ToParquet {
            columns,
            values: Vec::new(),
            rows: 0,
            writer,
            file: file.to_string(),
            path,
        };
        out.values = out.empty();
        Ok(out)
    }

    fn empty(&self) -> Vec<Values> {
        (self.columns.cols.iter())
            .map(|(_, k)| match k {
                Kind::Bool => Values::Bool(Vec::new()),
                Kind::Int => Values::Int(Vec::new()),
                Kind::Float => Values::Float(Vec::new()),
                Kind::Null | Kind::Str | Kind::Json => Values::Str(Vec::new()),
            })
            .collect()
    }

    /// Adds one JSON object line, `copies` times.
    pub(super) fn line(&mut self, line: &[u8], copies: u32) -> Result<()> {
        let mut cells: Vec<Option<&[u8]>> = vec![None; self.columns.cols.len()];
        for (name, span) in fields_of(line, &self.file)? {
            if let Some(&i) = self.columns.at.get(&name) {
                cells[i] = Some(&line[span]);
            }
        }
        for _ in 0..copies {
            for ((v, cell), (_, kind)) in self.values.iter_mut().zip(&cells).zip(&self.columns.cols)
            {
                let cell = cell.filter(|c| *c != b"null");
                match v {
                    Values::Bool(b) => b.push(cell.map(|c| c == b"true")),
                    Values::Int(x) => x.push(cell.and_then(parse)),
                    Values::Float(x) => x.push(cell.and_then(parse)),
                    Values::Str(s) => s.push(cell.map(|c| {
                        match kind {
                            Kind::Json => String::from_utf8_lossy(c).into_owned(),
                            _ => serde_json::from_slice(c)
                                .unwrap_or_else(|_| String::from_utf8_lossy(c).into_owned()),
                        }
                    })),
                }
            }
            self.rows += 1;
            if self.rows == ROWS_PER_GROUP {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let empty = self.empty();
        let values = std::mem::replace(&mut self.values, empty);
        let columns: Vec<Column> = (self.columns.cols.iter().zip(values))
            .map(|((name, _), v)| {
                let name = name.as_str().into();
                match v {
                    Values::Bool(x) => Column::new(name, x),
                    Values::Int(x) => Column::new(name, x),
                    Values::Float(x) => Column::new(name, x),
                    Values::Str(x) => Column::new(name, x),
                }
            })
            .collect();
        let df = DataFrame::new(self.rows, columns).map_err(|e| self.err(e))?;
        self.writer.write_batch(&df).map_err(|e| self.err(e))?;
        self.rows = 0;
        Ok(())
    }

    fn err(&self, e: PolarsError) -> Error {
        Error::Output {
            path: self.path.clone(),
            source: e.into(),
        }
    }

    pub(super) fn finish(mut self) -> Result<()> {
        self.flush()?;
        self.writer.finish().map(|_| ()).map_err(|e| Error::Output {
            path: self.path.clone(),
            source: e.into(),
        })
    }
}

/// Row `i` of `df` as a JSON object line (without its line end): its columns as fields.
pub(super) fn row_as_json(df: &DataFrame, i: usize, out: &mut Vec<u8>) -> Result<()> {
    out.push(b'{');
    for (k, c) in df.columns().iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        let v = c.get(i).map_err(|e| Error::Internal(e.to_string()))?;
        string(c.name().as_str(), out);
        out.push(b':');
        write_json(v, out);
    }
    out.push(b'}');
    Ok(())
}

/// A Parquet (or manifest) value as JSON text.
pub(super) fn json_text(v: AnyValue) -> Vec<u8> {
    let mut out = Vec::new();
    write_json(v, &mut out);
    out
}

/// Writes a Parquet (or manifest) value as JSON: a struct's fields in their order, a float
/// that is not finite as null, a type JSON has no form for as its text.
fn write_json(v: AnyValue, out: &mut Vec<u8>) {
    match v {
        AnyValue::Null => out.extend_from_slice(b"null"),
        AnyValue::Boolean(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        AnyValue::String(s) => string(s, out),
        AnyValue::StringOwned(s) => string(s.as_str(), out),
        AnyValue::UInt8(_)
        | AnyValue::UInt16(_)
        | AnyValue::UInt32(_)
        | AnyValue::UInt64(_)
        | AnyValue::Int8(_)
        | AnyValue::Int16(_)
        | AnyValue::Int32(_)
        | AnyValue::Int64(_) => out.extend_from_slice(v.to_string().as_bytes()),
        AnyValue::Float32(x) => float(f64::from(x), out),
        AnyValue::Float64(x) => float(x, out),
        AnyValue::List(s) => {
            out.push(b'[');
            for (i, x) in s.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json(x, out);
            }
            out.push(b']');
        }
        AnyValue::Struct(_, _, fields) => object(fields, v._iter_struct_av(), out),
        AnyValue::StructOwned(b) => {
            let (values, fields) = *b;
            object(&fields, values.into_iter(), out);
        }
        other => string(&other.to_string(), out),
    }
}

/// A float as a JSON number, or null when it is not finite.
fn float(x: f64, out: &mut Vec<u8>) {
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &x.is_finite().then_some(x));
}

fn string(s: &str, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(&mut *out, s);
}

/// A struct's fields and values as a JSON object, fields in order.
fn object<'a>(fields: &[Field], values: impl Iterator<Item = AnyValue<'a>>, out: &mut Vec<u8>) {
    out.push(b'{');
    for (i, (f, x)) in fields.iter().zip(values).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(f.name().as_str(), out);
        out.push(b':');
        write_json(x, out);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_as_json_with_struct_fields_in_order() {
        let s = StructChunked::from_series(
            "s".into(),
            1,
            [
                Series::new("z".into(), [1i32]),
                Series::new("a".into(), ["q\"".to_string()]),
            ]
            .iter(),
        )
        .unwrap()
        .into_series();
        let text = |v: AnyValue| String::from_utf8(json_text(v)).unwrap();
        assert_eq!(text(s.get(0).unwrap()), r#"{"z":1,"a":"q\""}"#);
        assert_eq!(text(AnyValue::Float64(f64::NAN)), "null");
        assert_eq!(text(AnyValue::Float32(0.5)), "0.5");
        let list = Series::new("l".into(), [Some(1i64), None]);
        assert_eq!(text(AnyValue::List(list)), "[1,null]");
    }

    #[test]
    fn kinds_join_to_the_type_that_holds_every_value() {
        let kind = |v: &str| Kind::of(v.as_bytes());
        assert_eq!(kind("12"), Kind::Int);
        assert_eq!(kind("-1.5e3"), Kind::Float);
        assert_eq!(kind("99999999999999999999"), Kind::Float);
        assert_eq!(kind("\"x\""), Kind::Str);
        assert_eq!(kind("[1]"), Kind::Json);
        assert_eq!(Kind::Int.join(Kind::Float), Kind::Float);
        assert_eq!(Kind::Null.join(Kind::Bool), Kind::Bool);
        assert_eq!(Kind::Str.join(Kind::Int), Kind::Json);
        let mut c = Columns::default();
        c.add(br#"{"a": 1, "b": null}"#, "f").unwrap();
        c.add(br#"{"c": {"x": 1}, "a": 2.5, "b": "s"}"#, "f")
            .unwrap();
        let s = c.schema();
        let got: Vec<(&str, &DataType)> = s.iter().map(|(n, t)| (n.as_str(), t)).collect();
        assert_eq!(
            got,
            [
                ("a", &DataType::Float64),
                ("b", &DataType::String),
                ("c", &DataType::String)
            ]
        );
    }
}
