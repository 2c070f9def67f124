//! `corpus_dedup._native`: the Python package's bindings over the corpus-dedup library. The
//! Python side (`corpus_dedup/__init__.py`) shapes arguments and results; everything here
//! calls the library: the command line, the job, `apply`, `explain`, and the signature kernels
//! over Arrow columns that cross through the Arrow C data interface (PyCapsules).

use std::ffi::CString;
use std::sync::{Arc, Mutex};

use corpus_dedup::cli as command;
use corpus_dedup::config::Tokenizer;
use corpus_dedup::kernels::jaccard as set_jaccard;
use corpus_dedup::kernels::shingle::{shingle_set, Scratch};
use corpus_dedup::kernels::signatures_only;
use corpus_dedup::kernels::Permutations;
use corpus_dedup::TaskOptions;
use corpus_dedup::{Config, Settings};
use polars::prelude::*;
use polars_arrow::array::{Array, FixedSizeListArray, PrimitiveArray};
use polars_arrow::bitmap::Bitmap;
use polars_arrow::datatypes::{ArrowDataType, Field};
use polars_arrow::ffi;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

pyo3::create_exception!(
    _native,
    Error,
    PyException,
    "An error of corpus-dedup: the message is the command line's."
);
pyo3::create_exception!(
    _native,
    ConfigError,
    Error,
    "The settings or the request are wrong: fix the call."
);
pyo3::create_exception!(
    _native,
    InputError,
    Error,
    "The input data (shards, columns, ids, a manifest) cannot be used as it is."
);
pyo3::create_exception!(
    _native,
    StorageError,
    Error,
    "Reading or writing storage failed: retry once the cause is fixed; a rerun resumes."
);
pyo3::create_exception!(
    _native,
    BusyError,
    Error,
    "Another run holds the output, work directory or index: retry later."
);
pyo3::create_exception!(
    _native,
    IndexStateError,
    Error,
    "The retained index does not fit this run (settings, batch names) or is damaged."
);

/// The exception of an error, with the command line's one paragraph, of the class of its kind
/// (the base `Error` when the library did not say, which is a bug).
fn error(e: impl Into<anyhow::Error>) -> PyErr {
    use corpus_dedup::error::ErrorKind;
    let e: anyhow::Error = e.into();
    let text = command::error_text(e.as_ref());
    let kind = e
        .chain()
        .find_map(|c| match c.downcast_ref::<command::CommandError>() {
            Some(ce) => Some(ce.error()),
            None => c.downcast_ref::<corpus_dedup::Error>(),
        })
        .map(corpus_dedup::Error::kind);
    match kind {
        Some(ErrorKind::Config) => ConfigError::new_err(text),
        Some(ErrorKind::Input) => InputError::new_err(text),
        Some(ErrorKind::Storage) => StorageError::new_err(text),
        Some(ErrorKind::Busy) => BusyError::new_err(text),
        Some(ErrorKind::Index) => IndexStateError::new_err(text),
        Some(ErrorKind::Internal) | None => Error::new_err(text),
    }
}

/// The command line, in this process: `argv` with the program name first; returns the exit code.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| command::main(argv))
}

/// Settings from the JSON object the Python side made of keyword arguments (kebab-case keys). An
/// unknown one is named as the caller spelled it (snake_case), beside the ones there are.
fn settings(json: &str) -> anyhow::Result<Settings> {
    let values = match serde_json::from_str(json)? {
        serde_json::Value::Object(values) => values,
        other => anyhow::bail!("settings must be a JSON object, not {other}"),
    };
    let snake = |n: &str| format!("`{}`", n.replace('-', "_"));
    let config = |msg: String| anyhow::Error::new(corpus_dedup::Error::Config(msg));
    Settings::from_values(values).map_err(|e| match e {
        corpus_dedup::Error::UnknownSetting { name, known } => {
            let known: Vec<String> = known.iter().map(|k| snake(k)).collect();
            config(format!(
                "unknown keyword argument {} (the settings: {})",
                snake(&name),
                known.join(", ")
            ))
        }
        corpus_dedup::Error::BadSetting { name, source } => {
            config(format!("keyword argument {}: {source}", snake(&name)))
        }
        other => anyhow::Error::new(other),
    })
}

