"""``tf.data`` as TF1 input functions use it, mapped onto shoal's C++ readers.

An input_fn returns one of these datasets; nothing is read in Python. The dataset describes a
file input of the job config (docs/config.md, "input.train, input.eval"): the files, the format,
the columns and their types, batching, shuffling and epochs. The C++ pipeline then reads and
parses the files on its own threads, and in a cluster hands them out as data tasks.

Supported shapes (anything else is refused with the reason):

    tf.data.experimental.make_csv_dataset(pattern, batch_size, label_name=..., ...)
    tf.data.TFRecordDataset(files).map(lambda r: tf.io.parse_single_example(r, spec))...
    tf.data.TextLineDataset(files).skip(1).map(lambda l: parse(tf.io.decode_csv(l, defaults)))
    ... .shuffle(n, seed).repeat(epochs).batch(size, drop_remainder).prefetch(n)

A map function runs once, on stand-in values, to learn the columns: it may build the features
dict, pop the label and return ``(features, label)``.
"""

import csv
import glob
import io as _io
import numbers
import os

from shoal import dtypes

__all__ = ["Dataset", "TFRecordDataset", "TextLineDataset", "CriteoDataset", "LibsvmDataset",
           "experimental", "AUTOTUNE",
           "parse_single_example", "parse_example", "decode_csv"]

AUTOTUNE = -1


class _Column:
    """A stand-in for one parsed column inside a map function."""

    def __init__(self, name, kind, default=None):
        self.name, self.kind, self.default = name, kind, default

    def __repr__(self):
        return f"<column {self.name!r}>"


class _Record:
    """A stand-in for one serialized record (TFRecord) or line (text) inside a map function."""

    def __init__(self, kind):
        self.kind = kind  # "tfrecord" | "line"
        self.parsed = None


