//! Local files written crash-safely: under a temporary name in the same directory, synced (unless
//! scratch) and renamed into place; temporaries a crashed run left are swept.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::{parquet_writer, ParquetUse};
use crate::error::{Error, Result, WriteError};

pub(super) fn out_err(path: &Path, e: impl Into<WriteError>) -> Error {
    Error::Output {
        path: path.display().to_string(),
        source: e.into(),
    }
}

pub(super) fn tmp_name(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

/// Creates the output directory and checks that a file can be created in it, so an unwritable
/// output fails before the expensive stages run. Temporary files that a crashed run left behind
/// (`NAME.tmp-PID` of a process that no longer runs; such files are never read) are removed.
pub(crate) fn prepare_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| out_err(dir, e))?;
    sweep_stale_tmp(dir);
    let probe = dir.join(format!(".write-probe-{}", std::process::id()));
    fs::write(&probe, b"").map_err(|e| out_err(dir, e))?;
    fs::remove_file(&probe).map_err(|e| out_err(&probe, e))
}

/// Removes `*.tmp-PID` files of processes that no longer run, in `dir` and its subdirectories.
/// A concurrent run's temporary file is left alone.
pub(super) fn sweep_stale_tmp(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            sweep_stale_tmp(&path);
            continue;
        }
        let name = e.file_name();
        let pid = name
            .to_string_lossy()
            .rsplit_once(".tmp-")
            .and_then(|(_, p)| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
            let _ = fs::remove_file(&path);
        }
    }
}

/// A file writer that, for a file to be synced, starts the kernel's writeback of every
/// [`Writeback::STEP`] bytes as soon as they are written (`sync_file_range`, without waiting), so
/// the final `fsync` of a large file finds little left to write instead of stalling the task for
/// the whole file.
pub(super) struct Writeback {
    pub(super) file: fs::File,
    sync: bool,
    written: u64,
    flushed: u64,
}

impl Writeback {
    const STEP: u64 = 16 << 20;

    pub(super) fn new(file: fs::File, sync: bool) -> Self {
        Writeback {
            file,
            sync,
            written: 0,
            flushed: 0,
        }
    }

    /// Counts `n` bytes written; on a synced file, starts their writeback every [`Self::STEP`].
    fn advance(&mut self, n: usize) {
        self.written += n as u64;
        if self.sync && self.written - self.flushed >= Self::STEP {
            use std::os::fd::AsRawFd;
            // Advisory: an error here only means the final fsync does the work.
            // SAFETY: the descriptor is open for the life of `self.file`; the call only reads it.
            unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    self.flushed as libc::off64_t,
                    (self.written - self.flushed) as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
            self.flushed = self.written;
        }
    }
}

impl Write for Writeback {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.advance(n);
        Ok(n)
    }

    /// One `writev`: the store's keys come as many slices, written without copying them first.
    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        let n = self.file.write_vectored(bufs)?;
        self.advance(n);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Writes `bytes` to `path` under a temporary name, synced when `sync`, and renames it.
pub(super) fn write_file(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    let tmp = tmp_name(path);
    let result = (|| {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(out_err(path, e));
    }
    Ok(())
}

/// Writes a DataFrame as a local Parquet file with file-level key/value metadata, atomically
/// (temporary file, fsync, rename).
pub fn write_parquet_atomic(
    path: &Path,
    df: &mut DataFrame,
    metadata: Vec<(String, String)>,
    usage: ParquetUse,
) -> Result<()> {
    write_parquet_file(path, df, metadata, usage, true)
}

/// [`write_parquet_atomic`], synced only when `sync`.
pub(super) fn write_parquet_file(
    path: &Path,
    df: &mut DataFrame,
    metadata: Vec<(String, String)>,
    usage: ParquetUse,
    sync: bool,
) -> Result<()> {
    let tmp = tmp_name(path);
    let result = (|| -> std::result::Result<(), WriteError> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let f = fs::File::create(&tmp)?;
        parquet_writer(&f, metadata, usage).finish(df)?;
        if sync {
            f.sync_all()?;
        }
        Ok(fs::rename(&tmp, path)?)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(out_err(path, e));
    }
    Ok(())
}
