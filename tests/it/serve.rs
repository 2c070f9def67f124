//! `corpus-dedup serve` driven over HTTP by a real client: the nightly run's decisions one text at
//! a time, concurrent adds, kill -9 after an acknowledgement, removals, a nightly run while it
//! serves, its adds folded into the next nightly batch, bad requests, the token and unsafe
//! starts.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Child;

use crate::common::*;

/// A running server, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve --index INDEX --listen 127.0.0.1:0 EXTRA...`, once it says where it listens.
fn start(index: &Path, extra: &[&str]) -> Server {
    let mut child = cd(["serve", "--index"])
        .arg(index)
        .args(["--listen", "127.0.0.1:0", "--threads", "2"])
        .args(extra)
        .spawn();
    let mut line = String::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    while stderr.read_line(&mut line).unwrap() > 0 && !line.contains("serving") {
        line.clear();
    }
    // The rest of what it says is drained, so it never writes to a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let url = line
        .trim()
        .rsplit_once(" on ")
        .map(|(_, u)| u.to_string())
        .unwrap_or_else(|| panic!("the server did not start: {line}"));
    Server { child, url }
}

impl Server {
    /// `METHOD PATH` with `body` (and the bearer `token`): status and JSON answer.
    fn call(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
        token: Option<&str>,
    ) -> (u16, serde_json::Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let url = format!("{}{path}", self.url);
        let auth = format!("Bearer {}", token.unwrap_or(""));
        let mut r = match method {
            "POST" => agent.post(&url).header("Authorization", &auth).send(body),
            "DELETE" => agent.delete(&url).header("Authorization", &auth).call(),
            _ => agent.get(&url).header("Authorization", &auth).call(),
        }
        .unwrap();
        let status = r.status().as_u16();
        let text = r.body_mut().read_to_string().unwrap();
        (status, serde_json::from_str(&text).unwrap_or_default())
    }

    fn post(&self, path: &str, body: serde_json::Value) -> serde_json::Value {
        let (status, answer) = self.call("POST", path, body.to_string().as_bytes(), None);
        assert_eq!(status, 200, "{answer}");
        answer
    }
}

/// (id, keep, duplicate_of) of each row of a manifest.
fn decisions(out: &Path) -> Vec<(String, bool, Option<String>)> {
    let df = read_df(&out.join("manifest.parquet"));
    let ids = str_column(&df, "id");
    let keep = df.column("keep").unwrap().bool().unwrap().clone();
    let of = df.column("duplicate_of").unwrap().str().unwrap().clone();
    (0..df.height())
        .map(|i| {
            let kept = keep.get(i).unwrap();
            (ids[i].to_string(), kept, of.get(i).map(str::to_string))
        })
        .collect()
}

/// A document's `--partition-by part` value, by its place in [`three_shards`]' documents.
type Part = fn(usize) -> Option<&'static str>;

