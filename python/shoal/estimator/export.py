"""``tf.estimator.export``: what a serving input function returns.

shoal's exports take named raw features (docs/serving.md): the receiver functions here only tell
the export which features and dtypes the served model takes. A ``ServingInputReceiver`` built
from placeholders (``tf.placeholder(dtype, shape, name)``: a Placeholder here, or a placeholder
of the default graph, shoal.graph.default_graph) gives them by its features' names and dtypes.
"""

from shoal import dtypes
from shoal import feature_column as fc

__all__ = ["ServingInputReceiver", "build_parsing_serving_input_receiver_fn",
           "build_raw_serving_input_receiver_fn", "PredictOutput", "ClassificationOutput",
           "RegressionOutput"]


class Placeholder:
    """``tf.placeholder``: a named input of a serving function."""

    def __init__(self, dtype, shape=None, name=None):
        self.dtype, self.shape, self.name = dtype, shape, name

    def __repr__(self):
        return f"<placeholder {self.name!r} {self.dtype!r}>"


def placeholder(dtype, shape=None, name=None):
    return Placeholder(dtype, shape, name)


class ServingInputReceiver:
    """``tf.estimator.export.ServingInputReceiver(features, receiver_tensors)``."""

    def __init__(self, features, receiver_tensors, receiver_tensors_alternatives=None):
        if not isinstance(features, dict):
            features = {"feature": features}
        self.features = features
        self.receiver_tensors = receiver_tensors
        self.feature_spec = {}
        for name, value in features.items():
            if isinstance(value, Placeholder):
                self.feature_spec[name] = fc.FixedLenFeature(value.shape or (1,), value.dtype)
            elif getattr(value, "placeholder", None) is not None:  # a default graph's placeholder
                dtype, shape, _ = value.placeholder
                self.feature_spec[name] = fc.FixedLenFeature(shape or (1,), dtype)


class _SpecReceiver:
    def __init__(self, feature_spec):
        self.feature_spec = dict(feature_spec)
        self.features = {k: Placeholder(v.dtype, None, k) for k, v in self.feature_spec.items()}
        self.receiver_tensors = self.features


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A serving function taking the features of ``feature_spec`` (e.g. from
    ``tf.feature_column.make_parse_example_spec(columns)``)."""
    if not isinstance(feature_spec, dict):
        raise ValueError("feature_spec must be a dict of name -> FixedLenFeature/VarLenFeature")
    return lambda: _SpecReceiver(feature_spec)


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A serving function taking ``features`` (name -> placeholder or array) as they are."""
    spec = {}
    for name, value in features.items():
        dtype = getattr(value, "dtype", dtypes.float32)
        spec[name] = fc.FixedLenFeature((1,), dtype)
    return lambda: _SpecReceiver(spec)


class PredictOutput:
    def __init__(self, outputs):
        self.outputs = outputs


class ClassificationOutput:
    def __init__(self, scores=None, classes=None):
        self.scores, self.classes = scores, classes


class RegressionOutput:
    def __init__(self, value):
        self.value = value
