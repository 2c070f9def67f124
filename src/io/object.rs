//! Object storage (S3 and S3-compatible stores) through the `object_store` crate, which polars
//! already uses to read `s3://` shards.
//!
//! Configuration is the AWS one, read from the environment: `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` (default us-east-1),
//! `AWS_ENDPOINT_URL` (MinIO, Ceph, R2, a local test server) and `AWS_ALLOW_HTTP=true` for a plain
//! HTTP endpoint. Requests are retried with exponential backoff on transient errors (5xx,
//! timeouts, connection resets). An object is written with one PUT of the complete body, so a
//! reader sees the whole object or nothing. Error messages never contain the secret key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{
    BackoffConfig, MultipartUpload, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig,
};

use crate::error::{Error, Result};

/// True for an `s3://` URL.
pub(crate) fn is_url(s: &str) -> bool {
    s.starts_with("s3://")
}

/// `s3://bucket/key` split into (bucket, key).
pub(crate) fn split_url(url: &str) -> Result<(&str, &str)> {
    let rest = url
        .strip_prefix("s3://")
        .ok_or_else(|| Error::Config(format!("'{url}' is not an s3:// URL")))?;
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(Error::Config(format!(
            "'{url}' names no bucket; use s3://BUCKET/PREFIX"
        )));
    }
    Ok((bucket, key))
}

fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| Error::Config(format!("cannot start the I/O runtime: {e}")))
}

/// Removes the secret key from a message, should a lower layer ever echo it.
fn redact(msg: String) -> String {
    match std::env::var("AWS_SECRET_ACCESS_KEY") {
        Ok(secret) if secret.len() >= 4 => msg.replace(&secret, "[secret]"),
        _ => msg,
    }
}

fn store_err(what: &str, url: &str, e: object_store::Error) -> Error {
    let msg = redact(e.to_string());
    // object_store reports most S3 failures as `Generic` with the HTTP status in the text.
    let hint = if matches!(
        e,
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. }
    ) || msg.contains("403 Forbidden")
        || msg.contains("SignatureDoesNotMatch")
        || msg.contains("InvalidAccessKeyId")
    {
        "access denied: check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) and the bucket policy"
    } else if msg.contains("NoSuchBucket") {
        "the bucket does not exist: check the bucket name (and AWS_REGION / AWS_ENDPOINT_URL)"
    } else if matches!(e, object_store::Error::NotFound { .. }) {
        "the object does not exist"
    } else if msg.contains("error sending request")
        || msg.contains("onnection refused")
        || msg.contains("timed out")
    {
        "the endpoint is unreachable: check AWS_ENDPOINT_URL (and AWS_ALLOW_HTTP=true for http://) and the network"
    } else {
        "check the URL, AWS_ENDPOINT_URL (and AWS_ALLOW_HTTP=true for http://), the credentials, and that the endpoint is reachable"
    };
    Error::ObjectStore {
        what: what.to_string(),
        url: url.to_string(),
        msg,
        hint,
    }
}

/// The client for `bucket`, built once per process and bucket so every request reuses its
/// connection pool (a client per request would open a new connection for each shard).
fn store(bucket: &str) -> Result<Arc<AmazonS3>> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<AmazonS3>>>> = OnceLock::new();
    let mut stores = STORES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(s) = stores.get(bucket) {
        return Ok(Arc::clone(s));
    }
    let s = Arc::new(build_store(bucket)?);
    stores.insert(bucket.to_string(), Arc::clone(&s));
    Ok(s)
}

fn build_store(bucket: &str) -> Result<AmazonS3> {
    let mut b = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_retry(RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(5),
                base: 2.0,
            },
            max_retries: 5,
            retry_timeout: Duration::from_secs(60),
        });
    if std::env::var_os("AWS_REGION").is_none() && std::env::var_os("AWS_DEFAULT_REGION").is_none()
    {
        b = b.with_region("us-east-1");
    }
    b.build()
        .map_err(|e| store_err("configure", &format!("s3://{bucket}"), e))
}

/// Lists the objects matching an `s3://bucket/prefix/*.parquet` glob (glob characters only after
/// the last fixed `/`-separated part), sorted, as `s3://` URLs.
pub(crate) fn list_glob(url: &str) -> Result<Vec<String>> {
    let (bucket, key) = split_url(url)?;
    let first_glob = key.find(['*', '?', '[']).unwrap_or(key.len());
    let prefix = &key[..key[..first_glob].rfind('/').map_or(0, |i| i + 1)];
    let pattern = glob::Pattern::new(key).map_err(|source| Error::BadGlob {
        pattern: url.to_string(),
        source,
    })?;
    let store = store(bucket)?;
    let prefix_path = (!prefix.is_empty()).then(|| Path::from(prefix.trim_end_matches('/')));
    let metas: Vec<_> =
        runtime()?.block_on(async { store.list(prefix_path.as_ref()).collect::<Vec<_>>().await });
    let opts = glob::MatchOptions {
        require_literal_separator: true,
        ..Default::default()
    };
    let mut out = Vec::new();
    let mut sizes = listed_sizes();
    for m in metas {
        let m = m.map_err(|e| store_err("list", url, e))?;
        let loc = m.location.as_ref();
        if pattern.matches_with(loc, opts) {
            let object = format!("s3://{bucket}/{loc}");
            sizes.insert(object.clone(), m.size);
            out.push(object);
        }
    }
    out.sort();
    Ok(out)
}