class Dataset:
    """A file input, built up by TF's dataset methods."""

    def __init__(self, files, format_, header=False, compression=None):
        self.files = files
        self.format = format_
        self.header = header
        self.compression = compression
        self.schema = None      # [(name, kind, default)] in field order (csv) or read (tfrecord)
        self.label = None
        self.batch_size = None
        self.drop_remainder = False
        self.num_epochs = 1
        self.shuffle_buffer = 0
        self.seed = 0
        self.bad_records = "fail"
        self.shuffle_files = False

    def _copy(self):
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    # -- TF's methods --
    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        if self.format in ("criteo", "libsvm"):
            raise ValueError(f"Dataset.map: {self.format} records are parsed by the engine "
                             "already; use the features as they come")
        if self.schema is not None:
            raise ValueError("Dataset.map: the records are parsed already; one map that parses "
                             "them is supported")
        record = _Record("tfrecord" if self.format == "tfrecord" else "line")
        out = map_func(record)
        if record.parsed is None:
            raise ValueError("Dataset.map: the map function must parse the record with "
                             "tf.io.parse_single_example / parse_example (TFRecord) or "
                             "tf.io.decode_csv (text lines); shoal runs the parsing in C++")
        new = self._copy()
        features, label = (out if isinstance(out, tuple) and len(out) == 2 else (out, None))
        if not isinstance(features, dict):
            raise ValueError("Dataset.map: the map function must return a dict of features, or "
                             "(features, label)")
        if label is not None and not isinstance(label, _Column):
            raise ValueError("Dataset.map: the label must be one parsed column")
        # Hashed ids (string_to_hash_bucket_fast) stand for their column, named by the dict.
        new.hashed = {}
        for key, value in list(features.items()):
            if isinstance(value, _HashedIds):
                if record.kind != "line":
                    raise NotImplementedError("string_to_hash_bucket_fast: on text lines only "
                                              "(decode_csv's columns)")
                new.hashed[key] = (value.num_buckets, value.delimiter)
                features = dict(features, **{key: value.column})
        if record.kind == "line":
            # decode_csv's columns in field order, named by the dict; the label (popped from it)
            # by the header line when the files have one, else "__label__".
            names = {id(c): k for k, c in features.items() if isinstance(c, _Column)}
            header = _header_of(self.files, getattr(record, "delimiter", ",")) \
                if self.header else None
            if header is not None and len(header) != len(record.parsed):
                raise ValueError(f"Dataset.map: decode_csv has {len(record.parsed)} defaults, "
                                 f"the header of {self.files[0]} {len(header)} fields")
            schema = []
            for i, c in enumerate(record.parsed):
                name = names.get(id(c))
                if header is not None:
                    if name is not None and name != header[i]:
                        raise ValueError(f"Dataset.map: field {i} is named {name!r} by the map "
                                         f"and {header[i]!r} by the header of {self.files[0]}: "
                                         "use the header's names")
                    name = header[i]
                elif c is label:
                    name = "__label__"
                elif name is None:
                    name = f"_unused_{c.name}"
                schema.append((name, c.kind, c.default))
                if c is label:
                    new.label = name
            new.schema = schema
            new.list_separators = {k: d for k, (_, d) in new.hashed.items() if d}
            if label is not None and new.label is None:
                raise ValueError("Dataset.map: the label must be one of decode_csv's columns")
            if label is None:
                new.label = None
            new.format = "tsv" if getattr(record, "delimiter", ",") == "\t" else "csv"
        else:
            new.schema = [(c.name, c.kind, c.default) for c in record.parsed]
            new.label = label.name if label is not None else None
        return new

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None):
        if not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise ValueError(f"Dataset.batch: batch_size must be >= 1, got {batch_size!r}")
        new = self._copy()
        new.batch_size = int(batch_size)
        new.drop_remainder = bool(drop_remainder)
        return new

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        new = self._copy()
        new.shuffle_buffer = int(buffer_size)
        new.seed = int(seed or 0)
        return new

    def repeat(self, count=None):
        new = self._copy()
        new.num_epochs = 0 if count is None or count < 0 else int(count)
        # In-memory inputs: repeat before batch lets batches span epochs (file inputs' pipeline
        # does so always).
        new.batches_span_epochs = self.batch_size is None
        return new

    def skip(self, count):
        if self.format == "tfrecord" or count != 1:
            raise ValueError("Dataset.skip: only skip(1) of a text file's header line is "
                             "supported")
        new = self._copy()
        new.header = True
        return new

    def prefetch(self, buffer_size):
        return self

    def cache(self, filename=""):
        return self

    def shard(self, num_shards, index):
        # shoal's data tasks hand files out to the trainers that ask (design section 1): a static
        # shard would idle the fast ones.
        return self

    def input_section(self, label_vocabulary=None):
        """(the job config's input section, the label column)."""
        if self.schema is None and self.format in ("tfrecord", "tsv"):
            raise ValueError("the dataset's records are not parsed: map them with "
                             "tf.io.parse_single_example / tf.io.decode_csv")
        del label_vocabulary  # the engine maps string labels (features.label_vocabulary)
        section = {"files": list(self.files), "format": self.format,
                   "num_epochs": self.num_epochs, "batch_size": self.batch_size or 1,
                   "drop_remainder": self.drop_remainder, "bad_records": self.bad_records}
        if self.shuffle_buffer > 1:
            section["shuffle_buffer"] = self.shuffle_buffer
            section["seed"] = self.seed
        if self.shuffle_files:  # make_csv_dataset(shuffle=True) shuffles the files too, as TF
            section["shuffle_files"] = True
        if self.format in ("csv", "tsv"):
            section["header"] = self.header
        if self.schema:
            schema = []
            separators = getattr(self, "list_separators", {})
            for name, kind, default in self.schema:
                entry = {"name": name, "type": kind}
                if default is not None:
                    entry["default"] = str(default)
                if name in separators:
                    entry["list_separator"] = separators[name]
                schema.append(entry)
            section["schema"] = schema
        return section, self.label


