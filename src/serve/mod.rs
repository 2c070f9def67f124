//! `corpus-dedup serve`: HTTP/JSON answers, one request at a time, to "is this text a
//! near-duplicate of anything retained?" over the index nightly runs keep ([`online`]), with
//! what it retains made durable first ([`journal`]).
//!
//! Routes: `POST /check` and `POST /add` (a `{"id", "text"}` object or an array of them; an
//! answer or an array of answers), `DELETE /documents/{id}`, `GET /health`, `GET /stats`.
//! Safe by default: loopback unless a token file is given; with one, every request needs
//! `Authorization: Bearer TOKEN` (else 401); bodies over the limit get 413, malformed ones 400
//! with a message; CPU work runs off the connection threads; SIGTERM or Ctrl-C drains the
//! requests under way and exits; one server per index (`INDEX/SERVE_LOCK`). The index lock is
//! not held, so nightly runs go on; the server sees their new head at its next request.

mod features;
mod journal;
mod online;
mod preload;
mod view;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};

use crate::error::{Error, Result};
use crate::io::output::OutputDir;
use online::{Online, Request};

/// What `serve` is started with.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ServeOptions {
    /// The retained index nightly runs keep (a local directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) index: String,
    /// Address to listen on; anything but loopback needs --token-file.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8700")]
    pub(crate) listen: String,
    /// A file holding the token every request must send as `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<String>,
    /// The largest request body, in bytes (larger ones get 413).
    #[arg(long, value_name = "BYTES", default_value_t = 10 << 20)]
    pub(crate) max_body: usize,
    /// Worker threads for the decisions (default: all cores).
    #[arg(long)]
    pub(crate) threads: Option<usize>,
    /// Do not read the index's files into the page cache in the background (by default those
    /// lookups read at random are, while the machine has free memory, so that early requests
    /// do not wait on the disk).
    #[arg(long)]
    pub(crate) no_preload: bool,
}

struct Shared {
    online: Index,
    token: Option<String>,
}

/// The server's decisions in this process, without HTTP (the Python package's `Index`): the
/// same index, journal and lock as `serve`, so the two never write one index at once.
pub struct Index {
    online: Online,
    _lock: crate::io::lock::Lock,
}

impl Index {
    /// Opens the index directory `index` (local), taking its server lock and replaying its
    /// journal.
    pub fn open(index: &str) -> Result<Index> {
        Self::open_with(index, false)
    }

    /// [`Index::open`]; with `preload`, warming the page cache with the index's files.
    fn open_with(index: &str, preload: bool) -> Result<Index> {
        let dir = OutputDir::parse(index);
        let lock = crate::io::lock::Lock::acquire(&dir.location(""), "SERVE_LOCK", |holder| {
            Error::Index {
                index: index.to_string(),
                msg: format!("it is in use by another server ({holder}): send requests to that one, or stop it first"),
            }
        })?;
        Ok(Index {
            online: Online::open(dir, preload)?,
            _lock: lock,
        })
    }

    /// The requests of `texts` with their `ids` and, for an index with `--partition-by`, their
    /// values there (`partitions`).
    fn requests(
        ids: Vec<Option<String>>,
        texts: Vec<String>,
        partitions: Option<Vec<Option<String>>>,
    ) -> Vec<Request> {
        let mut partitions = partitions.map(Vec::into_iter);
        ids.into_iter()
            .zip(texts)
            .map(|(id, text)| {
                let partition = (partitions.as_mut()).map(|p| {
                    p.next()
                        .flatten()
                        .map_or(serde_json::Value::Null, From::from)
                });
                Request {
                    id,
                    text,
                    partition,
                }
            })
            .collect()
    }

    /// Whether each text (with its optional id, and its `--partition-by` value if the index has
    /// one) is a near-duplicate of a retained document: the answers as `/check` gives them.
    pub fn check(
        &self,
        ids: Vec<Option<String>>,
        texts: Vec<String>,
        partitions: Option<Vec<Option<String>>>,
    ) -> Result<serde_json::Value> {
        let answers = (self.online).decide(&Self::requests(ids, texts, partitions), false)?;
        Ok(serde_json::to_value(answers).unwrap_or_default())
    }