/// The size of each object a listing of this process returned: a read of its end then needs no
/// HEAD request first ([`get_tail`]).
fn listed_sizes() -> std::sync::MutexGuard<'static, HashMap<String, u64>> {
    static SIZES: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
    (SIZES.get_or_init(Default::default).lock()).unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Fetches whole objects, up to 16 requests in flight (latency, not bandwidth, bounds a sequence
/// of small GETs), in the order given.
pub(crate) fn get_all(urls: &[String]) -> Result<Vec<Vec<u8>>> {
    let fetch = |url: String| async move {
        let (bucket, key) = split_url(&url)?;
        let store = store(bucket)?;
        let r = store
            .get(&Path::from(key))
            .await
            .map_err(|e| store_err("read", &url, e))?;
        let bytes = r.bytes().await.map_err(|e| store_err("read", &url, e))?;
        Ok::<Vec<u8>, Error>(bytes.to_vec())
    };
    runtime()?
        .block_on(async {
            futures::stream::iter(urls.iter().cloned().map(fetch))
                .buffered(16)
                .collect::<Vec<_>>()
                .await
        })
        .into_iter()
        .collect()
}

/// Writes `bytes` as the object `url` with one PUT (the object appears complete or not at all).
pub(crate) fn put(url: &str, bytes: Vec<u8>) -> Result<()> {
    let (bucket, key) = split_url(url)?;
    let store = store(bucket)?;
    runtime()?
        .block_on(store.put(&Path::from(key), PutPayload::from(bytes)))
        .map(|_| ())
        .map_err(|e| store_err("write", url, e))
}

/// Writes `bytes` as the object `url` only if no object of that name exists (a conditional PUT,
/// `If-None-Match: *`); false when it exists.
pub(crate) fn put_new(url: &str, bytes: Vec<u8>) -> Result<bool> {
    let (bucket, key) = split_url(url)?;
    let store = store(bucket)?;
    let opts = object_store::PutOptions::from(object_store::PutMode::Create);
    match runtime()?.block_on(store.put_opts(&Path::from(key), PutPayload::from(bytes), opts)) {
        Ok(_) => Ok(true),
        Err(
            object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. },
        ) => Ok(false),
        Err(e) => Err(store_err("write", url, e)),
    }
}

/// Deletes one object (absent is fine).
pub(crate) fn delete(url: &str) -> Result<()> {
    let (bucket, key) = split_url(url)?;
    let store = store(bucket)?;
    match runtime()?.block_on(store.delete(&Path::from(key))) {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(store_err("delete", url, e)),
    }
}

/// Size of one part of a streamed upload (S3 needs at least 5 MiB for every part but the last).
pub const PART_SIZE: usize = 8 << 20;

/// A streamed write of one object: bytes are buffered up to [`PART_SIZE`] and sent as the parts of
/// a multipart upload, so a writer of any size holds one part in memory. The object appears only
/// when [`Upload::finish`] completes the upload (a dropped, unfinished upload is aborted), so like
/// a single PUT it is complete or absent. An object smaller than one part is sent with one PUT.
pub(crate) struct Upload {
    url: String,
    store: Arc<AmazonS3>,
    key: Path,
    upload: Option<Box<dyn MultipartUpload>>,
    buf: Vec<u8>,
}

impl Upload {
    /// Starts writing the object `url` (nothing is sent until a part is full or at the end).
    pub(crate) fn new(url: &str) -> Result<Upload> {
        let (bucket, key) = split_url(url)?;
        Ok(Upload {
            url: url.to_string(),
            store: store(bucket)?,
            key: Path::from(key),
            upload: None,
            buf: Vec::new(),
        })
    }

    fn send_part(&mut self) -> Result<()> {
        let rt = runtime()?;
        let url = &self.url;
        if self.upload.is_none() {
            let up = rt
                .block_on(self.store.put_multipart(&self.key))
                .map_err(|e| store_err("write", url, e))?;
            self.upload = Some(up);
        }
        let part = PutPayload::from(std::mem::take(&mut self.buf));
        if let Some(up) = self.upload.as_mut() {
            rt.block_on(up.put_part(part))
                .map_err(|e| store_err("write", url, e))?;
        }
        Ok(())
    }