/// Runs the job; returns the summary as JSON.
#[pyfunction]
fn run(py: Python<'_>, settings_json: &str) -> PyResult<String> {
    py.detach(|| -> anyhow::Result<String> {
        let (_, summary) = command::run_job(
            None,
            settings(settings_json)?,
            &TaskOptions::default(),
            None,
            false,
        )?;
        Ok(summary.to_string())
    })
    .map_err(error)
}

/// Writes the deduplicated shards; returns the JSON line `corpus-dedup apply` prints.
#[pyfunction]
#[pyo3(signature = (manifest, output, dropped, dry_run, quiet, threads, cluster_size_column, upsample, format))]
#[expect(
    clippy::too_many_arguments,
    reason = "apply()'s keyword arguments, one each"
)]
fn apply(
    py: Python<'_>,
    manifest: String,
    output: String,
    dropped: Option<String>,
    dry_run: bool,
    quiet: bool,
    threads: Option<usize>,
    cluster_size_column: Option<String>,
    upsample: Option<String>,
    format: Option<String>,
) -> PyResult<String> {
    let upsample = match upsample {
        Some(u) => Some(u.parse().map_err(|e: String| Error::new_err(e))?),
        None => None,
    };
    let format = match format {
        Some(f) => Some(f.parse().map_err(|e: String| Error::new_err(e))?),
        None => None,
    };
    let opts = corpus_dedup::ApplyOptions {
        manifest,
        output,
        dropped,
        dry_run,
        quiet,
        cluster_size_column,
        upsample,
        format,
    };
    py.detach(|| command::apply_job(&opts, threads).map(|(_, line)| line.to_string()))
        .map_err(error)
}

/// The cluster of one document, as `corpus-dedup explain --json` prints it.
#[pyfunction]
fn explain(py: Python<'_>, output: &str, id: &str, limit: usize) -> PyResult<String> {
    py.detach(|| command::explain_json(output, id, limit))
        .map_err(error)
}

/// `corpus-dedup audit OUT --pairs N`: samples the pairs and writes the page; what it wrote.
#[pyfunction]
fn audit(py: Python<'_>, output: &str, pairs: usize, by_group: bool) -> PyResult<String> {
    py.detach(|| command::audit_json(output, pairs, by_group))
        .map_err(error)
}

/// `corpus-dedup audit OUT --score`: labels (the JSON the page exports) scored.
#[pyfunction]
fn score(py: Python<'_>, output: &str, labels_json: &str) -> PyResult<String> {
    py.detach(|| command::score_json(output, labels_json))
        .map_err(error)
}

/// A file of a run's output directory (local or s3://), as text.
#[pyfunction]
fn read_output(py: Python<'_>, output: &str, name: &str) -> PyResult<String> {
    py.detach(|| -> anyhow::Result<String> {
        let at = corpus_dedup::in_output(output, name);
        let bytes = corpus_dedup::read_location(&at)?.ok_or_else(|| {
            anyhow::anyhow!(
                "'{at}' does not exist: is '{output}' the output directory of a finished run?"
            )
        })?;
        Ok(String::from_utf8(bytes)?)
    })
    .map_err(error)
}

/// The configuration the signature kernels run with: the job's, from these settings.
fn kernel_config(settings_json: &str) -> anyhow::Result<Config> {
    let mut s = settings(settings_json)?;
    s.input = vec!["-".into()];
    s.output = Some("-".into());
    Ok(s.resolve()?)
}

/// A configuration and its MinHash permutations.
type Kernel = Arc<(Config, Permutations)>;

