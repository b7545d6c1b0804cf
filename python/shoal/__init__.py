"""shoal's Python package.

- ``shoal.compat.v1`` (``import shoal.compat.v1 as tf``), ``shoal.estimator``,
  ``shoal.feature_column``, ``shoal.train``, ``shoal.data``: TF1's Estimator API on shoal's C++
  engine (the extension ``shoal._core``, built by ``pip install ./python``); docs/python.md.
- ``shoal.spark``: runs a job's processes inside Spark executors (docs/spark.md).
"""

__version__ = "0.2.0"
