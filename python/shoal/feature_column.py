"""TF1's feature columns (``tf.feature_column``), as descriptions that shoal's C++ engine applies.

Names, arguments and defaults follow TensorFlow 1.x; docs/python.md lists what differs. A column
here computes nothing in Python: the canned estimators turn the columns they are given into the
``features`` section of a job config (docs/config.md, docs/feature_columns.md), and the engine
applies them to every batch in C++.

Every unsupported argument value is refused with a ``ValueError`` naming the column and the
argument, never silently ignored.
"""

import numbers
import os

from shoal import dtypes

__all__ = [
    "numeric_column", "bucketized_column", "categorical_column_with_hash_bucket",
    "categorical_column_with_vocabulary_list", "categorical_column_with_vocabulary_file",
    "categorical_column_with_identity", "crossed_column", "embedding_column",
    "shared_embedding_columns", "shared_embeddings", "indicator_column",
    "weighted_categorical_column", "make_parse_example_spec", "FixedLenFeature", "VarLenFeature",
]


class FeatureColumn:
    """Base of every column; ``name`` is TF's name for it."""

    name = None

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


class DenseColumn(FeatureColumn):
    """A column giving dense values per example (numeric, indicator, embedding)."""


class CategoricalColumn(FeatureColumn):
    """A column giving ids per example."""

    def _sources(self):
        """Raw input keys this column reads, with the dtype it expects of them."""
        return {}


# ---- numeric ----

class _Symbol:
    """A stand-in value that records what a normalizer_fn does to it, so that the engine can run
    the same normalisation: (x - mean) / stddev and log1p(x) are the forms it knows."""

    def __init__(self, shift=0.0, scale=1.0, log1p=False):
        self.shift, self.scale, self.log1p = shift, scale, log1p  # value = (x - shift) * scale

    def _linear(self):
        if self.log1p:
            raise _Unsupported("arithmetic after log1p")
        return self

    def __sub__(self, other):
        s = self._linear()
        return _Symbol(s.shift + _number(other) / s.scale, s.scale)

    def __add__(self, other):
        s = self._linear()
        return _Symbol(s.shift - _number(other) / s.scale, s.scale)

    __radd__ = __add__

    def __truediv__(self, other):
        s = self._linear()
        return _Symbol(s.shift, s.scale / _number(other))

    def __mul__(self, other):
        s = self._linear()
        return _Symbol(s.shift, s.scale * _number(other))

    __rmul__ = __mul__

    def __rsub__(self, other):
        raise _Unsupported("a value minus the feature")

    def __rtruediv__(self, other):
        raise _Unsupported("a value divided by the feature")

    def __getattr__(self, name):
        raise _Unsupported(f"the attribute {name!r}")


class _Unsupported(Exception):
    pass


def _number(value):
    if isinstance(value, numbers.Real):
        return float(value)
    try:
        import numpy as np
        array = np.asarray(value, dtype=float)
        if array.size == 1:
            return float(array.reshape(()))
    except (TypeError, ValueError):
        pass
    raise _Unsupported(f"arithmetic with {type(value).__name__}")


def log1p(x):
    """``tf.math.log1p`` as a normalizer_fn knows it (shoal.compat.v1.math.log1p is this)."""
    if isinstance(x, _Symbol):
        if x.log1p or x.shift != 0.0 or x.scale != 1.0:
            raise _Unsupported("log1p of an already transformed value")
        return _Symbol(log1p=True)
    import numpy as np
    return np.log1p(x)


def _normalizer_config(key, normalizer_fn):
    try:
        result = normalizer_fn(_Symbol())
        if not isinstance(result, _Symbol):
            raise _Unsupported(f"it returned {type(result).__name__}")
    except (_Unsupported, TypeError, ArithmeticError) as e:
        raise ValueError(
            f"numeric_column({key!r}): normalizer_fn is not one of the forms shoal runs in C++ "
            f"({e}): use (x - mean) / stddev, x * scale + shift, or tf.math.log1p(x)") from None
    if result.log1p:
        return {"normalizer": "log1p"}
    if result.shift == 0.0 and result.scale == 1.0:
        return {}
    if result.scale <= 0:
        raise ValueError(f"numeric_column({key!r}): normalizer_fn scales by {result.scale}; "
                         "shoal's standardize needs a positive scale")
    return {"normalizer": "standardize", "mean": result.shift, "stddev": 1.0 / result.scale}