class TensorSliceDataset(Dataset):
    """``tf.data.Dataset.from_tensor_slices((features, labels))`` over numpy/pandas data: an
    in-memory input like numpy_input_fn (batched, shuffled and repeated in C++)."""

    def __init__(self, tensors):
        super().__init__([], "memory")
        if isinstance(tensors, tuple) and len(tensors) == 2:
            features, labels = tensors
        else:
            features, labels = tensors, None
        if hasattr(features, "columns") and hasattr(features, "to_dict"):  # a DataFrame
            features = {str(c): features[c] for c in features.columns}
        if not isinstance(features, dict):
            raise ValueError("from_tensor_slices: give a dict of feature arrays (or a DataFrame), "
                             "optionally with the labels: (features, labels)")
        self.features, self.labels = features, labels
        self.batches_span_epochs = False

    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        raise ValueError("Dataset.map on in-memory slices is not supported: transform the arrays "
                         "before from_tensor_slices")

    def table_input(self):
        from shoal.estimator.inputs import TableInput
        return TableInput(self.features, self.labels, self.batch_size or 1,
                          None if self.num_epochs == 0 else self.num_epochs,
                          self.shuffle_buffer > 1, self.drop_remainder, "from_tensor_slices",
                          batches_span_epochs=self.batches_span_epochs)


def _from_tensor_slices(tensors):
    return TensorSliceDataset(tensors)


Dataset.from_tensor_slices = staticmethod(_from_tensor_slices)


class GeneratorDataset(Dataset):
    """``tf.data.Dataset.from_generator(generator, output_types)``: the generator runs once per
    call (train, evaluate, ...), in Python; what it yields is then read by the engine.

    - Lines of text (``output_types=tf.string``) mapped with ``tf.io.decode_csv``: the lines are
      written to a temporary file that the engine's CSV/TSV reader reads (the story of the
      users' post 001: ``yield "\\t".join(...)``, then ``decode_csv(..., field_delim="\\t")``).
    - ``(features_dict, label)`` or ``features_dict`` of numbers and strings: collected into
      arrays, read as an in-memory table (as from_tensor_slices).
    """

    def __init__(self, generator, output_types=None, output_shapes=None, args=None,
                 output_signature=None):
        super().__init__([], "generator")
        if not callable(generator):
            raise TypeError("from_generator: generator must be callable (it is called for each "
                            "pass over the data)")
        self.generator = generator
        self.args = tuple(args or ())
        self.map_func = None

    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        if self.map_func is not None:
            raise ValueError("Dataset.map: one map over a generator's records is supported")
        new = self._copy()
        new.map_func = map_func
        return new

    def materialize(self, directory):
        """The dataset the engine reads: a text file in `directory`, or an in-memory table."""
        import numpy as np
        items = list(self.generator(*self.args))
        if not items:
            raise ValueError("from_generator: the generator yielded nothing")
        first = items[0]
        if isinstance(first, (str, bytes)):
            if self.map_func is None:
                raise ValueError("from_generator: lines of text must be parsed with a map that "
                                 "calls tf.io.decode_csv")
            path = os.path.join(directory, f"generator-{len(os.listdir(directory))}.txt")
            with open(path, "w", encoding="utf-8") as f:
                for line in items:
                    text = line.decode("utf-8") if isinstance(line, bytes) else line
                    if "\n" in text:
                        raise ValueError("from_generator: a yielded line holds a newline")
                    f.write(text + "\n")
            lines = TextLineDataset([path]).map(self.map_func)
            return self._carry_settings(lines)
        if self.map_func is not None:
            items = [self.map_func(item) for item in items]
            first = items[0]
        if isinstance(first, tuple) and len(first) == 2 and isinstance(first[0], dict):
            features = {k: np.asarray([item[0][k] for item in items]) for k in first[0]}
            labels = np.asarray([item[1] for item in items])
        elif isinstance(first, dict):
            features = {k: np.asarray([item[k] for item in items]) for k in first}
            labels = None
        else:
            raise ValueError("from_generator: yield lines of text, a dict of features, or "
                             f"(features, label); got {type(first).__name__}")
        for key, values in features.items():
            if values.dtype.kind in "US":
                features[key] = values.astype(object)
        slices = TensorSliceDataset((features, labels) if labels is not None else features)
        return self._carry_settings(slices)

    def _carry_settings(self, target):
        for key in ("batch_size", "drop_remainder", "num_epochs", "shuffle_buffer", "seed"):
            setattr(target, key, getattr(self, key))
        if isinstance(target, TensorSliceDataset):
            target.batches_span_epochs = getattr(self, "batches_span_epochs", False)
        target.generated_here = True  # the data lives in this process only (a cluster refuses it)
        return target


