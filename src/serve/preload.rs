//! Warming the page cache with the index files a lookup reads at random (band files, exact-copy
//! file, ids, signatures, shingle keys), so that the requests after a start, or after a nightly
//! batch appears, do not each wait on a few disk reads. Read in the background, most often read
//! first, newest batch first; it takes free memory only: it stops while the machine's free
//! memory is below an eighth of it, so it never pushes other files out of the cache.

use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// Bytes read between two looks at the free memory.
const CHUNK: usize = 8 << 20;

/// The preloads of one server.
#[derive(Default)]
pub(crate) struct Preload {
    /// Files read (or being read) already: a new head preloads only its new batches' files.
    seen: Mutex<ahash::AHashSet<PathBuf>>,
    bytes: AtomicU64,
    running: AtomicU64,
    /// Whether a preload stopped for want of free memory.
    full: AtomicBool,
}

impl Preload {
    /// Reads `files` (in order; those not read before) on a background thread; `log` says what
    /// it did when it ends.
    pub(crate) fn start(self: &Arc<Self>, files: Vec<PathBuf>, log: bool) {
        let files: Vec<PathBuf> = {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            files
                .into_iter()
                .filter(|f| seen.insert(f.clone()))
                .collect()
        };
        if files.is_empty() {
            return;
        }
        let me = Arc::clone(self);
        me.running.fetch_add(1, Ordering::Relaxed);
        let spawned = std::thread::Builder::new()
            .name("preload".into())
            .spawn(move || {
                let started = Instant::now();
                let (bytes, full) = read_while_free(&files, &me.bytes);
                me.full.fetch_or(full, Ordering::Relaxed);
                me.running.fetch_sub(1, Ordering::Relaxed);
                if log {
                    let why = match full {
                        true => ", then stopped: free memory is below an eighth of the machine's",
                        false => "",
                    };
                    eprintln!(
                        "corpus-dedup: preloaded {} of index files into the page cache in {:.1} s{why}",
                        crate::report::numbers::bytes(bytes),
                        started.elapsed().as_secs_f64()
                    );
                }
            });
        if spawned.is_err() {
            self.running.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// What `/stats` shows of it.
    pub(crate) fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "bytes": self.bytes.load(Ordering::Relaxed),
            "running": self.running.load(Ordering::Relaxed) > 0,
            "stopped_for_memory": self.full.load(Ordering::Relaxed),
        })
    }
}

/// Reads `files` through, counting into `total`, while free memory allows; returns the bytes
/// read and whether it stopped for memory. A file it cannot read is passed over: warming is an
/// optimisation, and the lookup that needs the file reports the error.
fn read_while_free(files: &[PathBuf], total: &AtomicU64) -> (u64, bool) {
    let mut buf = vec![0u8; CHUNK];
    let mut bytes = 0u64;
    for path in files {
        let Ok(mut f) = std::fs::File::open(path) else {
            continue;
        };
        loop {
            if !memory_to_spare() {
                return (bytes, true);
            }
            match f.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    bytes += n as u64;
                    total.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
        }
    }
    (bytes, false)
}

/// Whether the machine's free memory (not counting the page cache) exceeds an eighth of its
/// memory plus a chunk; false where it cannot be known (no `/proc/meminfo`).
fn memory_to_spare() -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/meminfo") else {
        return false;
    };
    match (
        meminfo_kb(&info, "MemTotal:"),
        meminfo_kb(&info, "MemFree:"),
    ) {
        (Some(total), Some(free)) => free * 1024 > total * 1024 / 8 + CHUNK as u64,
        _ => false,
    }
}

/// The value in KiB of field `name` of `/proc/meminfo`'s text.
fn meminfo_kb(info: &str, name: &str) -> Option<u64> {
    let line = info.lines().find(|l| l.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_fields_are_read_in_kib() {
        let info = "MemTotal:       24000000 kB\nMemFree:         3000000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(meminfo_kb(info, "MemTotal:"), Some(24_000_000));
        assert_eq!(meminfo_kb(info, "MemFree:"), Some(3_000_000));
        assert_eq!(meminfo_kb(info, "Cached:"), None);
    }

    #[test]
    fn a_file_is_preloaded_once_and_counted() {
        let dir = std::env::temp_dir().join(format!("corpus-dedup-preload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, vec![1u8; 1000]).unwrap();
        std::fs::write(&b, vec![2u8; 500]).unwrap();
        let missing = dir.join("missing");
        let total = AtomicU64::new(0);
        let (bytes, full) = read_while_free(&[a.clone(), missing, b.clone()], &total);
        // On a machine short of free memory nothing is read, and it says so.
        match full {
            true => assert_eq!(bytes, 0),
            false => assert_eq!(bytes, 1500),
        }
        assert_eq!(total.load(Ordering::Relaxed), bytes);
        let p = Arc::new(Preload::default());
        p.seen.lock().unwrap().insert(a.clone());
        p.start(vec![a, b], false);
        while p.stats()["running"] == true {
            std::thread::yield_now();
        }
        assert!(p.bytes.load(Ordering::Relaxed) == 500 || p.full.load(Ordering::Relaxed));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