class NumericColumn(DenseColumn):
    def __init__(self, key, shape, default_value, dtype, normalizer_fn):
        self.key = self.name = key
        self.shape = shape
        self.default_value = default_value
        self.dtype = dtype
        self.normalizer_fn = normalizer_fn
        self.dimension = 1
        for d in shape:
            self.dimension *= d

    def _config(self):
        c = {"name": self.name, "source": self.key}
        if self.dimension != 1:
            c["dimension"] = self.dimension
        if self.default_value is not None:
            c["default_value"] = float(self.default_value)
        if self.normalizer_fn is not None:
            c.update(_normalizer_config(self.key, self.normalizer_fn))
        return c

    def _sources(self):
        return {self.key: "float"}


def _check_key(function, key):
    if not isinstance(key, str) or not key:
        raise ValueError(f"{function}: key must be a non-empty string, got {key!r}")
    return key


def numeric_column(key, shape=(1,), default_value=None, dtype=dtypes.float32,
                   normalizer_fn=None):
    """``tf.feature_column.numeric_column``: float values (``shape`` of them per example).

    ``default_value`` replaces a missing value (TF fails on one; shoal then uses 0).
    ``normalizer_fn`` may be ``lambda x: (x - mean) / stddev`` (or an equivalent affine form) or
    ``tf.math.log1p``; other functions cannot run in C++ and are refused.
    """
    _check_key("numeric_column", key)
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(d) for d in shape)
    if not shape or any(d < 1 for d in shape):
        raise ValueError(f"numeric_column({key!r}): shape must be positive dimensions, got {shape}")
    if default_value is not None:
        if not isinstance(default_value, numbers.Real):
            raise ValueError(f"numeric_column({key!r}): default_value must be a number "
                             f"(one value for every slot), got {default_value!r}")
    if not dtypes.is_numeric(dtype):
        raise ValueError(f"numeric_column({key!r}): dtype must be a float or integer type, "
                         f"got {dtype!r}")
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise ValueError(f"numeric_column({key!r}): normalizer_fn must be callable")
    column = NumericColumn(key, shape, default_value, dtype, normalizer_fn)
    if normalizer_fn is not None:
        _normalizer_config(key, normalizer_fn)  # refuse it now, where the user wrote it
    return column


# ---- categorical ----

class BucketizedColumn(CategoricalColumn, DenseColumn):
    def __init__(self, source_column, boundaries):
        self.source_column = source_column
        self.boundaries = boundaries
        self.name = f"{source_column.name}_bucketized"

    def _config(self):
        return {"name": self.name, "source": self.source_column.key,
                "boundaries": list(self.boundaries)}

    def _sources(self):
        return {self.source_column.key: "float"}

    @property
    def num_buckets(self):
        return len(self.boundaries) + 1


def bucketized_column(source_column, boundaries):
    """``tf.feature_column.bucketized_column``: the bucket of a numeric column's raw value."""
    if not isinstance(source_column, NumericColumn):
        raise ValueError("bucketized_column: source_column must be a numeric_column, got "
                         f"{source_column!r}")
    if source_column.dimension != 1:
        raise ValueError(f"bucketized_column({source_column.key!r}): shoal bucketizes scalar "
                         f"numeric columns only (shape {source_column.shape})")
    try:
        boundaries = [float(b) for b in boundaries]
    except (TypeError, ValueError):
        raise ValueError(f"bucketized_column({source_column.key!r}): boundaries must be a list "
                         f"of numbers, got {boundaries!r}") from None
    if not boundaries or any(b >= c for b, c in zip(boundaries, boundaries[1:])):
        raise ValueError(f"bucketized_column({source_column.key!r}): boundaries must be a "
                         f"non-empty, strictly increasing list, got {boundaries}")
    return BucketizedColumn(source_column, boundaries)


