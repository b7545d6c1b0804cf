"""In-memory inputs: ``tf.estimator.inputs.numpy_input_fn`` and ``pandas_input_fn`` (TF 1.x's
names and arguments).

The arrays are copied once into a C++ table, column by column, when the input is first used;
batching, shuffling and epochs then run in C++ with no Python per value or per batch. Shuffling is
an exact per-epoch permutation of all rows (TF's is a queue of ``queue_capacity`` rows), seeded by
the RunConfig's ``tf_random_seed``. ``queue_capacity`` and ``num_threads`` are accepted and unused.
"""

import numbers

import numpy as np

__all__ = ["numpy_input_fn", "pandas_input_fn", "TableInput"]

_TARGET = "__label__"


class TableInput:
    """What an in-memory input_fn returns: named columns and batching options."""

    def __init__(self, features, labels, batch_size, num_epochs, shuffle, drop_remainder=False,
                 name="input_fn", batches_span_epochs=True):
        self.features = features  # name -> np.ndarray (rows first)
        self.labels = labels      # np.ndarray or None
        self.batch_size = batch_size
        self.num_epochs = num_epochs  # None = repeat
        self.shuffle = shuffle
        self.drop_remainder = drop_remainder
        self.name = name
        # TF's numpy/pandas queue lets a batch span two epochs; tf.data's batch-then-repeat not.
        self.batches_span_epochs = batches_span_epochs

    @property
    def num_rows(self):
        first = next(iter(self.features.values()))
        return len(first)


def _column_array(name, values, rows, where):
    """(type, array) for the engine: float32, int64 or an object array of str."""
    if hasattr(values, "to_numpy"):  # pandas Series
        values = values.to_numpy(dtype=object) if values.dtype.kind not in "fiub" \
            else values.to_numpy()
    array = np.asarray(values)
    if array.ndim == 0:
        raise ValueError(f"{where}: feature {name!r} is a scalar; give one value per row")
    if array.ndim > 2:
        array = array.reshape(array.shape[0], -1)
    if len(array) != rows:
        raise ValueError(f"{where}: feature {name!r} has {len(array)} rows, the first feature "
                         f"{rows}")
    kind = array.dtype.kind
    if kind == "f":
        return "float", np.ascontiguousarray(array, dtype=np.float32)
    if kind in "iu":
        if kind == "u" and array.size and array.max() > np.iinfo(np.int64).max:
            raise ValueError(f"{where}: feature {name!r} has values beyond int64")
        return "int64", np.ascontiguousarray(array, dtype=np.int64)
    if kind == "b":
        return "int64", np.ascontiguousarray(array, dtype=np.int64)
    if kind in "US":
        if array.ndim != 1:
            raise ValueError(f"{where}: string feature {name!r} must have one value per row")
        return "string", array.astype(object)
    if kind == "O":
        if array.ndim != 1:
            raise ValueError(f"{where}: feature {name!r} must have one value per row")
        sample = next((v for v in array if v is not None and not (isinstance(v, float)
                                                                   and v != v)), None)
        if sample is None or isinstance(sample, (str, bytes)):
            return "string", array
        if isinstance(sample, numbers.Integral):
            return "int64", np.asarray([0 if v is None else v for v in array], dtype=np.int64)
        if isinstance(sample, numbers.Real):
            return "float", np.asarray([np.nan if v is None else v for v in array],
                                       dtype=np.float32)
        raise ValueError(f"{where}: feature {name!r} holds {type(sample).__name__} values; "
                         "shoal reads numbers and strings")
    raise ValueError(f"{where}: feature {name!r} has dtype {array.dtype}, which shoal cannot read")


