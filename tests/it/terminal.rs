//! Corpus text never reaches a terminal raw: `explain` (text and JSON), the run's JSON line and
//! error messages show the control characters of texts, ids and file names as escapes.

use std::path::Path;

use crate::common::*;
use corpus_dedup::synth::{Doc, Kind};

const OSC: &str = "\u{1b}]0;pwned\u{7}";
const CSI: &str = "\u{1b}[2J";
const BIDI: &str = "\u{202e}";
const NUL: &str = "\u{0}";

/// No character a terminal would act on: ESC, BEL, NUL, C1, bidi overrides.
fn assert_inert(what: &str, s: &str) {
    let bad = |c: char| {
        (c < ' ' && c != '\n' && c != '\t') || ('\u{7f}'..='\u{9f}').contains(&c) || c == '\u{202e}'
    };
    assert!(
        !s.chars().any(bad),
        "{what} emits a control character: {s:?}"
    );
}

fn doc(id: &str, text: String) -> Doc {
    Doc {
        id: id.to_string(),
        text,
        source: 0,
        kind: Kind::Base,
    }
}

#[test]
fn hostile_texts_ids_and_file_names_are_shown_not_emitted() {
    let dir = temp_dir("terminal");
    let base: String = (0..80).map(|i| format!("word{i} ")).collect();
    // (An argument cannot hold NUL, so the id explain is asked for has none; the texts do.)
    let ids = [format!("a{OSC}"), format!("b{BIDI}{CSI}")];
    let docs = [
        doc(&ids[0], format!("{base}{OSC}{CSI} end")),
        doc(&ids[1], format!("{base}{BIDI}{NUL} other end")),
    ];
    // A shard whose very name holds an escape sequence.
    let shard = dir.join(format!("shard{OSC}.parquet"));
    write_docs(&shard, &docs);
    let input = shard.display().to_string();
    let out = dir.join("out");
    let o = run_ok(&input, &out, &[]);
    assert_inert("the run's JSON line", &String::from_utf8_lossy(&o.stdout));
    assert_eq!(manifest(&out).iter().filter(|r| !r.keep).count(), 1);

    let explain = |json: bool| {
        let mut c = cd(["explain"]).arg(&out).args(["--id", &ids[1]]);
        if json {
            c = c.arg("--json");
        }
        String::from_utf8(c.ok().stdout).unwrap()
    };
    let text = explain(false);
    assert_inert("explain", &text);
    for shown in [
        "a\\x1b]0;pwned\\x07",
        "b\\u{202e}\\x1b[2J",
        "{+\\u{202e}\\x00",
        "shard\\x1b]0;pwned\\x07.parquet",
    ] {
        assert!(text.contains(shown), "{shown} not in {text}");
    }
    // The JSON is the same value, with the characters escaped.
    let json = explain(true);
    assert_inert("explain --json", &json);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["id"], ids[1].as_str());

    // Errors quoting an id, and a file name.
    let twice = dir.join("twice.parquet");
    let id = format!("{}{NUL}", ids[1]);
    write_docs(&twice, &[doc(&id, "x".into()), doc(&id, "y".into())]);
    let e = run_cmd(&twice.display().to_string(), &dir.join("x"), &[]).fails();
    assert_inert("the duplicate-id error", &e);
    assert!(e.contains("b\\u{202e}\\x1b[2J\\x00"), "{e}");
    let e = run_cmd(&input, &dir.join("y"), &["--text-column", "body"]).fails();
    assert_inert("the missing-column error", &e);
    assert!(e.contains("shard\\x1b]0;pwned\\x07.parquet"), "{e}");
    assert!(!Path::new(&dir.join("y")).join("manifest.parquet").exists());
}
