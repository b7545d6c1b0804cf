"""The package under test is python/shoal (this checkout's), whatever is installed."""
import os
import sys

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if sys.path[:1] != [PYTHON_DIR]:
    sys.path.insert(0, PYTHON_DIR)
