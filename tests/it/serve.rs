//! `corpus-dedup serve` driven over HTTP by a real client: the nightly run's decisions one text at
//! a time, concurrent adds, kill -9 after an acknowledgement, removals, a nightly run while it
//! serves, bad requests, the token and unsafe starts.

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
    stderr.read_line(&mut line).unwrap();
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

#[test]
fn serve_decides_as_the_nightly_run_and_keeps_what_it_acknowledged() {
    let dir = temp_dir("serve");
    let (all, docs) = three_shards(&dir.join("gen"));
    let night1 = dir.join("gen/a-en.parquet").display().to_string();
    let (index, reference) = (dir.join("index"), dir.join("reference"));
    run_ok(
        &night1,
        &dir.join("n1"),
        &["--index", &index.display().to_string(), "--batch", "n1"],
    );
    copy_dir(&index, &reference);
    // Night 2 (every shard, night 1's again among them) by the nightly run, for reference.
    let r = reference.display().to_string();
    run_ok(&all, &dir.join("n2"), &["--index", &r, "--batch", "n2"]);
    let nightly = decisions(&dir.join("n2"));

    // The same texts sent one at a time to /add: the same keep/drop and duplicate_of.
    let server = start(&index, &[]);
    for (d, (id, keep, of)) in docs.iter().zip(&nightly) {
        assert_eq!(&d.id, id);
        let a = server.post("/add", serde_json::json!({"id": d.id, "text": d.text}));
        assert_eq!(a["duplicate"], !keep, "{id}: {a}");
        assert_eq!(a["added"], *keep, "{id}: {a}");
        assert_eq!(a["duplicate_of"].as_str(), of.as_deref(), "{id}: {a}");
    }
    let dropped = nightly.iter().filter(|r| !r.1).count();
    assert!(dropped > 50, "{dropped}");
    let stats = server.post_stats();
    assert_eq!(stats["added"], nightly.len() - dropped);

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

impl Server {
    fn post_stats(&self) -> serde_json::Value {
        let (status, stats) = self.call("GET", "/stats", b"", None);
        assert_eq!(status, 200);
        stats
    }
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