def _from_generator(generator, output_types=None, output_shapes=None, args=None,
                    output_signature=None):
    return GeneratorDataset(generator, output_types, output_shapes, args, output_signature)


Dataset.from_generator = staticmethod(_from_generator)


class TFRecordDataset(Dataset):
    """``tf.data.TFRecordDataset``: records of ``tf.train.Example`` (gzip/zlib too)."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        super().__init__(_files(filenames), "tfrecord")


class TextLineDataset(Dataset):
    """``tf.data.TextLineDataset``: lines, parsed with ``tf.io.decode_csv`` in a map."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        super().__init__(_files(filenames), "csv")


class CriteoDataset(Dataset):
    """shoal's own: Criteo-style text (label, I1..I13, C1..C26, tab-separated), read by the
    engine's Criteo parser; batches of (features, "label")."""

    def __init__(self, filenames):
        super().__init__(_files(filenames), "criteo")
        self.schema = []
        self.label = "label"


class LibsvmDataset(Dataset):
    """shoal's own: libsvm text (``label id:value ...``), read by the engine's libsvm parser;
    features ``ids`` and ``values``, label ``label``."""

    def __init__(self, filenames):
        super().__init__(_files(filenames), "libsvm")
        self.schema = []
        self.label = "label"


def _files(filenames):
    if isinstance(filenames, (str, os.PathLike)):
        filenames = [filenames]
    files = [os.fspath(f) for f in filenames]
    if not files:
        raise ValueError("no files")
    return [f if "://" in f else os.path.abspath(f) for f in files]


def _first_lines(files, count, where):
    """The first `count` lines of the first local file (in glob order), or None when the files
    are not local (hdfs:// and the like). FileNotFoundError when its pattern matches nothing."""
    path = next((f for f in files if "://" not in f), None)
    if path is None:
        return None
    matches = sorted(glob.glob(path))
    if not matches:
        raise FileNotFoundError(f"{where}: no file matches {path!r}")
    with open(matches[0], encoding="utf-8", newline="") as f:
        return "".join(line for _, line in zip(range(count), f))


def _header_of(files, delimiter):
    """The header fields of the first local file, or None."""
    line = _first_lines(files, 1, "Dataset.map")
    if line is None:
        return None
    return next(csv.reader([line], delimiter=delimiter), [])


def _kind_of(dtype):
    if dtypes.is_string(dtype):
        return "string"
    if dtypes.is_integer(dtype):
        return "int64"
    return "float"


# ---- parsing functions (tf.io) ----

def parse_single_example(serialized, features, name=None, example_names=None):
    """``tf.io.parse_single_example`` inside a dataset's map."""
    if not isinstance(serialized, _Record) or serialized.kind != "tfrecord":
        raise ValueError("parse_single_example: shoal parses records in C++: call it inside "
                         "TFRecordDataset(...).map(...)")
    columns = {}
    for key, spec in features.items():
        default = getattr(spec, "default_value", None)
        if isinstance(default, (list, tuple)):
            default = default[0] if default else None
        columns[key] = _Column(key, _kind_of(spec.dtype), default)
    serialized.parsed = list(columns.values())
    return dict(columns)