    /// `/add`: the same check, then each text that duplicates nothing is retained (durably).
    pub fn add(
        &self,
        ids: Vec<String>,
        texts: Vec<String>,
        partitions: Option<Vec<Option<String>>>,
    ) -> Result<serde_json::Value> {
        let ids = ids.into_iter().map(Some).collect();
        let answers = (self.online).decide(&Self::requests(ids, texts, partitions), true)?;
        Ok(serde_json::to_value(answers).unwrap_or_default())
    }

    /// The index's `--partition-by` column, which each request names a value of.
    fn partition_column(&self) -> Option<String> {
        self.online.partition_column()
    }

    /// Removes the retained document `id`; false when none has it.
    pub fn remove(&self, id: &str) -> Result<bool> {
        self.online.remove(id)
    }

    /// What `/stats` gives.
    pub fn stats(&self) -> Result<serde_json::Value> {
        self.online.stats()
    }
}

/// An error answer: a status and `{"error": message}`.
struct Failure(StatusCode, String);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.0, Json(serde_json::json!({ "error": self.1 }))).into_response()
    }
}

fn bad(msg: impl Into<String>) -> Failure {
    Failure(StatusCode::BAD_REQUEST, msg.into())
}

/// Refuses a request without the token (when the server has one).
fn authorise(shared: &Shared, headers: &HeaderMap) -> std::result::Result<(), Failure> {
    let Some(token) = &shared.token else {
        return Ok(());
    };
    let sent = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    // Compared in constant time: the token is a secret.
    let same = sent.is_some_and(|s| {
        s.len() == token.len()
            && s.bytes()
                .zip(token.bytes())
                .fold(0, |a, (x, y)| a | (x ^ y))
                == 0
    });
    match same {
        true => Ok(()),
        false => Err(Failure(
            StatusCode::UNAUTHORIZED,
            "send the server's token as `Authorization: Bearer TOKEN`".into(),
        )),
    }
}

