//! `corpus-dedup explain`: one document's cluster, as text and as JSON.

use crate::common::*;

#[test]
fn explain_shows_the_cluster_with_similarities_and_a_diff() {
    let dir = temp_dir("explain");
    let input = dir.join("in");
    let (glob, _) = three_shards(&input);
    let out = dir.join("out");
    run_ok(&glob, &out, &[]);
    let m = manifest(&out);
    // A dropped document whose text differs from its keeper's.
    let dropped = m
        .iter()
        .find(|r| !r.keep && r.similarity.is_some_and(|s| s < 0.99))
        .unwrap();
    let keeper = dropped.duplicate_of.clone().unwrap();
    let size = m
        .iter()
        .filter(|r| r.cluster_id == dropped.cluster_id)
        .count();

    let o = cd(["explain", "--json", "--id", &dropped.id])
        .arg(&out)
        .ok();
    let e: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(e["keep"], false);
    assert_eq!(e["keeper"]["id"], keeper.as_str());
    assert_eq!(e["cluster_size"], size);
    let members = e["members"].as_array().unwrap();
    assert_eq!(members[0]["id"], keeper.as_str());
    assert_eq!(members[0]["keep"], true);
    let me = &members[1];
    assert_eq!(me["id"], dropped.id.as_str());
    assert_eq!(
        me["similarity"].as_f64().unwrap() as f32,
        dropped.similarity.unwrap()
    );
    let (est, jac) = (
        me["estimate"].as_f64().unwrap(),
        me["jaccard"].as_f64().unwrap(),
    );
    assert!((0.0..=1.0).contains(&est) && (0.0..=1.0).contains(&jac));
    assert!((est - jac).abs() < 0.15, "estimate {est}, jaccard {jac}");
    let ops: Vec<&str> = me["diff"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["op"].as_str().unwrap())
        .collect();
    assert!(
        ops.iter().any(|o| *o == "added" || *o == "removed"),
        "{ops:?}"
    );

    // Text, piped: plain diff markers, no colour codes.
    let o = cd(["explain", "--id", &dropped.id]).arg(&out).ok();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("{} is dropped", dropped.id)),
        "{text}"
    );
    assert!(
        text.contains(&format!(": {keeper}, kept, and the ")),
        "{text}"
    );
    assert!(text.contains("documents dropped against it"), "{text}");
    assert!(text.contains("jaccard"), "{text}");
    assert!(text.contains("{+") || text.contains("[-"), "{text}");
    assert!(!text.contains('\x1b'), "colour codes in piped output");

    // A kept document without duplicates, and an id that is not there.
    let single = m.iter().find(|r| r.cluster_id.is_none()).unwrap();
    let o = cd(["explain", "--id", &single.id]).arg(&out).ok();
    assert!(String::from_utf8_lossy(&o.stdout).contains("no near-duplicate"));
    let err = cd(["explain", "--id", "no-such-id"]).arg(&out).fails();
    assert!(err.contains("no document with id 'no-such-id'"), "{err}");
}

/// A document dropped against an earlier night: its keeper's text is read from the shard the
/// index recorded for it, and a shard changed or gone since is named.
#[test]
fn explain_reads_an_earlier_nights_keeper_from_its_shard() {
    use corpus_dedup::synth::{Doc, Kind};
    let dir = temp_dir("explain-nights");
    let page: String = (0..120).map(|i| format!("w{} ", i * 7 % 113)).collect();
    let doc = |id: &str, text: String| Doc {
        id: id.into(),
        text,
        source: 0,
        kind: Kind::Base,
    };
    let night = |n: usize, docs: &[Doc]| {
        let d = dir.join(format!("in{n}"));
        std::fs::create_dir_all(&d).unwrap();
        write_docs(&d.join("s.parquet"), docs);
        let out = dir.join(format!("out{n}"));
        run_cmd(&format!("{}/s.parquet", d.display()), &out, &[])
            .arg("--index")
            .arg(dir.join("index"))
            .args(["--batch", &format!("night-{n}")])
            .ok();
        out
    };
    let filler = doc(
        "other",
        "an unrelated page about something else entirely".into(),
    );
    night(1, &[filler.clone(), doc("page-1", page.clone())]);
    let out = night(2, &[doc("page-2", format!("{page} one more line"))]);
    let rows = manifest(&out);
    assert_eq!(rows[0].duplicate_of.as_deref(), Some("page-1"));
    let shard = dir.join("in1").join("s.parquet");

    let explain = || cd(["explain", "--id", "page-2"]).arg(&out).ok().stdout;
    let text = String::from_utf8(explain()).unwrap();
    let from = format!("read from {}:1", shard.display());
    assert!(text.contains(&from), "{text}");
    assert!(text.contains("{+one more line+}"), "{text}");
    let json = cd(["explain", "--json", "--id", "page-2"])
        .arg(&out)
        .ok()
        .stdout;
    let e: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(e["members"][0]["id"], "page-1");
    assert_eq!(e["members"][0]["keep"], true);
    assert!(e["members"][1]["jaccard"].as_f64().unwrap() >= 0.8, "{e}");

    // The earlier shard rewritten, then gone: said, naming the shard.
    write_docs(&shard, &[doc("page-1", page.clone()), filler]);
    let text = String::from_utf8(explain()).unwrap();
    assert!(text.contains("its text cannot be shown"), "{text}");
    assert!(text.contains(&shard.display().to_string()), "{text}");
    std::fs::remove_file(&shard).unwrap();
    let text = String::from_utf8(explain()).unwrap();
    assert!(text.contains("its text cannot be shown"), "{text}");
    assert!(text.contains(&shard.display().to_string()), "{text}");
}