parse_example = parse_single_example


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, na_value="",
               select_cols=None, name=None):
    """``tf.io.decode_csv`` inside a TextLineDataset's map: one column per default."""
    if not isinstance(records, _Record) or records.kind != "line":
        raise ValueError("decode_csv: shoal parses lines in C++: call it inside "
                         "TextLineDataset(...).map(...)")
    if field_delim not in (",", "\t"):
        raise ValueError(f"decode_csv: field_delim {field_delim!r}: shoal reads ',' and tab")
    if select_cols is not None:
        raise NotImplementedError("decode_csv: select_cols is not supported")
    columns = []
    for i, default in enumerate(record_defaults):
        value = default[0] if isinstance(default, (list, tuple)) and default else None
        if isinstance(value, str):
            kind = "string"
        elif isinstance(value, bool) or isinstance(value, numbers.Integral):
            kind = "int64"
        elif isinstance(value, numbers.Real):
            kind = "float"
        elif value is None and isinstance(default, dtypes.DType):
            kind = _kind_of(default)
        else:
            raise ValueError(f"decode_csv: record_defaults[{i}] must be [value] or [] with a "
                             f"type, got {default!r}")
        columns.append(_Column(f"field{i}", kind, value if value != "" else None))
    records.parsed = columns
    records.delimiter = field_delim
    return list(columns)


# ---- string ops of a map (tf.string_split, tf.string_to_hash_bucket_fast) ----

class _SplitStrings:
    """``tf.string_split`` of one parsed string column: the engine splits the field at the
    delimiter as it reads the line (a list column, the schema's ``list_separator``)."""

    def __init__(self, column, delimiter):
        self.column, self.delimiter = column, delimiter

    @property
    def values(self):
        return _SplitValues(self)

    @property
    def indices(self):
        raise NotImplementedError("string_split: .indices is not available in shoal's parse "
                                  "functions; hash .values with string_to_hash_bucket_fast")

    dense_shape = indices


class _SplitValues:
    def __init__(self, split):
        self.split = split


class _HashedIds:
    """``tf.string_to_hash_bucket_fast`` of a parsed string column or of its split values: the
    engine hashes each value into ``num_buckets`` ids (a hashed categorical column; MurmurHash64,
    not TF's FarmHash: other ids, the same distribution)."""

    def __init__(self, column, num_buckets, delimiter):
        self.column, self.num_buckets, self.delimiter = column, num_buckets, delimiter


def string_split(source, delimiter=" ", skip_empty=True):
    """``tf.string_split([column], delimiter)`` inside a dataset's map."""
    if isinstance(source, (list, tuple)) and len(source) == 1:
        source = source[0]
    if not isinstance(source, _Column) or source.kind != "string":
        raise ValueError("string_split: shoal splits one parsed string column (decode_csv's) "
                         "inside the dataset's map")
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in ",\t\n\"":
        raise NotImplementedError(f"string_split: delimiter {delimiter!r}: shoal splits at one "
                                  "character other than the line's field delimiter and quotes")
    if not skip_empty:
        raise NotImplementedError("string_split: skip_empty=False is not supported")
    return _SplitStrings(source, delimiter)


