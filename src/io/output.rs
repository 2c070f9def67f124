//! Output: crash-safe writes. A local file is written under a temporary name in the same
//! directory and renamed into place; an object is written with one PUT of the complete body. Either
//! way a reader (or a rerun after a crash) sees the old complete file or the new complete file,
//! never a half-written one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::error::{Error, Result};
use crate::io::object;

/// Where a run's outputs go: a local directory or an `s3://bucket/prefix`.
#[derive(Debug, Clone)]
pub enum OutputDir {
    Local(PathBuf),
    Remote(String),
}

impl OutputDir {
    /// Parses `--output`.
    pub fn parse(s: &str) -> OutputDir {
        if object::is_url(s) {
            OutputDir::Remote(s.trim_end_matches('/').to_string())
        } else {
            OutputDir::Local(PathBuf::from(s))
        }
    }

    /// Creates the directory (local) and checks that it can be written.
    pub fn prepare(&self) -> Result<()> {
        match self {
            OutputDir::Local(dir) => prepare_dir(dir),
            OutputDir::Remote(url) => object::check_writable(url),
        }
    }

    /// Writes `bytes` as `name` inside the output.
    pub fn write_bytes(&self, name: &str, bytes: Vec<u8>) -> Result<()> {
        match self {
            OutputDir::Local(dir) => write_atomic(&dir.join(name), &bytes),
            OutputDir::Remote(url) => object::put(&format!("{url}/{name}"), bytes),
        }
    }

    /// Writes a DataFrame as Parquet file `name` with key/value metadata.
    pub fn write_parquet(
        &self,
        name: &str,
        df: &mut DataFrame,
        metadata: Vec<(String, String)>,
    ) -> Result<()> {
        match self {
            OutputDir::Local(dir) => write_parquet_atomic(&dir.join(name), df, metadata),
            OutputDir::Remote(url) => {
                let target = format!("{url}/{name}");
                let mut buf = Vec::new();
                parquet_writer(&mut buf, metadata)
                    .finish(df)
                    .map_err(|e| Error::Output {
                        path: target.clone(),
                        msg: e.to_string(),
                    })?;
                object::put(&target, buf)
            }
        }
    }
}

/// The one Parquet writer configuration used for every output (so local and object-store
/// manifests are byte-identical).
fn parquet_writer<W: Write>(w: W, metadata: Vec<(String, String)>) -> ParquetWriter<W> {
    ParquetWriter::new(w).with_key_value_metadata(Some(KeyValueMetadata::from_static(metadata)))
}

fn out_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Output {
        path: path.display().to_string(),
        msg: e.to_string(),
    }
}

fn tmp_name(path: &Path) -> PathBuf {
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
pub fn prepare_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| out_err(dir, e))?;
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            // Only files of processes that no longer run: a concurrent run's file is left alone.
            let pid = ["manifest.parquet.tmp-", "summary.json.tmp-"]
                .iter()
                .find_map(|p| name.strip_prefix(p))
                .and_then(|p| p.parse::<u32>().ok());
            let stale = pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists());
            if stale {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    let probe = dir.join(format!(".write-probe-{}", std::process::id()));
    fs::write(&probe, b"").map_err(|e| out_err(dir, e))?;
    fs::remove_file(&probe).map_err(|e| out_err(&probe, e))
}

/// Writes `bytes` to `path` atomically (temporary file, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_name(path);
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(out_err(path, e));
    }
    Ok(())
}

/// Writes a DataFrame as a local Parquet file with file-level key/value metadata, atomically.
pub fn write_parquet_atomic(
    path: &Path,
    df: &mut DataFrame,
    metadata: Vec<(String, String)>,
) -> Result<()> {
    let tmp = tmp_name(path);
    let result = (|| -> std::result::Result<(), String> {
        let f = fs::File::create(&tmp).map_err(|e| e.to_string())?;
        parquet_writer(&f, metadata)
            .finish(df)
            .map_err(|e| e.to_string())?;
        f.sync_all().map_err(|e| e.to_string())?;
        fs::rename(&tmp, path).map_err(|e| e.to_string())
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(out_err(path, e));
    }
    Ok(())
}