def table_columns(table_input, label_name, expected_types=None, label_vocabulary=None,
                  label_is_float=False):
    """The [(name, type, array)] columns of a TableInput for _core.Table. ``expected_types`` maps
    the keys the feature columns read to float/int64/string: numbers read by a categorical column
    of strings become strings, integers read by a numeric column stay integers (the engine reads
    both)."""
    where = table_input.name
    features = table_input.features
    if not features:
        raise ValueError(f"{where}: no features")
    rows = table_input.num_rows
    columns = []
    for name, values in features.items():
        if not isinstance(name, str):
            raise ValueError(f"{where}: feature names must be strings, got {name!r}")
        kind, array = _column_array(name, values, rows, where)
        want = (expected_types or {}).get(name)
        if want == "string" and kind != "string":
            if array.ndim != 1:
                raise ValueError(f"{where}: feature {name!r} must have one value per row")
            array = np.asarray([str(v) for v in array.tolist()], dtype=object)
            kind = "string"
        elif want == "int64" and kind == "float":
            raise ValueError(f"{where}: feature {name!r} holds floats, but its feature column "
                             "reads integer ids (categorical_column_with_identity / an integer "
                             "vocabulary or hash)")
        columns.append((name, kind, array))
    if table_input.labels is not None:
        labels = table_input.labels
        if hasattr(labels, "to_numpy"):
            labels = labels.to_numpy()
        labels = np.asarray(labels)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim != 1 or len(labels) != rows:
            raise ValueError(f"{where}: labels must be one value per row ({rows} rows), got "
                             f"shape {labels.shape}")
        if label_vocabulary is not None:
            labels = _label_ids(labels, label_vocabulary, where)
        elif labels.dtype.kind in "OUS":
            raise ValueError(f"{where}: the labels are strings; pass label_vocabulary=[...] to "
                             "the estimator (e.g. label_vocabulary=['<=50K', '>50K'])")
        columns.append((label_name, "float", np.ascontiguousarray(labels, dtype=np.float32)))
    return columns


def _label_ids(labels, vocabulary, where):
    index = {v: i for i, v in enumerate(vocabulary)}
    ids = np.empty(len(labels), dtype=np.float32)
    for row, value in enumerate(labels.tolist()):
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        i = index.get(value)
        if i is None:
            raise ValueError(f"{where}: row {row}: label {value!r} is not in label_vocabulary "
                             f"{list(vocabulary)}")
        ids[row] = i
    return ids


def _check_common(function, batch_size, num_epochs, shuffle):
    if shuffle is None:
        raise ValueError(f"{function}: shuffle must be provided explicitly (True or False), as "
                         "in TF")
    if not isinstance(batch_size, numbers.Integral) or batch_size < 1:
        raise ValueError(f"{function}: batch_size must be a positive integer, got {batch_size!r}")
    if num_epochs is not None and (not isinstance(num_epochs, numbers.Integral) or
                                   num_epochs < 1):
        raise ValueError(f"{function}: num_epochs must be None (repeat) or >= 1, got "
                         f"{num_epochs!r}")


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                   num_threads=1):
    """``tf.estimator.inputs.numpy_input_fn``: ``x`` a dict of arrays (a bare array becomes the
    feature ``"x"``), ``y`` an array of labels (or None to predict)."""
    _check_common("numpy_input_fn", batch_size, num_epochs, shuffle)
    if isinstance(x, dict):
        features = dict(x)
    elif isinstance(x, np.ndarray):
        features = {"x": x}
    else:
        raise TypeError(f"numpy_input_fn: x must be a dict of numpy arrays, got "
                        f"{type(x).__name__}")
    if not features:
        raise ValueError("numpy_input_fn: x is empty")
    rows = {k: len(np.asarray(v)) if np.ndim(v) else -1 for k, v in features.items()}
    if len(set(rows.values())) != 1 or -1 in rows.values():
        raise ValueError(f"numpy_input_fn: every array of x must have the same number of rows, "
                         f"got {rows}")
    if y is not None and len(y) != next(iter(rows.values())):
        raise ValueError(f"numpy_input_fn: y has {len(y)} rows, x {next(iter(rows.values()))}")

    def input_fn():
        return TableInput(features, y, int(batch_size), num_epochs, bool(shuffle),
                          name="numpy_input_fn")
    return input_fn


def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                    num_threads=1, target_column="target"):
    """``tf.estimator.inputs.pandas_input_fn``: ``x`` a DataFrame (its columns are the
    features), ``y`` a Series of labels (or None to predict)."""
    _check_common("pandas_input_fn", batch_size, num_epochs, shuffle)
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("pandas_input_fn needs pandas: pip install pandas") from None
    if not isinstance(x, pd.DataFrame):
        raise TypeError(f"pandas_input_fn: x must be a pandas DataFrame, got {type(x).__name__}")
    if y is not None:
        if target_column in x.columns:
            raise ValueError(f"pandas_input_fn: cannot use name {target_column} for target "
                             "column: DataFrame already has a column with that name: "
                             f"{list(x.columns)}")
        if not np.array_equal(np.asarray(x.index), np.asarray(y.index)):
            raise ValueError("pandas_input_fn: index for x and y are mismatched.\nIndex for x: "
                             f"{x.index}\nIndex for y: {y.index}\n")
    features = {str(c): x[c] for c in x.columns}

    def input_fn():
        return TableInput(features, y, int(batch_size), num_epochs, bool(shuffle),
                          name="pandas_input_fn")
    return input_fn
