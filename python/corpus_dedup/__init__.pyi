"""Type stubs of corpus_dedup (the docstrings are in __init__.py)."""
from typing import Any, Mapping, Optional, Sequence, Union

import polars as pl

__version__: str

class Error(Exception):
    """An error of corpus-dedup; the message is the command line's."""
class ConfigError(Error):
    """The settings or the request are wrong: fix the call."""
class InputError(Error):
    """The input data (shards, columns, ids, a manifest) cannot be used as it is."""
class StorageError(Error):
    """Reading or writing storage failed: retry once the cause is fixed; a rerun resumes."""
class BusyError(Error):
    """Another run holds the output, work directory or index: retry later."""
class IndexStateError(Error):
    """The retained index does not fit this run (settings, batch names) or is damaged."""

def run(input: Union[str, Sequence[str]], output: str, *, progress: Optional[bool] = ...,
        **settings: Any) -> pl.DataFrame: ...
def read_manifest(output: str) -> pl.DataFrame: ...
def summary(output: str) -> dict[str, Any]: ...
def apply(manifest: str, output: str, dropped: Optional[str] = ..., dry_run: bool = ..., *,
          threads: Optional[int] = ..., progress: bool = ...,
          cluster_size_column: Optional[str] = ..., upsample: Optional[str] = ...) -> dict[str, Any]: ...
def explain(output: str, id: str, limit: int = ...) -> dict[str, Any]: ...
def audit(output: str, pairs: int = ..., by_group: bool = ...) -> pl.DataFrame: ...
def score(output: str, labels: Union[str, Mapping[str, str]]) -> dict[str, Any]: ...
def minhash(texts: Any, num_perm: Optional[int] = ..., seed: Optional[int] = ...,
            ngram: Optional[int] = ..., tokenizer: Optional[str] = ...,
            sketch: Optional[str] = ...) -> pl.Series: ...
def simhash(texts: Any, ngram: Optional[int] = ..., tf_cap: Optional[int] = ...,
            top_k: Optional[int] = ...) -> pl.Series: ...
def jaccard(a: str, b: str, ngram: Optional[int] = ...,
            tokenizer: Optional[str] = ...) -> float: ...
def minhash_batch(batch: Any, column: str = ..., out: str = ..., **kwargs: Any) -> Any: ...
def drop_spans(texts: Any, spans: Any) -> pl.Series: ...

from corpus_dedup.online import Client as Client, Index as Index