class HashedColumn(CategoricalColumn):
    def __init__(self, key, hash_bucket_size, dtype):
        self.key = self.name = key
        self.hash_bucket_size = hash_bucket_size
        self.dtype = dtype

    def _config(self):
        return {"name": self.name, "source": self.key, "hash_bucket_size": self.hash_bucket_size}

    def _sources(self):
        return {self.key: "int64" if dtypes.is_integer(self.dtype) else "string"}

    @property
    def num_buckets(self):
        return self.hash_bucket_size


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=dtypes.string):
    """``tf.feature_column.categorical_column_with_hash_bucket``: ids from a hash of the value.

    shoal hashes with MurmurHash64 (TF: FarmHash), so ids differ from TF's, with the same
    distribution. ``hash_bucket_size`` 0 is shoal's own: the full 64-bit id, for its dynamic
    embedding tables.
    """
    _check_key("categorical_column_with_hash_bucket", key)
    if not isinstance(hash_bucket_size, numbers.Integral) or hash_bucket_size < 0:
        raise ValueError(f"categorical_column_with_hash_bucket({key!r}): hash_bucket_size must "
                         f"be an integer >= 1 (or 0: no modulo), got {hash_bucket_size!r}")
    if not (dtypes.is_integer(dtype) or dtypes.is_string(dtype)):
        raise ValueError(f"categorical_column_with_hash_bucket({key!r}): dtype must be string "
                         f"or an integer type, got {dtype!r}")
    return HashedColumn(key, int(hash_bucket_size), dtype)


class VocabularyColumn(CategoricalColumn):
    def __init__(self, key, vocabulary, vocabulary_file, num_oov_buckets, default_value, dtype,
                 size):
        self.key = self.name = key
        self.vocabulary = vocabulary
        self.vocabulary_file = vocabulary_file
        self.num_oov_buckets = num_oov_buckets
        self.default_value = default_value
        self.dtype = dtype
        self.size = size

    def _config(self):
        c = {"name": self.name, "source": self.key, "num_oov_buckets": self.num_oov_buckets,
             "default_value": self.default_value}
        if self.vocabulary_file is not None:
            c["vocabulary_file"] = self.vocabulary_file
        else:
            c["vocabulary"] = [str(v) for v in self.vocabulary]
        return c

    def _sources(self):
        return {self.key: "int64" if dtypes.is_integer(self.dtype) else "string"}

    @property
    def num_buckets(self):
        return self.size + self.num_oov_buckets


def _check_oov(function, key, num_oov_buckets, default_value):
    if not isinstance(num_oov_buckets, numbers.Integral) or num_oov_buckets < 0:
        raise ValueError(f"{function}({key!r}): num_oov_buckets must be >= 0, "
                         f"got {num_oov_buckets!r}")
    if default_value is None:
        default_value = -1
    if num_oov_buckets > 0 and default_value != -1:
        raise ValueError(f"{function}({key!r}): set num_oov_buckets or default_value, not both")
    return int(num_oov_buckets), int(default_value)


def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1,
                                            num_oov_buckets=0):
    """``tf.feature_column.categorical_column_with_vocabulary_list``: the value's index in
    ``vocabulary_list``; unknown values get ``default_value`` (-1: none) or an OOV bucket."""
    function = "categorical_column_with_vocabulary_list"
    _check_key(function, key)
    vocabulary = list(vocabulary_list)
    if not vocabulary:
        raise ValueError(f"{function}({key!r}): vocabulary_list is empty")
    if len(set(vocabulary)) != len(vocabulary):
        duplicates = sorted({str(v) for v in vocabulary if vocabulary.count(v) > 1})
        raise ValueError(f"{function}({key!r}): duplicate keys in vocabulary_list: "
                         f"{', '.join(duplicates)}")
    if dtype is None:
        dtype = dtypes.int64 if all(isinstance(v, numbers.Integral) for v in vocabulary) \
            else dtypes.string
    num_oov_buckets, default_value = _check_oov(function, key, num_oov_buckets, default_value)
    return VocabularyColumn(key, vocabulary, None, num_oov_buckets, default_value, dtype,
                            len(vocabulary))