/// The configuration and MinHash permutations of the last settings a kernel was called with: a
/// UDF is called once per batch with the same settings, and resolving them and drawing the
/// permutations is most of the cost of a small call.
fn kernel(settings_json: &str) -> anyhow::Result<Kernel> {
    static LAST: Mutex<Option<(String, Kernel)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, k)) = last.as_ref().filter(|(json, _)| json == settings_json) {
        return Ok(Arc::clone(k));
    }
    let cfg = kernel_config(settings_json)?;
    let perms = Permutations::of(&cfg);
    let k = Arc::new((cfg, perms));
    *last = Some((settings_json.to_string(), Arc::clone(&k)));
    Ok(k)
}

/// A text column: an Arrow C stream (`__arrow_c_stream__`: polars Series, pyarrow
/// ChunkedArray), an Arrow C array (`__arrow_c_array__`: pyarrow Array) or a list of str/None.
fn texts(obj: &Bound<'_, PyAny>) -> anyhow::Result<StringChunked> {
    let name = PlSmallStr::from_static("text");
    let series = match arrow_chunks(obj)? {
        Some(chunks) => Series::try_from((name, chunks))?,
        None => {
            let values: Vec<Option<String>> = obj.extract().map_err(|_| {
                anyhow::anyhow!(
                    "texts must be a polars Series, a pyarrow Array or ChunkedArray, or a list of str (got {})",
                    obj.get_type().name().map_or_else(|_| "?".to_string(), |n| n.to_string())
                )
            })?;
            return Ok(StringChunked::from_iter_options(name, values.into_iter()));
        }
    };
    match series.str() {
        Ok(s) => Ok(s.clone()),
        Err(_) => anyhow::bail!("texts must be strings, not {}", series.dtype()),
    }
}

/// The chunks of an object offering an Arrow stream or array (None: it offers neither).
fn arrow_chunks(obj: &Bound<'_, PyAny>) -> anyhow::Result<Option<Vec<Box<dyn Array>>>> {
    let chunks: Vec<Box<dyn Array>> = if obj.hasattr("__arrow_c_stream__")? {
        let capsule = obj.call_method0("__arrow_c_stream__")?;
        let capsule = capsule.cast_into::<PyCapsule>().map_err(PyErr::from)?;
        // SAFETY: the producer's capsule holds an ArrowArrayStream (the PyCapsule protocol);
        // it is moved out, leaving a released one, so the capsule's destructor frees nothing.
        let stream = unsafe {
            let ptr = capsule
                .pointer_checked(Some(c"arrow_array_stream"))?
                .cast::<ffi::ArrowArrayStream>()
                .as_ptr();
            Box::new(std::ptr::replace(ptr, ffi::ArrowArrayStream::empty()))
        };
        // SAFETY: as above, the stream follows the C stream interface.
        let mut reader = unsafe { ffi::ArrowArrayStreamReader::try_new(stream)? };
        let mut chunks = Vec::new();
        // SAFETY: as above.
        while let Some(chunk) = unsafe { reader.next() } {
            chunks.push(chunk?);
        }
        chunks
    } else if obj.hasattr("__arrow_c_array__")? {
        let pair = obj.call_method0("__arrow_c_array__")?;
        let pair = pair.cast_into::<PyTuple>().map_err(PyErr::from)?;
        let schema = pair
            .get_item(0)?
            .cast_into::<PyCapsule>()
            .map_err(PyErr::from)?;
        let array = pair
            .get_item(1)?
            .cast_into::<PyCapsule>()
            .map_err(PyErr::from)?;
        // SAFETY: the capsules hold an ArrowSchema and an ArrowArray (the PyCapsule protocol);
        // the schema is read in place, the array moved out, leaving a released one.
        unsafe {
            let schema = schema
                .pointer_checked(Some(c"arrow_schema"))?
                .cast::<ffi::ArrowSchema>();
            let field = ffi::import_field_from_c(schema.as_ref())?;
            let ptr = array
                .pointer_checked(Some(c"arrow_array"))?
                .cast::<ffi::ArrowArray>()
                .as_ptr();
            let array = std::ptr::replace(ptr, ffi::ArrowArray::empty());
            vec![ffi::import_array_from_c(array, field.dtype)?]
        }
    } else {
        return Ok(None);
    };
    Ok(Some(chunks))
}