/// A body's texts, and whether it was one object (answered with one object); each must carry a
/// value for the index's `--partition-by` column (`partitioned`), and none without one.
fn parse(
    body: &[u8],
    add: bool,
    partitioned: Option<&str>,
) -> std::result::Result<(Vec<Request>, bool), Failure> {
    let text = std::str::from_utf8(body).map_err(|e| bad(format!("the body is not UTF-8: {e}")))?;
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    let one = value.is_object();
    let items = match value {
        serde_json::Value::Array(a) => a,
        v @ serde_json::Value::Object(_) => vec![v],
        _ => {
            return Err(bad(
                "send an object {\"id\": ..., \"text\": ...} or an array of them",
            ))
        }
    };
    let docs = (items.into_iter().enumerate())
        .map(|(i, v)| {
            let r: Request = serde_json::from_value(v).map_err(|e| {
                bad(format!(
                    "item {i}: {e}; each is {{\"id\": \"...\", \"text\": \"...\"}}"
                ))
            })?;
            if let Err(e) = r.label(partitioned) {
                return Err(bad(format!("item {i}: {e}")));
            }
            match add && r.id.is_none() {
                true => Err(bad(format!("item {i}: an added text needs an \"id\""))),
                false => Ok(r),
            }
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((docs, one))
}

fn internal(e: Error) -> Failure {
    Failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// Runs `work` on a blocking thread: decisions are CPU and disk work, kept off the threads that
/// serve connections.
async fn blocking<T: Send + 'static>(
    shared: &Arc<Shared>,
    work: impl FnOnce(&Shared) -> Result<T> + Send + 'static,
) -> std::result::Result<T, Failure> {
    let s = Arc::clone(shared);
    tokio::task::spawn_blocking(move || work(&s))
        .await
        .map_err(|e| Failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(internal)
}

async fn decide(shared: Arc<Shared>, headers: HeaderMap, body: Bytes, add: bool) -> Response {
    let answer = async {
        authorise(&shared, &headers)?;
        let (docs, one) = parse(&body, add, shared.online.partition_column().as_deref())?;
        let answers = blocking(&shared, move |s| s.online.online.decide(&docs, add)).await?;
        Ok::<_, Failure>(match one {
            true => Json(serde_json::to_value(&answers[0]).unwrap_or_default()),
            false => Json(serde_json::to_value(&answers).unwrap_or_default()),
        })
    };
    answer.await.into_response()
}

async fn check(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    decide(s, headers, body, false).await
}

async fn add(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    decide(s, headers, body, true).await
}

async fn remove(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let answer = async {
        authorise(&shared, &headers)?;
        let what = id.clone();
        let found = blocking(&shared, move |s| s.online.remove(&what)).await?;
        match found {
            true => Ok(Json(serde_json::json!({ "id": id, "removed": true }))),
            false => Err(Failure(
                StatusCode::NOT_FOUND,
                format!(
                    "no retained document has the id {}",
                    serde_json::Value::from(id)
                ),
            )),
        }
    };
    answer.await.into_response()
}

async fn health(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    match authorise(&shared, &headers) {
        Err(f) => f.into_response(),
        Ok(()) => Json(serde_json::json!({ "status": "ok" })).into_response(),
    }
}

async fn stats(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    match authorise(&shared, &headers) {
        Err(f) => f.into_response(),
        Ok(()) => match shared.online.stats() {
            Ok(v) => Json(v).into_response(),
            Err(e) => internal(e).into_response(),
        },
    }
}

/// Resolves when SIGTERM or SIGINT arrives; the handlers are installed here, before the server
/// says it listens, so a signal sent right after that line drains it too.
fn stopped() -> Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let fail = |e: std::io::Error| Error::Config(format!("cannot handle SIGTERM and SIGINT: {e}"));
    let mut term = signal(SignalKind::terminate()).map_err(fail)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(fail)?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {},
            _ = interrupt.recv() => {},
        }
    })
}

/// Runs the server until SIGTERM or SIGINT; `ready` is told the address it listens on.
pub(crate) fn serve(opts: &ServeOptions, ready: impl FnOnce(SocketAddr)) -> Result<()> {
    let addr: SocketAddr = opts.listen.parse().map_err(|e| {
        Error::Config(format!(
            "--listen {}: {e}; give an address and port, e.g. 127.0.0.1:8700",
            opts.listen
        ))
    })?;
    let token = match &opts.token_file {
        Some(f) => {
            let t = std::fs::read_to_string(f)
                .map_err(|e| Error::Config(format!("--token-file {f}: {e}")))?;
            let t = t.trim().to_string();
            if t.is_empty() {
                return Err(Error::Config(format!("--token-file {f} is empty: put a token in it")));
            }
            Some(t)
        }
        None if !addr.ip().is_loopback() => {
            return Err(Error::Config(format!(
                "--listen {addr} is reachable from other machines: give --token-file FILE (every request must then send its token), or listen on 127.0.0.1"
            )))
        }
        None => None,
    };
    let online = Index::open_with(&opts.index, !opts.no_preload)?;
    let shared = Arc::new(Shared { online, token });
    let app = Router::new()
        .route("/check", post(check))
        .route("/add", post(add))
        .route("/documents/{id}", delete(remove))
        .route("/health", get(health))
        .route("/stats", get(stats))
        .layer(DefaultBodyLimit::max(opts.max_body))
        .with_state(Arc::clone(&shared));
    let threads = opts
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| Error::Config(format!("cannot start the server's threads: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::Config(format!("cannot listen on {addr}: {e}")))?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::Config(format!("cannot listen on {addr}: {e}")))?;
        let stopped = stopped()?;
        ready(bound);
        // Once it says where it listens: the page cache is warmed while it answers.
        shared.online.online.start_preload();
        axum::serve(listener, app)
            .with_graceful_shutdown(stopped)
            .await
            .map_err(|e| Error::Config(format!("the server on {bound} stopped: {e}")))
    })
}
