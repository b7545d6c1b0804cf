"""What a traced model_fn's Estimator keeps beside the model: the feature and label specs an
input gives the tracer, and MODEL_DIR/graph.json (the graph a YAML job names) with
MODEL_DIR/graph_inputs.json (what it was traced on, and its optimizer) for an export or a
prediction from another process (docs/formats.md, "Traced graph")."""

import json
import os

import numpy as np

from shoal.estimator.inputs import TableInput

_GRAPH_FILE = "graph.json"  # the graph itself: `model: {type: graph, graph: MODEL_DIR/graph.json}`
_GRAPH_INPUTS_FILE = "graph_inputs.json"  # what it was traced on, and its optimizer


def graph_specs(result):
    """(feature specs, label spec) of a normalised input: name -> (kind, shape), kind float, int
    or string and shape with None for the batch, as a traced model_fn sees them; hashed string
    ids (string_to_hash_bucket_fast in the map) are ("hashed", shape, num_buckets)."""
    from shoal import data

    def kind_of(array):
        k = np.asarray(array).dtype.kind
        return "string" if k in "OUS" else "int" if k in "iub" else "float"

    if isinstance(result, TableInput):
        features = {}
        for name, values in result.features.items():
            array = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)
            features[name] = (kind_of(array), [None] + list(array.shape[1:]))
        label = None
        if result.labels is not None:
            labels = result.labels
            array = np.asarray(labels.to_numpy() if hasattr(labels, "to_numpy") else labels)
            label = (kind_of(array), [None] + list(array.shape[1:]))
        return features, label
    if isinstance(result, data.Dataset):
        kinds = {"int64": "int", "float": "float", "string": "string"}
        shapes = getattr(result, "shapes", {}) or {}
        hashed = getattr(result, "hashed", {}) or {}
        features, label = {}, None
        for name, kind, _ in result.schema or []:
            shape = [None] + list(shapes.get(name, ()))
            if name == result.label:
                label = (kinds.get(kind, "float"), [None])
            elif name in hashed:
                buckets, delimiter = hashed[name]
                features[name] = ("hashed", [None, None] if delimiter else [None], buckets)
            elif not name.startswith("_unused_"):
                features[name] = (kinds.get(kind, "float"), shape)
        return features, label
    return {}, None


def save_graph(model_dir, traced, features, label):
    """MODEL_DIR/graph.json, the traced graph (docs/formats.md, "Traced graph"), which a YAML job
    names to run the model with no Python (`shoal train`, `shoal launch`), and
    MODEL_DIR/graph_inputs.json, the features and labels it was traced on and its optimizer, for
    a later export or prediction in another process."""
    if "://" in model_dir:
        return
    os.makedirs(model_dir, exist_ok=True)
    inputs = {"features": {k: [v[0], list(v[1])] + list(v[2:]) for k, v in features.items()},
              "label": [label[0], list(label[1])] if label else None,
              "optimizer": traced.optimizer.config() if traced.optimizer else None}
    for name, record in ((_GRAPH_FILE, traced.graph), (_GRAPH_INPUTS_FILE, inputs)):
        path = os.path.join(model_dir, name)
        staging = f"{path}.tmp-{os.getpid()}"  # the members of a cluster may write at once
        with open(staging, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(staging, path)


def load_saved_inputs(model_dir):
    """MODEL_DIR/graph_inputs.json (features, label, optimizer), or None."""
    path = os.path.join(model_dir, _GRAPH_INPUTS_FILE)
    if "://" in model_dir or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def saved_label_spec(model_dir):
    saved = load_saved_inputs(model_dir)
    if saved is None or not saved.get("label"):
        return None
    kind, shape = saved["label"]
    return kind, list(shape)
