//! Locks on directories, so two runs never use one output, work directory or index at once: a
//! `flock`ed file holding "pid N on HOST since TIME" locally (the kernel releases it when the
//! process dies, so a stale lock is taken over without a race), an object created with a
//! conditional PUT on S3 (taken over when it names a dead process of this host). A local lock
//! file stays after release: deleting it could let two later runs lock two different files.

use crate::error::{Error, Result};
use crate::io::object;
use crate::io::output::OutputDir;

/// A lock on a directory (local or `s3://`), held while a run uses it; released when dropped.
#[derive(Debug)]
pub(crate) struct Lock {
    location: String,
    held: Held,
}

#[derive(Debug)]
enum Held {
    /// This process already held it (a run's commit inside the run).
    Again,
    /// The locked file: the lock lasts while it is open.
    File(#[expect(dead_code, reason = "held open, never read")] std::fs::File),
    Object(String),
}

/// Locations whose lock this process holds.
static HELD: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn held() -> std::sync::MutexGuard<'static, Vec<String>> {
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Lock {
    /// Takes the lock `name` of the directory at `location`, or fails with `in_use(holder)`.
    pub(crate) fn acquire(
        location: &str,
        name: &str,
        in_use: impl Fn(String) -> Error,
    ) -> Result<Lock> {
        let key = format!("{}/{name}", location.trim_end_matches('/'));
        let location = key.as_str();
        if held().iter().any(|l| l == location) {
            return Ok(Lock {
                location: location.to_string(),
                held: Held::Again,
            });
        }
        let me = holder();
        let dir = OutputDir::parse(key.rsplit_once('/').map_or("", |(d, _)| d));
        let held_as = match dir.local_dir() {
            Some(path) => {
                dir.prepare()?;
                let p = path.join(name);
                let io = |e: std::io::Error| Error::Output {
                    path: p.display().to_string(),
                    source: e.into(),
                };
                let mut f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&p)
                    .map_err(io)?;
                match f.try_lock() {
                    Ok(()) => {}
                    Err(std::fs::TryLockError::WouldBlock) => {
                        let who = std::fs::read_to_string(&p).unwrap_or_default();
                        return Err(in_use(who.trim().to_string()));
                    }
                    Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
                }
                use std::io::Write;
                f.set_len(0).map_err(io)?;
                f.write_all(me.as_bytes()).map_err(io)?;
                Held::File(f)
            }
            None => {
                let url = key.clone();
                if !object::put_new(&url, me.clone().into_bytes())? {
                    let who = object::get_opt(&url)?
                        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
                        .unwrap_or_default();
                    // A lock object naming a dead process of this host is replaced; if another
                    // run replaced it first, the conditional PUT fails and so does this run.
                    let taken_over = stale(&who) && {
                        object::delete(&url)?;
                        object::put_new(&url, me.into_bytes())?
                    };
                    if !taken_over {
                        return Err(in_use(who));
                    }
                }
                Held::Object(url)
            }
        };
        held().push(location.to_string());
        Ok(Lock {
            location: location.to_string(),
            held: held_as,
        })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if matches!(self.held, Held::Again) {
            return;
        }
        held().retain(|l| l != &self.location);
        if let Held::Object(url) = &self.held {
            // Best effort: a lock object left behind by a failed delete names a dead process
            // of this host, which the next run on this host takes over.
            let _ = object::delete(url);
        }
        // A file lock is released when the file is closed.
    }
}

/// "pid N on HOST since TIME" for this process.
fn holder() -> String {
    format!(
        "pid {} on {} since {}",
        std::process::id(),
        hostname(),
        utc_now()
    )
}

/// True when `holder` names a process of this host that no longer runs.
fn stale(holder: &str) -> bool {
    let mut w = holder.split_whitespace();
    let (Some("pid"), Some(pid), Some("on"), Some(host)) = (w.next(), w.next(), w.next(), w.next())
    else {
        return false;
    };
    let Ok(pid) = pid.parse::<i32>() else {
        return false;
    };
    host == hostname() && !alive(pid)
}

fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks whether the process exists; it touches no memory.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Takes a lock through `take`; with `wait`, retries every two seconds while another run holds
/// it (saying so once, unless `quiet`).
pub(crate) fn waiting<T>(wait: bool, quiet: bool, take: impl Fn() -> Result<T>) -> Result<T> {
    let mut said = false;
    loop {
        match take() {
            Err(e @ (Error::IndexInUse { .. } | Error::DirInUse { .. })) if wait => {
                if !quiet && !said {
                    eprintln!("corpus-dedup: {e}\ncorpus-dedup: waiting for it (--wait)");
                    said = true;
                }
                std::thread::sleep(std::time::Duration::from_secs(2));
            }
            other => return other,
        }
    }
}

/// This machine's host name.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that many bytes.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "unknown-host".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_is_exclusive_and_reentrant_in_process() {
        let dir = std::env::temp_dir().join(format!("cd-lock-{}", std::process::id()));
        let loc = dir.to_str().unwrap().to_string();
        let in_use = |holder: String| Error::DirInUse {
            dir: "d".into(),
            holder,
        };
        let a = Lock::acquire(&loc, "LOCK", in_use).unwrap();
        // The same process may take it again (a run's commit); the outer guard still holds it.
        drop(Lock::acquire(&loc, "LOCK", in_use).unwrap());
        let text = std::fs::read_to_string(dir.join("LOCK")).unwrap();
        assert!(
            text.starts_with(&format!("pid {} on ", std::process::id())),
            "{text}"
        );
        // Another open file description cannot lock it while `a` holds it.
        let f = std::fs::File::open(dir.join("LOCK")).unwrap();
        assert!(f.try_lock().is_err());
        drop(a);
        assert!(f.try_lock().is_ok());
        drop(f);
        assert!(!stale(&holder()));
        assert!(stale(&format!("pid 2147483000 on {} since x", hostname())));
        assert!(!stale("pid 2147483000 on some-other-host since x"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn utc_now_is_well_formed() {
        let t = utc_now();
        assert_eq!(t.len(), 20);
        assert!(t.starts_with("20") && t.ends_with('Z'), "{t}");
    }
}
