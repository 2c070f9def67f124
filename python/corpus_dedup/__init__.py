"""corpus-dedup from Python: the near-duplicate job over Parquet shards, and its kernels as
vectorized functions over text columns.

The job:

    import corpus_dedup
    manifest = corpus_dedup.run("crawl/*.parquet", "out", threshold=0.85)   # a polars DataFrame
    corpus_dedup.apply("out", "dedup")                                     # the kept rows
    pairs = corpus_dedup.audit("out")        # pairs to label in out/audit.html, by band
    corpus_dedup.score("out", "labels.json") # the labels it exported -> precision

The kernels, the job's own (same values as a run), over a polars Series, a pyarrow Array or
ChunkedArray, or a list of str; nulls stay null, no Python runs per row:

    df.with_columns(sig=pl.col("text").map_batches(corpus_dedup.minhash))
    ds.map_batches(corpus_dedup.minhash_batch, batch_format="pyarrow")       # Ray Data

Dedup online: `Index(path)` checks and adds texts in this process over the index nightly runs
keep; `Client(url)` asks a running `corpus-dedup serve` (corpus_dedup.online).

Errors raise a subclass of corpus_dedup.Error with the command line's message, by what to do:
ConfigError (fix the call), InputError (fix the data), StorageError and BusyError (retry later:
a rerun resumes), IndexStateError (the retained index does not fit or is damaged).
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Optional, Sequence, Union

import polars as pl

from corpus_dedup import _native
from corpus_dedup._native import (
    BusyError,
    ConfigError,
    Error,
    IndexStateError,
    InputError,
    StorageError,
)

__all__ = [
    "Error",
    "ConfigError",
    "InputError",
    "StorageError",
    "BusyError",
    "IndexStateError",
    "run",
    "read_manifest",
    "summary",
    "apply",
    "explain",
    "audit",
    "score",
    "minhash",
    "simhash",
    "jaccard",
    "minhash_batch",
    "drop_spans",
    "Index",
    "Client",
]
__version__ = _native.__version__

from corpus_dedup.online import Client, Index  # noqa: E402  (after _native is loaded)


def _settings(**settings: Any) -> str:
    """The keyword arguments as the job's settings (JSON, kebab-case keys: `num_perm` is the
    `--num-perm` option); None leaves a setting at its default."""
    return json.dumps({k.replace("_", "-"): v for k, v in settings.items() if v is not None})


def run(input: Union[str, Sequence[str]], output: str, *, progress: Optional[bool] = None,
        **settings: Any) -> pl.DataFrame:
    """Runs the job over `input` (a glob or a list of globs, local or s3://) and writes
    `output/manifest.parquet`, `summary.json` and `report.html`; returns the manifest.

    `settings` are the options of `corpus-dedup run` with underscores: `threshold=0.85`,
    `keep="longest"`, `tokenizer="jieba"`, `method="simhash"`, `index="idx", batch="2026-11-26"`,
    `partition_by="lang"`, `across="source"`, `reference="bench/*.parquet"` (a glob or a list:
    benchmark decontamination, adding the `contaminated_by` and `contamination` columns),
    `sweep=[0.7, 0.75, 0.8, 0.85, 0.9]` (what each threshold would drop: `summary(output)["sweep"]`),
    `threads=4`, ... Progress bars are off unless `progress=True`. The GIL is released while the
    job runs. A rerun of the same call resumes an interrupted run.
    """
    globs = [input] if isinstance(input, str) else list(input)
    if isinstance(settings.get("reference"), str):
        settings["reference"] = [settings["reference"]]
    # The command line's own --quiet, spelled as a keyword, is the opposite of `progress`.
    quiet = settings.pop("quiet", None)
    if quiet is not None and progress is not None:
        raise ConfigError("run(): give progress= or quiet=, not both (quiet is the opposite of "
                          "progress)")
    if quiet is None:
        quiet = not progress
    _native.run(_settings(input=globs, output=output, quiet=quiet, **settings))
    return read_manifest(output)


def read_manifest(output: str) -> pl.DataFrame:
    """The manifest of a finished run: one row per input document (id, file, row, keep,
    cluster_id, cluster_size, duplicate_of, similarity; with `reference`, contaminated_by and
    contamination)."""
    return pl.read_parquet(f"{output.rstrip('/')}/manifest.parquet")


def summary(output: str) -> dict:
    """The summary of a finished run (summary.json: counts, stages, configuration)."""
    return json.loads(_native.read_output(output, "summary.json"))


def apply(manifest: str, output: str, dropped: Optional[str] = None, dry_run: bool = False,
          *, threads: Optional[int] = None, progress: bool = False,
          cluster_size_column: Optional[str] = None, upsample: Optional[str] = None,
          format: Optional[str] = None) -> dict:
    """Writes each input shard's kept rows to `output` (same names, schema and row order), and
    with `dropped` the dropped rows with `duplicate_of` and `similarity`. `manifest` is a run's
    output directory or its manifest.parquet. Returns what `corpus-dedup apply` prints.

    Rehydration: `cluster_size_column="n"` adds the manifest's cluster size to the rows written;
    `upsample="fineweb2"` (or ranges such as `"1=1,2-4=2,5-=3"`) repeats each kept row by it.
    `format` ("parquet", "jsonl", "jsonl.gz", "jsonl.zst") writes every shard in that format
    (default: each in its input's)."""
    if not manifest.endswith(".parquet"):
        manifest = f"{manifest.rstrip('/')}/manifest.parquet"
    return json.loads(_native.apply(manifest, output, dropped, dry_run, not progress, threads,
                                    cluster_size_column, upsample, format))


def explain(output: str, id: str, limit: int = 20) -> dict:
    """The cluster of one document: its kept document, each member's similarity and the word
    diff against the keeper (what `corpus-dedup explain --json` prints)."""
    return json.loads(_native.explain(output, id, limit))


def audit(output: str, pairs: int = 200, by_group: bool = False) -> pl.DataFrame:
    """Samples the run's drops stratified by similarity band, and with `by_group` by the run's
    --report-group value too (what `corpus-dedup audit OUT` does): writes OUT/audit-pairs.parquet
    and OUT/audit.html, and returns the sampled pairs. After `run(..., sweep=[...])` it samples
    too what each lower threshold would add (bands "would drop at 0.75")."""
    written = json.loads(_native.audit(output, pairs, by_group))
    return pl.read_parquet(written["pairs_file"])


def score(output: str, labels: Union[str, Mapping[str, str]]) -> dict:
    """Precision per band and over all the run's drops from labels on its audit pairs: a path
    to the JSON file the audit page exports, or a mapping of pair -> "y", "n" or "s". After a
    sweep, `["thresholds"]` holds the precision each lower threshold would have."""
    if isinstance(labels, str):
        with open(labels, encoding="utf-8") as f:
            text = f.read()
    else:
        text = json.dumps(dict(labels))
    return json.loads(_native.score(output, text))


def drop_spans(texts: Any, spans: Any) -> pl.Series:
    """Each text with its `drop_spans` (the manifest's column of a run with paragraphs=True)
    cut out, as `apply` writes kept rows; row i's spans apply to text i. Vectorized: no Python
    runs per row.

        df.with_columns(text=corpus_dedup.drop_spans(df["text"], df["drop_spans"]))
    """
    if isinstance(spans, pl.Series):
        spans = spans.rechunk()
    return _series(_native.drop_spans(texts, spans), "text")


def _series(column: Any, name: str) -> pl.Series:
    # polars takes the column through its `__arrow_c_array__` (no copy); the name is set after,
    # since the Arrow field's own name would win.
    return pl.Series(column).alias(name)


def minhash(texts: Any, num_perm: Optional[int] = None, seed: Optional[int] = None,
            ngram: Optional[int] = None, tokenizer: Optional[str] = None,
            sketch: Optional[str] = None) -> pl.Series:
    """The MinHash signature of each text, as the job computes it: a polars Series of
    Array(UInt32, num_perm), null where the text is null (an empty text: every value 2^32-1).

    `texts`: a polars Series, a pyarrow Array or ChunkedArray, or a list of str. Works as
    `pl.col("text").map_batches(corpus_dedup.minhash)`. None (every default) is the job's own
    default: `corpus-dedup run --help` shows them (128 permutations, seed 42, 5-token shingles,
    `auto` tokens, the `oph` sketch)."""
    name = getattr(texts, "name", None) or "minhash"
    column = _native.minhash(texts, _settings(num_perm=num_perm, seed=seed, ngram=ngram,
                                              tokenizer=tokenizer, sketch=sketch))
    return _series(column, name if isinstance(name, str) else "minhash")


def simhash(texts: Any, ngram: Optional[int] = None, tf_cap: Optional[int] = None,
            top_k: Optional[int] = None) -> pl.Series:
    """The 64-bit SimHash fingerprint of each text from the job's weighted features: a polars
    Series of UInt64, null where the text is null. The job also drops features frequent in the
    corpus (`--simhash-max-df`), which needs the whole corpus; these are the fingerprints
    before that cut. Defaults: the job's `--simhash-ngram`, `--simhash-tf-cap`, `--simhash-top-k`."""
    name = getattr(texts, "name", None) or "simhash"
    column = _native.simhash(texts, _settings(simhash_ngram=ngram, simhash_tf_cap=tf_cap,
                                              simhash_top_k=top_k))
    return _series(column, name if isinstance(name, str) else "simhash")


def jaccard(a: str, b: str, ngram: Optional[int] = None,
            tokenizer: Optional[str] = None) -> float:
    """The exact Jaccard similarity of two texts' shingle sets, as the job verifies a pair
    (None: the job's default shingle size and tokens)."""
    return _native.jaccard(a, b, _settings(ngram=ngram, tokenizer=tokenizer))


def minhash_batch(batch: Any, column: str = "text", out: str = "minhash", **kwargs: Any) -> Any:
    """Ray Data's `map_batches` form of `minhash`: takes a pyarrow Table (batch_format="pyarrow")
    or a dict of numpy arrays / a pandas DataFrame, and returns it with an `out` column of
    signatures (fixed-size lists of UInt32)."""
    import pyarrow as pa

    if isinstance(batch, pa.Table):
        sig = pa.array(minhash(batch.column(column), **kwargs).to_arrow())
        return batch.append_column(out, sig)
    texts = [None if t is None else str(t) for t in batch[column]]
    sig = minhash(texts, **kwargs).to_list()
    if isinstance(batch, dict):
        return {**batch, out: sig}
    return batch.assign(**{out: sig})
