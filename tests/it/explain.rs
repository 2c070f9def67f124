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