    /// Sends what is left and completes the object.
    pub(crate) fn finish(mut self) -> Result<()> {
        match self.upload.take() {
            None => put(&self.url, std::mem::take(&mut self.buf)),
            Some(up) => {
                self.upload = Some(up);
                if !self.buf.is_empty() {
                    self.send_part()?;
                }
                let mut up = self.upload.take().expect("set above");
                runtime()?
                    .block_on(up.complete())
                    .map(|_| ())
                    .map_err(|e| store_err("write", &self.url, e))
            }
        }
    }
}

impl std::io::Write for Upload {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= PART_SIZE {
            self.send_part().map_err(std::io::Error::other)?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let (Some(mut up), Ok(rt)) = (self.upload.take(), runtime()) {
            let _ = rt.block_on(up.abort());
        }
    }
}

/// Fetches one whole object; `None` when it does not exist.
pub(crate) fn get_opt(url: &str) -> Result<Option<Vec<u8>>> {
    let (bucket, key) = split_url(url)?;
    let store = store(bucket)?;
    runtime()?.block_on(async {
        match store.get(&Path::from(key)).await {
            Ok(r) => r
                .bytes()
                .await
                .map(|b| Some(b.to_vec()))
                .map_err(|e| store_err("read", url, e)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(store_err("read", url, e)),
        }
    })
}

/// The last `n` bytes of an object (all of it when it is smaller) and its size: one request for
/// an object this process listed, a HEAD request first for another. (A suffix range longer than
/// the object would save the HEAD, but not every S3-compatible server answers one.)
pub(crate) fn get_tail(url: &str, n: u64) -> Result<(u64, Vec<u8>)> {
    let listed = listed_sizes().get(url).copied();
    let size = match listed {
        Some(size) => size,
        None => self::size(url)?,
    };
    if size == 0 {
        return Ok((0, Vec::new()));
    }
    let (bucket, key) = split_url(url)?;
    let store = store(bucket)?;
    let opts = object_store::GetOptions {
        range: Some(object_store::GetRange::Bounded(
            size.saturating_sub(n)..size,
        )),
        ..Default::default()
    };
    let (now, bytes) = runtime()?.block_on(async {
        let r = (store.get_opts(&Path::from(key), opts).await)
            .map_err(|e| store_err("read", url, e))?;
        let now = r.meta.size;
        let bytes = r.bytes().await.map_err(|e| store_err("read", url, e))?;
        Ok::<_, Error>((now, bytes.to_vec()))
    })?;
    // Replaced since it was listed: read it as an object never listed.
    if now != size {
        listed_sizes().remove(url);
        return get_tail(url, n);
    }
    Ok((size, bytes))
}

/// The size of an object in bytes.
pub(crate) fn size(url: &str) -> Result<u64> {
    let (bucket, key) = split_url(url)?;
    let store = store(bucket)?;
    runtime()?
        .block_on(store.head(&Path::from(key)))
        .map(|m| m.size)
        .map_err(|e| store_err("read", url, e))
}

/// Fetches byte ranges of one object (adjacent ranges are coalesced into one request).
pub(crate) fn get_ranges(url: &str, ranges: &[std::ops::Range<u64>]) -> Result<Vec<Vec<u8>>> {
    let (bucket, key) = split_url(url)?;
    let store = store(bucket)?;
    let parts = runtime()?
        .block_on(store.get_ranges(&Path::from(key), ranges))
        .map_err(|e| store_err("read", url, e))?;
    Ok(parts.into_iter().map(|b| b.to_vec()).collect())
}

/// Deletes every object under the `url` prefix.
pub(crate) fn delete_prefix(url: &str) -> Result<()> {
    let (bucket, key) = split_url(url)?;
    let store = store(bucket)?;
    let prefix = Path::from(key.trim_end_matches('/'));
    runtime()?.block_on(async {
        let metas: Vec<_> = store.list(Some(&prefix)).collect().await;
        for m in metas {
            let m = m.map_err(|e| store_err("list", url, e))?;
            store
                .delete(&m.location)
                .await
                .map_err(|e| store_err("delete", url, e))?;
        }
        Ok(())
    })
}

/// Checks that objects can be written under the `url` prefix (writes and deletes a probe), so a
/// wrong bucket or missing permission fails before the expensive stages.
pub(crate) fn check_writable(url: &str) -> Result<()> {
    let probe = format!(
        "{}/.write-probe-{}",
        url.trim_end_matches('/'),
        std::process::id()
    );
    put(&probe, Vec::new())?;
    let (bucket, key) = split_url(&probe)?;
    let store = store(bucket)?;
    runtime()?
        .block_on(store.delete(&Path::from(key)))
        .map_err(|e| store_err("delete", &probe, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert!(is_url("s3://b/k") && !is_url("/tmp/x"));
        assert_eq!(
            split_url("s3://bucket/a/b.parquet").unwrap(),
            ("bucket", "a/b.parquet")
        );
        assert_eq!(split_url("s3://bucket").unwrap(), ("bucket", ""));
        assert!(split_url("s3:///x").is_err());
    }
}