def string_to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002 (TF's name)
    """``tf.string_to_hash_bucket_fast`` inside a dataset's map, of a parsed string column or of
    ``string_split(...).values``."""
    if isinstance(input, _SplitValues):
        column, delimiter = input.split.column, input.split.delimiter
    elif isinstance(input, _Column) and input.kind == "string":
        column, delimiter = input, None
    else:
        raise ValueError("string_to_hash_bucket_fast: shoal hashes a parsed string column or "
                         "string_split(...).values inside the dataset's map")
    if not isinstance(num_buckets, numbers.Integral) or num_buckets < 1:
        raise ValueError(f"string_to_hash_bucket_fast: num_buckets must be >= 1, got "
                         f"{num_buckets!r}")
    return _HashedIds(column, int(num_buckets), delimiter)


# ---- tf.data.experimental ----

def _infer_types(files, header, column_names, delimiter, rows=100):
    """Column kinds from the first rows of the first local file, as make_csv_dataset does."""
    text = _first_lines(files, rows + 1, "make_csv_dataset")
    if text is None:
        return None
    reader = csv.reader(_io.StringIO(text), delimiter=delimiter)
    lines = list(reader)
    if header and lines:
        names = column_names or lines[0]
        lines = lines[1:]
    else:
        names = column_names
    if not names:
        raise ValueError("make_csv_dataset: column_names are needed when header=False")
    kinds = []
    for i, name in enumerate(names):
        values = [row[i] for row in lines if i < len(row) and row[i] != ""]
        kind = "int64"
        for v in values:
            try:
                int(v)
                continue
            except ValueError:
                pass
            try:
                float(v)
                kind = "float"
            except ValueError:
                kind = "string"
                break
        kinds.append(kind)
    return list(zip(names, kinds))


class _Experimental:
    AUTOTUNE = AUTOTUNE

    @staticmethod
    def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None,
                         label_name=None, select_columns=None, field_delim=",",
                         use_quote_delim=True, na_value="", header=True, num_epochs=None,
                         shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                         prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False,
                         num_rows_for_inference=100, compression_type=None,
                         ignore_errors=False):
        """``tf.data.experimental.make_csv_dataset``: batches of (features, label) from CSV
        files; column types from ``column_defaults`` or inferred from the first rows."""
        if field_delim not in (",", "\t"):
            raise ValueError(f"make_csv_dataset: field_delim {field_delim!r}: shoal reads ',' "
                             "and tab")
        if na_value != "":
            raise NotImplementedError("make_csv_dataset: na_value other than '' is not "
                                      "supported (empty fields are missing values)")
        files = _files(file_pattern)
        ds = Dataset(files, "csv" if field_delim == "," else "tsv", header=header)
        if column_defaults is not None:
            names = column_names
            if names is None:
                inferred = _infer_types(files, header, None, field_delim, 0)
                names = [n for n, _ in inferred] if inferred else None
            if names is None or len(names) != len(column_defaults):
                raise ValueError("make_csv_dataset: column_defaults must have one entry per "
                                 "column")
            schema = []
            for name, default in zip(names, column_defaults):
                value = default[0] if isinstance(default, (list, tuple)) and default else default
                if isinstance(value, dtypes.DType):
                    schema.append((name, _kind_of(value), None))
                elif isinstance(value, str):
                    schema.append((name, "string", value or None))
                elif isinstance(value, numbers.Integral):
                    schema.append((name, "int64", value))
                else:
                    schema.append((name, "float", value))
        else:
            inferred = _infer_types(files, header, column_names, field_delim,
                                    num_rows_for_inference)
            if inferred is None:
                raise ValueError("make_csv_dataset: give column_defaults for files not on the "
                                 "local disk (the types cannot be inferred)")
            schema = [(n, k, None) for n, k in inferred]
        if label_name is not None and label_name not in [n for n, _, _ in schema]:
            raise ValueError(f"make_csv_dataset: label_name {label_name!r} is not a column: "
                             f"{[n for n, _, _ in schema]}")
        ds.schema = schema
        ds.label = label_name
        ds.batch_size = int(batch_size)
        ds.num_epochs = 0 if num_epochs is None else int(num_epochs)
        if shuffle:
            ds.shuffle_buffer = int(shuffle_buffer_size)
            ds.seed = int(shuffle_seed or 0)
            ds.shuffle_files = True
        if ignore_errors:
            ds.bad_records = "skip"
        return ds


experimental = _Experimental()