/// Night 1 (the English shard) indexed with `args`, then night 2 (every shard, night 1's again
/// among them) decided by a nightly run over a copy of that index, and the same texts sent one
/// at a time to `/add` of a server on the index: each answer must be the nightly run's keep/drop
/// and `duplicate_of`. With `part`, the shards have a `part` column of its values, the runs
/// `--partition-by part` and each request its `"partition"`. Returns the server, its index,
/// night 2's documents and how many it kept.
fn night_two_sent_one_at_a_time(
    dir: &Path,
    args: &[&str],
    part: Option<Part>,
) -> (
    Server,
    std::path::PathBuf,
    Vec<corpus_dedup::synth::Doc>,
    usize,
) {
    let (all, docs) = three_shards(&dir.join("gen"));
    let mut args = args.to_vec();
    if let Some(part) = part {
        // The same shards, each with its documents' values.
        for (file, prefix) in [("a-en", "en"), ("b-mixed", "mx"), ("c-zh", "zh")] {
            let mine: Vec<usize> = (0..docs.len())
                .filter(|&i| docs[i].id.starts_with(prefix))
                .collect();
            let id: Vec<&str> = mine.iter().map(|&i| docs[i].id.as_str()).collect();
            let text: Vec<&str> = mine.iter().map(|&i| docs[i].text.as_str()).collect();
            let values: Vec<Option<&str>> = mine.iter().map(|&i| part(i)).collect();
            let column = polars::prelude::Column::new("part".into(), values);
            write_shard(
                &dir.join(format!("gen/{file}.parquet")),
                &id,
                &text,
                vec![column],
            );
        }
        args.extend(["--partition-by", "part"]);
    }
    let args = &args[..];
    let night1 = dir.join("gen/a-en.parquet").display().to_string();
    let (index, reference) = (dir.join("index"), dir.join("reference"));
    let i = index.display().to_string();
    let n1 = [&["--index", i.as_str(), "--batch", "n1"][..], args].concat();
    run_ok(&night1, &dir.join("n1"), &n1);
    copy_dir(&index, &reference);
    let r = reference.display().to_string();
    let n2 = [&["--index", r.as_str(), "--batch", "n2"][..], args].concat();
    run_ok(&all, &dir.join("n2"), &n2);
    let nightly = decisions(&dir.join("n2"));

    let server = start(&index, &[]);
    let (mut batches, mut near) = (std::collections::BTreeSet::new(), 0);
    for (i, (d, (id, keep, of))) in docs.iter().zip(&nightly).enumerate() {
        assert_eq!(&d.id, id);
        let mut request = serde_json::json!({"id": d.id, "text": d.text});
        if let Some(part) = part {
            request["partition"] = serde_json::json!(part(i));
        }
        let a = server.post("/add", request);
        assert_eq!(a["duplicate"], !keep, "{id}: {a}");
        assert_eq!(a["added"], *keep, "{id}: {a}");
        assert_eq!(a["duplicate_of"].as_str(), of.as_deref(), "{id}: {a}");
        batches.extend(a["batch"].as_str().map(str::to_string));
        near += usize::from(a["similarity"].as_f64().is_some_and(|s| s < 1.0));
    }
    let dropped = nightly.iter().filter(|r| !r.1).count();
    assert!(dropped > 50, "{dropped}");
    // Some were dropped against night 1's batch, some against texts added online.
    assert_eq!(batches.len(), 2, "{batches:?}");
    assert!(near > 10, "{near}");
    (server, index, docs, nightly.len() - dropped)
}

