"""``shoal.compat.v1``: TF1's module layout, so that ``import shoal.compat.v1 as tf`` ports a
program written against ``tensorflow.compat.v1`` (docs/python.md)."""