def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None,
                                            num_oov_buckets=0, default_value=None,
                                            dtype=dtypes.string):
    """``tf.feature_column.categorical_column_with_vocabulary_file``: one token per line (any
    path shoal reads: local, ``hdfs://``); the file travels with every export."""
    function = "categorical_column_with_vocabulary_file"
    _check_key(function, key)
    if not isinstance(vocabulary_file, str) or not vocabulary_file:
        raise ValueError(f"{function}({key!r}): vocabulary_file must be a path")
    if "://" not in vocabulary_file:
        if not os.path.isfile(vocabulary_file):
            raise FileNotFoundError(f"{function}({key!r}): vocabulary_file {vocabulary_file!r} "
                                    "does not exist")
        vocabulary_file = os.path.abspath(vocabulary_file)
        with open(vocabulary_file, encoding="utf-8") as f:
            size = sum(1 for line in f if line.rstrip("\r\n"))
        if vocabulary_size is not None:
            if vocabulary_size > size:
                raise ValueError(f"{function}({key!r}): vocabulary_size {vocabulary_size} is "
                                 f"larger than the {size} tokens of {vocabulary_file}")
            if vocabulary_size < size:
                raise ValueError(f"{function}({key!r}): vocabulary_size {vocabulary_size} < the "
                                 f"file's {size} tokens: shoal reads whole files; cut the file")
    else:
        size = vocabulary_size or 0
    num_oov_buckets, default_value = _check_oov(function, key, num_oov_buckets, default_value)
    return VocabularyColumn(key, None, vocabulary_file, num_oov_buckets, default_value, dtype,
                            size)


class IdentityColumn(CategoricalColumn):
    def __init__(self, key, num_buckets, default_value):
        self.key = self.name = key
        self.num_buckets = num_buckets
        self.default_value = default_value

    def _config(self):
        return {"name": self.name, "source": self.key, "num_buckets": self.num_buckets,
                "default_value": self.default_value}

    def _sources(self):
        return {self.key: "int64"}


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """``tf.feature_column.categorical_column_with_identity``: the integer value is the id, in
    ``[0, num_buckets)``; out of range: ``default_value``, or an error naming the row."""
    _check_key("categorical_column_with_identity", key)
    if not isinstance(num_buckets, numbers.Integral) or num_buckets < 1:
        raise ValueError(f"categorical_column_with_identity({key!r}): num_buckets must be >= 1, "
                         f"got {num_buckets!r}")
    if default_value is not None and not 0 <= default_value < num_buckets:
        raise ValueError(f"categorical_column_with_identity({key!r}): default_value "
                         f"{default_value} is not in [0, {num_buckets})")
    return IdentityColumn(key, int(num_buckets), -1 if default_value is None else int(default_value))


class CrossedColumn(CategoricalColumn):
    def __init__(self, keys, hash_bucket_size, hash_key):
        self.keys = keys
        self.hash_bucket_size = hash_bucket_size
        self.hash_key = hash_key
        self.name = "_X_".join(k if isinstance(k, str) else k.name for k in keys)

    def _config(self):
        c = {"name": self.name, "keys": [k if isinstance(k, str) else k.name for k in self.keys],
             "hash_bucket_size": self.hash_bucket_size}
        if self.hash_key is not None:
            c["seed"] = self.hash_key & 0xFFFFFFFF
        return c

    @property
    def num_buckets(self):
        return self.hash_bucket_size


def crossed_column(keys, hash_bucket_size, hash_key=None):
    """``tf.feature_column.crossed_column``: hashed combinations of categorical values.

    ``keys`` are categorical columns or raw feature names (a name is hashed, as TF does). Crossing
    a crossed column is refused (list its keys instead).
    """
    keys = list(keys)
    if len(keys) < 2:
        raise ValueError(f"crossed_column: keys must have at least 2 entries, got {keys!r}")
    for k in keys:
        if isinstance(k, CrossedColumn):
            raise ValueError(f"crossed_column: crossing the crossed column {k.name!r} is not "
                             "supported: cross its keys instead")
        if not isinstance(k, (str, CategoricalColumn)) or isinstance(k, WeightedColumn):
            raise ValueError("crossed_column: keys must be feature names or categorical columns "
                             f"(bucketize numeric columns first), got {k!r}")
    if not isinstance(hash_bucket_size, numbers.Integral) or hash_bucket_size < 0:
        raise ValueError(f"crossed_column: hash_bucket_size must be >= 1 (or 0: shoal's full "
                         f"64-bit ids), got {hash_bucket_size!r}")
    return CrossedColumn(keys, int(hash_bucket_size), hash_key)


class WeightedColumn(CategoricalColumn):
    def __init__(self, categorical_column, weight_feature_key, dtype):
        self.categorical_column = categorical_column
        self.weight_feature_key = weight_feature_key
        self.dtype = dtype
        self.name = f"{categorical_column.name}_weighted_by_{weight_feature_key}"

    def _config(self):
        return {"name": self.name, "categorical": self.categorical_column.name,
                "weight": self.weight_feature_key}

    def _sources(self):
        return {**self.categorical_column._sources(), self.weight_feature_key: "float"}

    @property
    def num_buckets(self):
        return getattr(self.categorical_column, "num_buckets", 0)


