"""TF1's names on shoal: ``import shoal.compat.v1 as tf``.

    tf.estimator          canned estimators, RunConfig, specs, train_and_evaluate, exporters,
                          hooks, inputs.numpy_input_fn / pandas_input_fn, export
    tf.feature_column     the feature columns
    tf.train              optimizers and hooks
    tf.data               TFRecordDataset, TextLineDataset, experimental.make_csv_dataset
    tf.io                 parse_single_example, parse_example, decode_csv, FixedLenFeature, ...
    tf.errors             the engine's exceptions (InvalidArgumentError is a ValueError)
    tf.float32, tf.int64, tf.string, ...; tf.placeholder; tf.nn.relu/tanh/sigmoid;
    tf.math.log1p; tf.logging / tf.compat.v1.logging; tf.app.run

docs/python.md has the table of what is there, what differs and what is missing.
"""

import logging as _logging
import sys as _sys
import types as _types

from shoal import data, errors, estimator, feature_column, nn, train  # noqa: F401
from shoal.data import decode_csv, parse_example, parse_single_example  # noqa: F401
from shoal.dtypes import (bool, double, float16, float32, float64, half, int8,  # noqa: F401,A004
                          int16, int32, int64, string, uint8, DType)
from shoal.estimator.export import placeholder  # noqa: F401
from shoal.feature_column import FixedLenFeature, VarLenFeature, log1p as _log1p  # noqa: F401

io = _types.ModuleType("shoal.compat.v1.io", "tf.io: parsing inside tf.data maps")
io.parse_single_example = parse_single_example
io.parse_example = parse_example
io.decode_csv = decode_csv
io.FixedLenFeature = FixedLenFeature
io.VarLenFeature = VarLenFeature

math = _types.ModuleType("shoal.compat.v1.math", "tf.math: what a normalizer_fn may call")
math.log1p = _log1p
log1p = _log1p

# tf.logging (TF1) and tf.compat.v1.logging: Python's logging, logger "shoal".
logging = _types.ModuleType("shoal.compat.v1.logging", "tf.logging on Python's logging")
logging.DEBUG, logging.INFO, logging.WARN, logging.ERROR, logging.FATAL = (
    _logging.DEBUG, _logging.INFO, _logging.WARNING, _logging.ERROR, _logging.CRITICAL)


def _set_verbosity(level):
    _logging.basicConfig(format="%(levelname)s:%(name)s:%(message)s")
    _logging.getLogger("shoal").setLevel(level)


logging.set_verbosity = _set_verbosity
logging.info = _logging.getLogger("shoal").info
logging.warning = logging.warn = _logging.getLogger("shoal").warning
logging.error = _logging.getLogger("shoal").error
logging.debug = _logging.getLogger("shoal").debug

app = _types.ModuleType("shoal.compat.v1.app", "tf.app")


def _run(main=None, argv=None):
    main = main or _sys.modules["__main__"].main
    _sys.exit(main(argv if argv is not None else _sys.argv))


app.run = _run

compat = _types.ModuleType("shoal.compat.v1.compat", "tf.compat")
compat.v1 = _sys.modules[__name__]
