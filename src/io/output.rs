//! Output: crash-safe writes. Every file is written under a temporary name in the same directory
//! and renamed into place, so a reader (or a rerun after a crash) sees either the old complete file
//! or the new complete file, never a half-written one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::error::{Error, Result};

fn out_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Output { path: path.display().to_string(), msg: e.to_string() }
}

fn tmp_name(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

/// Creates the output directory and checks that a file can be created in it, so an unwritable
/// output fails before the expensive stages run.
pub fn prepare_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| out_err(dir, e))?;
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

/// Writes a DataFrame as Parquet (zstd, one writer thread-independent layout) with file-level
/// key/value metadata, atomically.
pub fn write_parquet_atomic(path: &Path, df: &mut DataFrame, metadata: Vec<(String, String)>) -> Result<()> {
    let tmp = tmp_name(path);
    let result = (|| -> std::result::Result<(), String> {
        let f = fs::File::create(&tmp).map_err(|e| e.to_string())?;
        ParquetWriter::new(&f)
            .with_key_value_metadata(Some(KeyValueMetadata::from_static(metadata)))
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