def weighted_categorical_column(categorical_column, weight_feature_key, dtype=dtypes.float32):
    """``tf.feature_column.weighted_categorical_column``: each id of ``categorical_column`` weighed
    by the value at the same position of the feature ``weight_feature_key`` (as many values per
    example as the categorical feature). Embeddings pool the rows weighted, an indicator column
    sums the weights, a linear model multiplies them in."""
    if not isinstance(categorical_column, CategoricalColumn):
        raise ValueError("weighted_categorical_column: categorical_column must be a categorical "
                         f"column, got {categorical_column!r}")
    if isinstance(categorical_column, (CrossedColumn, WeightedColumn)):
        raise ValueError(f"weighted_categorical_column({categorical_column.name!r}): a "
                         f"{type(categorical_column).__name__} cannot be weighted (its ids do not "
                         "follow the values of one feature)")
    _check_key("weighted_categorical_column", weight_feature_key)
    if not dtypes.is_numeric(dtype):
        raise ValueError(f"weighted_categorical_column({categorical_column.name!r}): dtype "
                         f"{dtype!r} is not a float or integer type")
    return WeightedColumn(categorical_column, weight_feature_key, dtype)


# ---- dense wrappers ----

_COMBINERS = ("mean", "sum", "sqrtn")


class EmbeddingColumn(DenseColumn):
    def __init__(self, categorical_column, dimension, combiner, name, table):
        self.categorical_column = categorical_column
        self.dimension = dimension
        self.combiner = combiner
        self.name = name
        self.table = table

    def _config(self):
        c = {"categorical": self.categorical_column.name, "dimension": self.dimension,
             "pooling": self.combiner, "name": self.name}
        if self.table is not None:
            c["table"] = self.table
        return c


def _check_embedding(function, categorical_column, dimension, combiner, initializer,
                     ckpt_to_load_from, max_norm, trainable):
    if not isinstance(categorical_column, CategoricalColumn):
        raise ValueError(f"{function}: categorical_column must be a categorical column, got "
                         f"{categorical_column!r}")
    where = f"{function}({categorical_column.name!r})"
    if not isinstance(dimension, numbers.Integral) or dimension < 1:
        raise ValueError(f"{where}: dimension must be >= 1, got {dimension!r}")
    if combiner not in _COMBINERS:
        raise ValueError(f"{where}: combiner must be one of {', '.join(_COMBINERS)}, got "
                         f"{combiner!r}")
    for arg, value, default in (("initializer", initializer, None),
                                ("ckpt_to_load_from", ckpt_to_load_from, None),
                                ("max_norm", max_norm, None), ("trainable", trainable, True)):
        if value is not default and value != default:
            raise ValueError(f"{where}: {arg}={value!r} is not supported (shoal initialises "
                             "embeddings itself; warm-start with RunConfig/warm_start_from)")


def embedding_column(categorical_column, dimension, combiner="mean", initializer=None,
                     ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                     trainable=True):
    """``tf.feature_column.embedding_column``: a learned ``dimension``-vector per id, pooled by
    ``combiner``. With a hashed column of hash_bucket_size 0 the table is shoal's dynamic one."""
    _check_embedding("embedding_column", categorical_column, dimension, combiner, initializer,
                     ckpt_to_load_from, max_norm, trainable)
    return EmbeddingColumn(categorical_column, int(dimension), combiner,
                           f"{categorical_column.name}_embedding", None)


def shared_embedding_columns(categorical_columns, dimension, combiner="mean", initializer=None,
                             shared_embedding_collection_name=None, ckpt_to_load_from=None,
                             tensor_name_in_ckpt=None, max_norm=None, trainable=True):
    """``tf.feature_column.shared_embedding_columns``: one table looked up by several columns
    (which must share an id space)."""
    columns = list(categorical_columns)
    if not columns:
        raise ValueError("shared_embedding_columns: categorical_columns is empty")
    for c in columns:
        _check_embedding("shared_embedding_columns", c, dimension, combiner, initializer,
                         ckpt_to_load_from, max_norm, trainable)
    table = shared_embedding_collection_name or \
        "_".join(c.name for c in sorted(columns, key=lambda c: c.name)) + "_shared_embedding"
    return [EmbeddingColumn(c, int(dimension), combiner, f"{c.name}_shared_embedding", table)
            for c in columns]


