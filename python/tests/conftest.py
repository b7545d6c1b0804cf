"""The package under test is python/shoal (this checkout's), whatever is installed -- except for
the Estimator API's tests, which need the installed package's C++ extension (shoal._core, built by
scripts/python-package.sh): they set SHOAL_PACKAGE_INSTALLED=1."""
import os
import sys

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.environ.get("SHOAL_PACKAGE_INSTALLED") and sys.path[:1] != [PYTHON_DIR]:
    sys.path.insert(0, PYTHON_DIR)
