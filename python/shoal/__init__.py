"""shoal's Python package.

shoal itself is the C++ `shoal` binary (README.md at the repository's top); Python only launches
it where a C++ launcher cannot: `shoal.spark` runs a job's processes inside Spark executors
(docs/spark.md).
"""

__version__ = "0.1.0"