shared_embeddings = shared_embedding_columns


class IndicatorColumn(DenseColumn):
    def __init__(self, categorical_column):
        self.categorical_column = categorical_column
        self.name = f"{categorical_column.name}_indicator"

    def _config(self):
        return {"categorical": self.categorical_column.name, "name": self.name}


def indicator_column(categorical_column):
    """``tf.feature_column.indicator_column``: multi-hot counts of a bounded categorical column."""
    if not isinstance(categorical_column, CategoricalColumn):
        raise ValueError("indicator_column: categorical_column must be a categorical column, got "
                         f"{categorical_column!r}")
    buckets = getattr(categorical_column, "num_buckets", 0)
    if not buckets:
        raise ValueError(f"indicator_column({categorical_column.name!r}): the column is unbounded "
                         "(a hash or cross without hash_bucket_size): give it buckets")
    if buckets > 1 << 20:
        raise ValueError(f"indicator_column({categorical_column.name!r}): {buckets} buckets is "
                         "more than shoal's 2^20 dense slots: use an embedding_column")
    return IndicatorColumn(categorical_column)


# ---- the features section of a job config ----

def _categoricals(column, out):
    """Adds `column` and the categorical columns it depends on to `out` (name -> column)."""
    if isinstance(column, (EmbeddingColumn, IndicatorColumn)):
        _categoricals(column.categorical_column, out)
        return
    if isinstance(column, WeightedColumn):
        _categoricals(column.categorical_column, out)
    if isinstance(column, CrossedColumn):
        for k in column.keys:
            if isinstance(k, str):
                if k not in out:
                    out[k] = HashedColumn(k, 0, dtypes.string)
            else:
                _categoricals(k, out)
    if isinstance(column, CategoricalColumn):
        previous = out.get(column.name)
        if previous is not None and previous is not column and \
                previous._config() != column._config():
            raise ValueError(f"two different feature columns are named {column.name!r}")
        out[column.name] = column


def features_config(linear_columns, dnn_columns, label, model_type):
    """The ``features`` section for a model: linear columns become wide (categorical) or numeric
    inputs of the linear part, dnn columns the dense inputs of the deep part."""
    categoricals, numeric, embedding, indicator, wide = {}, {}, [], [], []
    for c in linear_columns:
        if isinstance(c, CategoricalColumn):
            _categoricals(c, categoricals)
            wide.append({"categorical": c.name})
        elif isinstance(c, NumericColumn):
            if model_type != "linear":
                raise ValueError(
                    f"linear_feature_columns: the numeric column {c.name!r} would feed the deep "
                    "part in shoal's wide & deep (its linear part takes categorical columns): "
                    "bucketize it, or pass it in dnn_feature_columns")
            numeric[c.name] = c
        elif isinstance(c, IndicatorColumn):
            _categoricals(c, categoricals)
            indicator.append(c)
        else:
            raise ValueError(f"linear feature columns must be categorical or numeric columns, "
                             f"got {c!r}")
    for c in dnn_columns:
        if isinstance(c, NumericColumn):
            numeric[c.name] = c
        elif isinstance(c, EmbeddingColumn):
            _categoricals(c, categoricals)
            embedding.append(c)
        elif isinstance(c, IndicatorColumn):
            _categoricals(c, categoricals)
            indicator.append(c)
        elif isinstance(c, BucketizedColumn):  # dense as a one-hot, as in TF
            _categoricals(c, categoricals)
            indicator.append(IndicatorColumn(c))
        else:
            raise ValueError(
                f"Items of feature_columns must be a DenseColumn. You can wrap a categorical "
                f"column with an embedding_column or indicator_column. Given: {c!r}")
    features = {kind: [] for kind in ("numeric", "hashed", "vocabulary", "identity",
                                      "bucketized", "crossed", "weighted", "embedding", "wide",
                                      "indicator")}
    features["numeric"] = [c._config() for c in numeric.values()]
    kinds = {HashedColumn: "hashed", VocabularyColumn: "vocabulary", IdentityColumn: "identity",
             BucketizedColumn: "bucketized", CrossedColumn: "crossed",
             WeightedColumn: "weighted"}
    for c in categoricals.values():
        features[kinds[type(c)]].append(c._config())
    features["embedding"] = [c._config() for c in _unique(embedding)]
    features["indicator"] = [c._config() for c in _unique(indicator)]
    features["wide"] = _unique_dicts(wide)
    features = {k: v for k, v in features.items() if v}
    if label is not None:
        features["label"] = label
    return features