/// A text column with each row's `drop_spans` (the manifest's column, a list of {start, end,
/// ...} per row) cut out: what `apply` writes for a kept row. Null texts stay null.
#[pyfunction]
fn drop_spans(
    py: Python<'_>,
    texts_obj: &Bound<'_, PyAny>,
    spans_obj: &Bound<'_, PyAny>,
) -> PyResult<ArrowColumn> {
    let spans = (|| -> anyhow::Result<corpus_dedup::kernels::DropSpans> {
        let chunks = arrow_chunks(spans_obj)?.ok_or_else(|| {
            anyhow::anyhow!("spans must be a polars Series or a pyarrow array (the manifest's drop_spans column)")
        })?;
        let s = Series::try_from((PlSmallStr::from_static("drop_spans"), chunks))?;
        Ok(corpus_dedup::kernels::DropSpans::from_list(s.list()?)?)
    })()
    .map_err(error)?;
    column_kernel(py, texts_obj, move |texts| {
        let cut: Vec<Option<String>> = (texts.iter().enumerate())
            .map(|(i, t)| {
                t.map(|t| corpus_dedup::kernels::cut_spans(t, spans.of(i)))
                    .transpose()
                    .map_err(|why| anyhow::anyhow!("row {i}: {why}"))
            })
            .collect::<anyhow::Result<_>>()?;
        let ca = StringChunked::from_iter_options(PlSmallStr::from_static("text"), cut.into_iter());
        Ok(ca.rechunk().downcast_as_array().clone().boxed())
    })
}

/// A column handed to Python through `__arrow_c_array__` (polars, pyarrow and Ray read it).
#[pyclass(module = "corpus_dedup._native", frozen)]
struct ArrowColumn {
    array: Box<dyn Array>,
}

#[pymethods]
impl ArrowColumn {
    /// The schema and array capsules of the PyCapsule interface (a fresh export each call).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema; // the column is offered as it is
        let field = Field::new(
            PlSmallStr::from_static(""),
            self.array.dtype().clone(),
            true,
        );
        // A capsule's value is dropped with it, and dropping an export the consumer did not take
        // calls its release callback.
        let schema = PyCapsule::new(
            py,
            ffi::export_field_to_c(&field),
            Some(CString::from(c"arrow_schema")),
        )?;
        let array = PyCapsule::new(
            py,
            ffi::export_array_to_c(self.array.clone()),
            Some(CString::from(c"arrow_array")),
        )?;
        PyTuple::new(py, [schema.into_any(), array.into_any()])
    }

    fn __len__(&self) -> usize {
        self.array.len()
    }
}

/// The validity of a text column (None when it has no null).
fn validity(texts: &StringChunked) -> Option<Bitmap> {
    (texts.null_count() > 0).then(|| texts.iter().map(|t| t.is_some()).collect())
}

/// A kernel over a text column: the texts are imported with the GIL held, `kernel` runs
/// without it.
fn column_kernel(
    py: Python<'_>,
    texts_obj: &Bound<'_, PyAny>,
    kernel: impl FnOnce(&StringChunked) -> anyhow::Result<Box<dyn Array>> + Send,
) -> PyResult<ArrowColumn> {
    let texts = texts(texts_obj).map_err(error)?;
    py.detach(|| kernel(&texts))
        .map(|array| ArrowColumn { array })
        .map_err(error)
}

/// MinHash signatures of a text column: FixedSizeList<UInt32, K>, null where the text is null.
#[pyfunction]
fn minhash(
    py: Python<'_>,
    texts_obj: &Bound<'_, PyAny>,
    settings_json: &str,
) -> PyResult<ArrowColumn> {
    column_kernel(py, texts_obj, |texts| {
        let kernel = kernel(settings_json)?;
        let (cfg, perms) = &*kernel;
        let sigs = signatures_only(texts, perms, cfg.effective_tokenizer(), cfg.ngram);
        let values = PrimitiveArray::<u32>::from_vec(sigs.values).boxed();
        let item = Field::new(
            PlSmallStr::from_static("item"),
            ArrowDataType::UInt32,
            false,
        );
        let dtype = ArrowDataType::FixedSizeList(Box::new(item), cfg.num_perm);
        Ok(FixedSizeListArray::new(dtype, texts.len(), values, validity(texts)).boxed())
    })
}

