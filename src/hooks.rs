//! Test hooks, compiled in only with the `test-hooks` cargo feature (`make test` turns it on);
//! in a release build they do nothing.
//!
//! - `CORPUS_DEDUP_CRASH=STAGE:TASK[:ONCE_FILE]`: the task kills its own process with SIGKILL
//!   after writing its outputs and before its completion marker (once only when ONCE_FILE is
//!   given: the file records that it happened). The crash tests use it. `index-commit:0` is the
//!   moment before a run replaces the index head.
//! - `CORPUS_DEDUP_PAUSE=STAGE:TASK:SECONDS`: the task sleeps that long at the same point (the
//!   lock and signal tests stop a run there).
//! - `CORPUS_DEDUP_CHUNK_ROWS=N`: the signatures chunk size (tests use tiny chunks to cross many
//!   chunk and shard boundaries); it never changes a result.
//! - `CORPUS_DEDUP_JSONL_GROUP_ROWS=N`: the documents of a JSON Lines row group, each a place a
//!   task may seek to (tests use tiny groups); it never changes a result.
//! - `CORPUS_DEDUP_JSONL_RANGE_BYTES=N`: the smallest byte range of a plain JSON Lines file the
//!   `lines` stage counts apart (tests cut tiny files into many ranges); it never changes a
//!   result.
//! - `CORPUS_DEDUP_MANIFEST_SLICE_ROWS=N`: the report reads the manifest N rows at a time
//!   instead of a row group at a time (tests cross many slices); it never changes the report.
//! - `CORPUS_DEDUP_COMPACT=never`: no lingering batch is compacted (tests compare the decisions
//!   of an index with and without compaction).
//! - `CORPUS_DEDUP_CLUSTER_BYTES=N`: what the cluster task's passes over hash ranges and ranges
//!   of edges may hold at once, unless the run asks more per document (tests use 0: many passes
//!   and a range per part); it never changes a result.
//! - `CORPUS_DEDUP_FREE_BYTES=N`: the free space `run` sees on its work directory's disk (tests
//!   of the space check).

/// The signatures chunk size: `default`, unless the chunk-size hook sets it.
pub(crate) fn chunk_rows(default: u64) -> u64 {
    number("CORPUS_DEDUP_CHUNK_ROWS", default)
}

/// The rows of a JSON Lines row group: `default`, unless the group-size hook sets it.
pub(crate) fn jsonl_group_rows(default: u64) -> u64 {
    number("CORPUS_DEDUP_JSONL_GROUP_ROWS", default).max(1)
}

/// The smallest byte range of a plain JSON Lines file: `default`, unless the range hook sets it.
pub(crate) fn jsonl_range_bytes(default: u64) -> u64 {
    number("CORPUS_DEDUP_JSONL_RANGE_BYTES", default).max(1)
}

/// The manifest rows the report reads at a time, at most: `default`, unless the slice hook sets
/// it.
pub(crate) fn manifest_slice_rows(default: usize) -> usize {
    number("CORPUS_DEDUP_MANIFEST_SLICE_ROWS", default as u64).max(1) as usize
}

/// The cluster task's budget for a pass or a range of edges: `default`, unless the hook sets it.
pub(crate) fn cluster_bytes(default: usize) -> usize {
    number("CORPUS_DEDUP_CLUSTER_BYTES", default as u64) as usize
}

/// The number `var` holds (test builds only), else `default`.
fn number(var: &str, default: u64) -> u64 {
    if !cfg!(feature = "test-hooks") {
        return default;
    }
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The free space the free-space hook sets (test builds only).
pub(crate) fn free_bytes() -> Option<u64> {
    match cfg!(feature = "test-hooks") {
        true => std::env::var("CORPUS_DEDUP_FREE_BYTES").ok()?.parse().ok(),
        false => None,
    }
}

/// Whether the compaction hook turns compaction off.
pub(crate) fn compaction_off() -> bool {
    cfg!(feature = "test-hooks")
        && std::env::var("CORPUS_DEDUP_COMPACT").is_ok_and(|v| v == "never")
}

/// The crash hook: called between a task's outputs and its marker (`stage`: the stage's name).
pub(crate) fn crash_point(stage: &str, task: usize) {
    pause_if(stage, task);
    crash_if(stage, task);
}

/// `Some(rest)` when `VAR=NAME:TASK[:REST]` names this point (test builds only).
fn matching(var: &str, name: &str, task: usize) -> Option<Option<String>> {
    if !cfg!(feature = "test-hooks") {
        return None;
    }
    let spec = std::env::var(var).ok()?;
    let mut it = spec.splitn(3, ':');
    let (s, t) = (it.next()?, it.next()?);
    (s == name && t.parse::<usize>().ok() == Some(task)).then(|| it.next().map(str::to_string))
}

fn pause_if(name: &str, task: usize) {
    if let Some(Some(secs)) = matching("CORPUS_DEDUP_PAUSE", name, task) {
        let secs: f64 = secs.parse().unwrap_or(0.0);
        std::thread::sleep(std::time::Duration::from_secs_f64(secs));
    }
}

/// The crash hook at a named point outside a task (`index-commit`: just before the index head
/// is replaced), matched as `CORPUS_DEDUP_CRASH=POINT:0`.
pub(crate) fn crash_at(point: &str) {
    crash_if(point, 0);
}

fn crash_if(name: &str, task: usize) {
    let Some(once) = matching("CORPUS_DEDUP_CRASH", name, task) else {
        return;
    };
    if let Some(once) = once {
        if std::path::Path::new(&once).exists() {
            return;
        }
        let _ = std::fs::write(&once, b"");
    }
    eprintln!(
        "corpus-dedup: fault injection: killing process {} in {name} task {task}",
        std::process::id(),
    );
    // SAFETY: kill(2) on our own pid with a constant signal has no memory-safety preconditions.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
}