def _unique(columns):
    seen, out = set(), []
    for c in columns:
        if c.name not in seen:
            seen.add(c.name)
            out.append(c)
    return out


def _unique_dicts(items):
    seen, out = set(), []
    for d in items:
        key = tuple(sorted(d.items()))
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def source_types(columns):
    """The raw input keys the columns read -> the dtype they expect (float, int64, string)."""
    categoricals, out = {}, {}
    for c in columns:
        if isinstance(c, NumericColumn):
            out[c.key] = "float"
        else:
            _categoricals(c, categoricals)
    for c in categoricals.values():
        out.update(c._sources())
    return out


# ---- parsing specs (serving input functions) ----

class FixedLenFeature:
    """``tf.io.FixedLenFeature``: ``shape`` values of ``dtype`` per example."""

    def __init__(self, shape, dtype, default_value=None):
        self.shape, self.dtype, self.default_value = shape, dtype, default_value

    def __repr__(self):
        return f"FixedLenFeature(shape={self.shape!r}, dtype={self.dtype!r})"


class VarLenFeature:
    """``tf.io.VarLenFeature``: any number of ``dtype`` values per example."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __repr__(self):
        return f"VarLenFeature(dtype={self.dtype!r})"


def _flatten(column):
    """`column` and the columns it wraps."""
    yield column
    inner = getattr(column, "categorical_column", None) or getattr(column, "source_column", None)
    if inner is not None:
        yield from _flatten(inner)


def make_parse_example_spec(feature_columns):
    """``tf.feature_column.make_parse_example_spec``: key -> FixedLenFeature / VarLenFeature."""
    spec = {}
    columns = list(feature_columns)
    weights = set()
    for c in columns:
        for dependency in _flatten(c):
            if isinstance(dependency, WeightedColumn):
                weights.add(dependency.weight_feature_key)
    for key, kind in source_types(columns).items():
        if key in weights:
            spec[key] = VarLenFeature(dtypes.float32)
        elif kind == "float":
            spec[key] = FixedLenFeature((1,), dtypes.float32)
        else:
            spec[key] = VarLenFeature(dtypes.int64 if kind == "int64" else dtypes.string)
    return spec


def input_layer(features, feature_columns, weight_collections=None, trainable=True,
                cols_to_vars=None, cols_to_output_tensors=None):
    """``tf.feature_column.input_layer`` inside a traced model_fn: the columns' dense values side
    by side, [batch, total width], in TF's order (sorted by column name). The engine computes
    the columns (numeric, indicator, embedding) in C++ as the canned estimators' do."""
    from shoal.graph import core, ops
    api = "tf.feature_column.input_layer"
    trace = core.current(api)
    columns = [feature_columns] if isinstance(feature_columns, FeatureColumn) else \
        list(feature_columns)
    if not columns:
        raise ValueError(f"{api} ({core.user_line()}): feature_columns must not be empty")
    pieces = []
    for c in sorted(columns, key=lambda c: c.name):
        if isinstance(c, BucketizedColumn):
            c = IndicatorColumn(c)
        if isinstance(c, NumericColumn):
            pieces.append(trace.add("feature", [], [None, c.dimension], "float", api=api,
                                    name=c.name, shape=[-1, c.dimension]))
        elif isinstance(c, IndicatorColumn):
            width = c.categorical_column.num_buckets
            pieces.append(trace.add("feature", [], [None, width], "float", api=api, name=c.name,
                                    shape=[-1, width]))
        elif isinstance(c, EmbeddingColumn):
            pieces.append(trace.add("embedding", [], [None, c.dimension], "float", api=api,
                                    name=c.name))
        else:
            raise ValueError(
                f"{api} ({core.user_line()}): Items of feature_columns must be a DenseColumn. "
                f"You can wrap a categorical column with an embedding_column or "
                f"indicator_column. Given: {c!r}")
        trace.columns.append(c)
    return pieces[0] if len(pieces) == 1 else ops.concat(pieces, axis=1)