/// SimHash fingerprints of a text column: UInt64, null where the text is null.
#[pyfunction]
fn simhash(
    py: Python<'_>,
    texts_obj: &Bound<'_, PyAny>,
    settings_json: &str,
) -> PyResult<ArrowColumn> {
    column_kernel(py, texts_obj, |texts| {
        let cfg = kernel_config(settings_json)?;
        let params = corpus_dedup::kernels::simhash_params(&cfg);
        let fps = corpus_dedup::kernels::fingerprint_column(texts, |_| None, params, None);
        let values = fps.values.into();
        Ok(PrimitiveArray::<u64>::new(ArrowDataType::UInt64, values, validity(texts)).boxed())
    })
}

/// The exact Jaccard similarity of two texts' shingle sets, as the job verifies pairs.
#[pyfunction]
fn jaccard(a: &str, b: &str, settings_json: &str) -> PyResult<f64> {
    let cfg = kernel_config(settings_json).map_err(error)?;
    let tokenizer: Tokenizer = cfg.effective_tokenizer();
    let mut scratch = Scratch::default();
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    shingle_set(a, tokenizer, cfg.ngram, &mut scratch, &mut sa);
    shingle_set(b, tokenizer, cfg.ngram, &mut scratch, &mut sb);
    Ok(set_jaccard(&sa, &sb))
}

/// The server's decisions in this process (`corpus_dedup.Index`): answers as JSON.
#[pyclass]
struct NativeIndex(corpus_dedup::Index);

#[pymethods]
impl NativeIndex {
    #[new]
    fn new(py: Python<'_>, path: &str) -> PyResult<Self> {
        py.detach(|| corpus_dedup::Index::open(path))
            .map(NativeIndex)
            .map_err(error)
    }

    #[pyo3(signature = (ids, texts, partitions=None))]
    fn check(
        &self,
        py: Python<'_>,
        ids: Vec<Option<String>>,
        texts: Vec<String>,
        partitions: Option<Vec<Option<String>>>,
    ) -> PyResult<String> {
        py.detach(|| self.0.check(ids, texts, partitions))
            .map(|v| v.to_string())
            .map_err(error)
    }

    #[pyo3(signature = (ids, texts, partitions=None))]
    fn add(
        &self,
        py: Python<'_>,
        ids: Vec<String>,
        texts: Vec<String>,
        partitions: Option<Vec<Option<String>>>,
    ) -> PyResult<String> {
        py.detach(|| self.0.add(ids, texts, partitions))
            .map(|v| v.to_string())
            .map_err(error)
    }

    fn remove(&self, py: Python<'_>, id: &str) -> PyResult<bool> {
        py.detach(|| self.0.remove(id)).map_err(error)
    }

    fn stats(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| self.0.stats())
            .map(|v| v.to_string())
            .map_err(error)
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("StorageError", m.py().get_type::<StorageError>())?;
    m.add("BusyError", m.py().get_type::<BusyError>())?;
    m.add("IndexStateError", m.py().get_type::<IndexStateError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<ArrowColumn>()?;
    m.add_class::<NativeIndex>()?;
    for f in [
        wrap_pyfunction!(cli, m)?,
        wrap_pyfunction!(run, m)?,
        wrap_pyfunction!(apply, m)?,
        wrap_pyfunction!(explain, m)?,
        wrap_pyfunction!(audit, m)?,
        wrap_pyfunction!(score, m)?,
        wrap_pyfunction!(read_output, m)?,
        wrap_pyfunction!(minhash, m)?,
        wrap_pyfunction!(simhash, m)?,
        wrap_pyfunction!(jaccard, m)?,
        wrap_pyfunction!(drop_spans, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