#[test]
fn serve_decides_as_the_nightly_run_and_keeps_what_it_acknowledged() {
    let dir = temp_dir("serve");
    let (server, index, docs, kept) = night_two_sent_one_at_a_time(&dir, &[], None);
    let stats = server.post_stats();
    assert_eq!(stats["added"], kept);

    // 32 identical new texts at once: exactly one is retained; the others name it.
    let text = "a text no night has seen, sent thirty-two times at the same moment by clients";
    let answers: Vec<serde_json::Value> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..32)
            .map(|i| {
                let server = &server;
                s.spawn(move || {
                    server.post(
                        "/add",
                        serde_json::json!({"id": format!("c{i}"), "text": text}),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let added: Vec<&serde_json::Value> = answers.iter().filter(|a| a["added"] == true).collect();
    assert_eq!(added.len(), 1, "{answers:?}");
    let first = added[0]["id"].as_str().unwrap().to_string();
    assert!(answers
        .iter()
        .filter(|a| a["added"] == false)
        .all(|a| a["duplicate_of"] == first.as_str() && a["batch"] == "online"));
    // A check retains nothing; an array gets an array.
    let checks = server.post(
        "/check",
        serde_json::json!([{"id": "q1", "text": text}, {"id": "q2", "text": "something else entirely, unseen before"}]),
    );
    assert_eq!(checks[0]["duplicate_of"], first.as_str());
    assert_eq!(checks[1]["duplicate"], false);
    assert_eq!(
        server.post_stats()["online_documents"],
        stats["online_documents"].as_u64().unwrap() + 1
    );

    // kill -9 after the acknowledgement: the add is there on restart.
    drop(server);
    let server = start(&index, &[]);
    let a = server.post("/check", serde_json::json!({"text": text}));
    assert_eq!(a["duplicate_of"], first.as_str(), "{a}");

    // A removed document matches no more (one added online, one indexed); an unknown id is 404.
    let (status, _) = server.call("DELETE", &format!("/documents/{first}"), b"", None);
    assert_eq!(status, 200);
    assert_eq!(
        server.post("/check", serde_json::json!({"text": text}))["duplicate"],
        false
    );
    let (status, _) = server.call("DELETE", "/documents/no-such-id", b"", None);
    assert_eq!(status, 404);
    let kept_en = &docs[0];
    let before = server.post("/check", serde_json::json!({"text": kept_en.text}));
    assert_eq!(before["duplicate_of"], kept_en.id.as_str(), "{before}");
    let (status, _) = server.call("DELETE", &format!("/documents/{}", kept_en.id), b"", None);
    assert_eq!(status, 200);
    let after = server.post("/check", serde_json::json!({"text": kept_en.text}));
    assert_ne!(after["duplicate_of"], kept_en.id.as_str(), "{after}");

    // A nightly run while it serves (the server holds no index lock): its batch is searched at
    // the next request, without a restart.
    let fresh = text_shard(
        &dir.join("n3in"),
        &[
            "a third night brings a page about tide pools and their snails, crabs and anemones"
                .to_string(),
        ],
    );
    run_ok(
        &fresh,
        &dir.join("n3"),
        &["--index", &index.display().to_string(), "--batch", "n3"],
    );
    let a = server.post(
        "/check",
        serde_json::json!({"text": "a third night brings a page about tide pools and their snails, crabs and anemones"}),
    );
    assert_eq!(
        (a["batch"].as_str(), a["duplicate_of"].as_str()),
        (Some("n3"), Some("d0")),
        "{a}"
    );
    // Removals outlive a restart.
    drop(server);
    let server = start(&index, &[]);
    assert_eq!(
        server.post("/check", serde_json::json!({"text": text}))["duplicate"],
        false
    );

    // SIGTERM: it drains and exits cleanly.
    let mut server = server;
    unsafe_term(&server.child);
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn serve_decides_as_a_simhash_nightly_run() {
    let dir = temp_dir("serve-simhash");
    let sim = ["--method", "simhash", "--simhash-df-sample", "100"];
    let (server, index, _, kept) = night_two_sent_one_at_a_time(&dir, &sim, None);
    assert_eq!(server.post_stats()["added"], kept);
    // On restart the fingerprints are made again from the journal, through the same filter.
    drop(server);
    let server = start(&index, &[]);
    assert_eq!(server.post_stats()["online_documents"], kept);
}

#[test]
fn serve_decides_as_a_partitioned_nightly_run() {
    let dir = temp_dir("serve-partition");
    let part: Part = |i| match i % 5 {
        0 => None,
        1 | 2 => Some("p1"),
        _ => Some("p2"),
    };
    let (server, index, docs, kept) = night_two_sent_one_at_a_time(&dir, &[], Some(part));
    assert_eq!(server.post_stats()["added"], kept);
    // A text duplicates only what is retained in its partition: one night 1 kept (indexed) and
    // one night 2 kept (added online), each checked with its own value and with a value no
    // document has.
    let kept_in = |night: &str, from: usize| {
        let rows = decisions(&dir.join(night));
        (from..rows.len())
            .find(|&i| rows[i].1 && part(i).is_some())
            .unwrap()
    };
    for i in [kept_in("n1", 0), kept_in("n2", 160)] {
        let check = |value: Option<&str>| {
            let request = serde_json::json!({"text": docs[i].text, "partition": value});
            server.post("/check", request)
        };
        let mine = check(part(i));
        assert_eq!(
            mine["duplicate_of"].as_str(),
            Some(docs[i].id.as_str()),
            "{mine}"
        );
        assert_eq!(check(Some("p9"))["duplicate"], false);
    }
    // A request must name its value, and only for a partitioned index.
    let (status, answer) = server.call("POST", "/check", br#"{"text": "a"}"#, None);
    assert_eq!(status, 400);
    assert!(
        answer["error"].as_str().unwrap().contains("`part`"),
        "{answer}"
    );
    let (status, _) = server.call(
        "POST",
        "/check",
        br#"{"text": "a", "partition": 1.5}"#,
        None,
    );
    assert_eq!(status, 400);

    // The journal keeps each add's value: a restart, then a nightly run that folds the adds in
    // (reading `part` from the journal), keep them in their partitions.
    drop(server);
    let server = start(&index, &[]);
    assert_eq!(server.post_stats()["online_documents"], kept);
    let shard = write_shard(
        &dir.join("n3in/s.parquet"),
        &["d0"],
        &["a third night's page, about tide pools and their snails, crabs and anemones"],
        vec![polars::prelude::Column::new("part".into(), ["p1"])],
    );
    let ix = index.display().to_string();
    run_ok(
        &shard,
        &dir.join("n3"),
        &["--index", &ix, "--batch", "n3", "--partition-by", "part"],
    );
    let online = kept_in("n2", 160);
    let d = &docs[online];
    let mine = server.post(
        "/check",
        serde_json::json!({"text": d.text, "partition": part(online)}),
    );
    assert_eq!(
        (mine["batch"].as_str(), mine["duplicate_of"].as_str()),
        (Some("n3"), Some(d.id.as_str())),
        "{mine}"
    );
    let theirs = server.post(
        "/check",
        serde_json::json!({"text": d.text, "partition": "p9"}),
    );
    assert_eq!(theirs["duplicate"], false, "{theirs}");
}

#[test]
fn online_adds_are_folded_into_the_next_nightly_batch() {
    let dir = temp_dir("serve-fold");
    let (_, docs) = three_shards(&dir.join("gen"));
    let index = dir.join("index");
    let ix = index.display().to_string();
    let night = |input: &str, out: &str, batch: &str| {
        run_ok(input, &dir.join(out), &["--index", &ix, "--batch", batch]);
        decisions(&dir.join(out))
    };
    night(
        &dir.join("gen/a-en.parquet").display().to_string(),
        "n1",
        "n1",
    );
    let server = start(&index, &[]);
    let mut retained = Vec::new();
    for d in docs.iter().filter(|d| d.id.starts_with("mx")) {
        let a = server.post("/add", serde_json::json!({"id": d.id, "text": d.text}));
        if a["added"] == true {
            retained.push(d);
        }
    }
    assert!(retained.len() > 20, "{}", retained.len());

    // Night 2, while the server runs: the adds come first in its manifest, all kept, and
    // tonight's copies of them are dropped against them.
    let copies: Vec<String> = retained.iter().take(5).map(|d| d.text.clone()).collect();
    let input = text_shard(&dir.join("n2in"), &copies);
    let n2 = night(&input, "n2", "n2");
    let (folded, tonight) = n2.split_at(retained.len());
    let expected: Vec<(&str, bool)> = retained.iter().map(|d| (d.id.as_str(), true)).collect();
    let got: Vec<(&str, bool)> = folded.iter().map(|r| (r.0.as_str(), r.1)).collect();
    assert_eq!(got, expected);
    assert_eq!(tonight.len(), 5);
    for (r, d) in tonight.iter().zip(&retained) {
        assert_eq!((r.1, r.2.as_deref()), (false, Some(d.id.as_str())), "{r:?}");
    }
    let fold1 = index.join("online/fold-000001.jsonl");
    let files = read_df(&dir.join("n2/manifest.parquet"));
    assert_eq!(str_column(&files, "file")[0], fold1.display().to_string());

    // The server lets go of them: the index answers for them now, under night 2's name.
    assert_eq!(server.post_stats()["online_documents"], 0);
    let a = server.post("/check", serde_json::json!({"text": retained[7].text}));
    let found = (a["batch"].as_str(), a["duplicate_of"].as_str());
    assert_eq!(found, (Some("n2"), Some(retained[7].id.as_str())), "{a}");
    // Both nights' lookup files went into the page cache: night 1's at the start, night 2's
    // once the server saw it (unless this machine is short of free memory).
    let preload = loop {
        let p = server.post_stats()["preload"].clone();
        if p["running"] == false {
            break p;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    if preload["stopped_for_memory"] == false {
        assert_eq!(preload["bytes"].as_u64(), Some(lookup_file_bytes(&index)));
    }
    // A rerun of night 2 folds in the same file: the same manifest.
    night(&input, "n2-again", "n2");
    let manifest = |out: &str| std::fs::read(dir.join(out).join("manifest.parquet")).unwrap();
    assert_eq!(manifest("n2"), manifest("n2-again"));
    // A restart replays nothing folded.
    drop(server);
    let server = start(&index, &[]);
    assert_eq!(server.post_stats()["online_documents"], 0);

    // One more add and a removal of an indexed document: night 3 folds the add in and, as the
    // server does, matches the removed document no more.
    let late =
        "an online page about lighthouse keepers who trimmed their lamps every night at dusk";
    let a = server.post("/add", serde_json::json!({"id": "late", "text": late}));
    assert_eq!(a["added"], true, "{a}");
    let en0 = &docs[0];
    let (status, _) = server.call("DELETE", &format!("/documents/{}", en0.id), b"", None);
    assert_eq!(status, 200);
    let answer = server.post("/check", serde_json::json!({"text": en0.text}));
    assert_ne!(answer["duplicate_of"], en0.id.as_str());
    let input = text_shard(&dir.join("n3in"), &[late.to_string(), en0.text.clone()]);
    let as_tasks = dir.join("index-tasks");
    copy_dir(&index, &as_tasks);
    let n3 = night(&input, "n3", "n3");
    assert_eq!(n3[0], ("late".to_string(), true, None));
    assert_eq!(n3[1], ("d0".to_string(), false, Some("late".to_string())));
    let server_said = (
        answer["duplicate"] == false,
        answer["duplicate_of"].as_str(),
    );
    assert_eq!((n3[2].1, n3[2].2.as_deref()), server_said, "{answer}");
    // Night 3 is a new batch: night 2's fold file is gone, its own kept for a rerun.
    assert!(!fold1.exists());
    assert!(index.join("online/fold-000002.jsonl").exists());
    // The same night on the task path (plan, then every stage's tasks): the same decisions.
    let flags = ["--index", as_tasks.to_str().unwrap(), "--batch", "n3"];
    crate::tasks::by_hand(&input, &dir.join("n3-work"), &dir.join("n3-tasks"), &flags);
    assert_eq!(decisions(&dir.join("n3-tasks")), n3);

    // `index remove` of night 3: the add it folded in is the journal's again, searched by the
    // server at once, and folded by the next night.
    cd(["index", "remove", "--index", &ix, "--batch", "n3"]).ok();
    assert_eq!(server.post_stats()["online_documents"], 1);
    let a = server.post("/check", serde_json::json!({"text": late}));
    assert_eq!(
        (a["batch"].as_str(), a["duplicate_of"].as_str()),
        (Some("online"), Some("late")),
        "{a}"
    );
    let n4 = night(
        &text_shard(&dir.join("n4in"), &[late.to_string()]),
        "n4",
        "n4",
    );
    assert_eq!(
        n4,
        [
            ("late".to_string(), true, None),
            ("d0".to_string(), false, Some("late".to_string()))
        ]
    );
    assert_eq!(server.post_stats()["online_documents"], 0);
}

/// Where the server and a nightly run may differ: batch mode compares a giant bucket's member
/// with the bucket's first `--max-bucket-pairs` kept documents only (the summary's
/// `giant_buckets.capped` counts the decisions that may have changed), the server with all.
#[test]
fn the_giant_bucket_cap_is_the_one_difference_and_it_is_counted() {
    let dir = temp_dir("serve-giant");
    let first = ["a first night holds one page about harbour cranes and the ships they unload"];
    let n1 = text_shard(&dir.join("n1in"), &first.map(String::from));
    let index = dir.join("index");
    run_ok(
        &n1,
        &dir.join("n1"),
        &["--index", index.to_str().unwrap(), "--batch", "n1"],
    );
    let texts = crate::keeper::near_copies();
    let n2 = text_shard(&dir.join("n2in"), &texts);
    let night2 = |name: &str, extra: &[&str]| {
        let copy = dir.join(format!("index-{name}"));
        copy_dir(&index, &copy);
        let out = dir.join(name);
        let flags = [&["--index", copy.to_str().unwrap(), "--batch", "n2"], extra].concat();
        run_ok(&n2, &out, &flags);
        (
            decisions(&out),
            summary(&out)["giant_buckets"]["capped"].as_u64().unwrap(),
        )
    };
    let (uncapped, none) = night2("default", &[]);
    let (capped, count) = night2("capped", &["--max-bucket-pairs", "2"]);
    assert_eq!(none, 0);
    assert!(count > 0, "no decision was capped");
    let server = start(&index, &[]);
    let mut differ = 0;
    for (i, text) in texts.iter().enumerate() {
        let a = server.post(
            "/add",
            serde_json::json!({"id": format!("d{i}"), "text": text}),
        );
        let said = (
            a["added"] == true,
            a["duplicate_of"].as_str().map(str::to_string),
        );
        // Uncapped, every decision is the nightly run's.
        assert_eq!(said, (uncapped[i].1, uncapped[i].2.clone()), "d{i}: {a}");
        differ += usize::from(said != (capped[i].1, capped[i].2.clone()));
    }
    // 68 of 400 differ here, of 107 counted.
    assert!(differ > 0, "the cap changed no decision");
    assert!(
        differ as u64 <= count,
        "{differ} decisions differ, {count} counted as capped"
    );
}

impl Server {
    fn post_stats(&self) -> serde_json::Value {
        let (status, stats) = self.call("GET", "/stats", b"", None);
        assert_eq!(status, 200);
        stats
    }
}

/// Bytes of the files lookups read at random, in every batch of `index`.
fn lookup_file_bytes(index: &Path) -> u64 {
    let mut total = 0;
    for batch in std::fs::read_dir(index.join("batches")).unwrap() {
        let dir = batch.unwrap().path();
        let bands = std::fs::read_dir(dir.join("bands")).unwrap();
        let bands = bands.map(|e| e.unwrap().path());
        let files = ["exact.bin", "ids.bin", "docs.bin", "keys.bin"].map(|f| dir.join(f));
        for f in bands
            .filter(|p| p.extension().is_some_and(|e| e == "bin"))
            .chain(files)
        {
            total += std::fs::metadata(f).unwrap().len();
        }
    }
    total
}

/// Sends SIGTERM to `child`.
fn unsafe_term(child: &Child) {
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        match e.file_type().unwrap().is_dir() {
            true => copy_dir(&e.path(), &target),
            false => {
                std::fs::copy(e.path(), target).unwrap();
            }
        }
    }
}

#[test]
fn serve_refuses_bad_requests_and_unsafe_starts() {
    let dir = temp_dir("serve-bad");
    let input = text_shard(
        &dir.join("in"),
        &["one document about rivers and the fish that swim in them".to_string()],
    );
    let index = dir.join("index");
    run_ok(
        &input,
        &dir.join("n1"),
        &["--index", &index.display().to_string(), "--batch", "n1"],
    );
    let server = start(&index, &["--max-body", "1000"]);
    for (body, says) in [
        (&b"{\"text\": "[..], "not JSON"),
        (&b"{\"id\": \"a\"}"[..], "text"),
        (&b"{\"text\": \"\xff\xfe\"}"[..], "UTF-8"),
        (&b"[{\"text\": \"fine\"}, {\"text\": 7}]"[..], "item 1"),
        (&b"42"[..], "object"),
    ] {
        let (status, answer) = server.call("POST", "/check", body, None);
        assert_eq!(status, 400, "{answer}");
        assert!(answer["error"].as_str().unwrap().contains(says), "{answer}");
    }
    let (status, answer) = server.call("POST", "/add", b"{\"text\": \"no id\"}", None);
    assert!(
        status == 400 && answer["error"].as_str().unwrap().contains("id"),
        "{answer}"
    );
    let big = serde_json::json!({"text": "x".repeat(2000)}).to_string();
    assert_eq!(server.call("POST", "/check", big.as_bytes(), None).0, 413);
    // Still serving.
    let a = server.post(
        "/check",
        serde_json::json!({"text": "one document about rivers and the fish that swim in them"}),
    );
    assert_eq!(a["duplicate_of"], "d0");
    // One server per index.
    let err = cd(["serve", "--index"])
        .arg(&index)
        .args(["--listen", "127.0.0.1:0"])
        .fails();
    assert!(err.contains("another server"), "{err}");
    drop(server);

    // Beyond loopback only with a token; with one, every request sends it.
    let err = cd(["serve", "--index"])
        .arg(&index)
        .args(["--listen", "0.0.0.0:0"])
        .fails();
    assert!(err.contains("--token-file"), "{err}");
    let token = dir.join("token");
    std::fs::write(&token, "s3cret-token\n").unwrap();
    let server = start(&index, &["--token-file", &token.display().to_string()]);
    assert_eq!(server.call("GET", "/health", b"", None).0, 401);
    assert_eq!(server.call("GET", "/health", b"", Some("wrong")).0, 401);
    assert_eq!(
        server.call("POST", "/check", b"{\"text\": \"t\"}", None).0,
        401
    );
    assert_eq!(
        server.call("GET", "/health", b"", Some("s3cret-token")).0,
        200
    );
    let (status, a) = server.call("POST", "/check", b"{\"text\": \"t\"}", Some("s3cret-token"));
    assert_eq!(
        (status, &a["duplicate"]),
        (200, &serde_json::Value::Bool(false))
    );
}
