"""Tracing Python model_fns into the graphs shoal's engine runs (docs/python.md, "Porting a TF1
program"; the format is docs/formats.md, "Traced graph")."""

from shoal.graph.core import Tensor, TensorShape, UnsupportedError  # noqa: F401
from shoal.graph.model import EstimatorSpec, TracedModel, trace_model_fn  # noqa: F401
