"""Data as users have it (issue 22), through `shoal train` with a YAML config alone:
  - rows of `label<TAB>space-separated tokens` (the users' story), read with a `list_separator`
    column and hashed per token;
  - token lists with a parallel list of weights (a `weighted` column);
  - vocabulary misses counted in summary.json and warned about once.
UCI Adult's raw files (", " separators, string labels) are examples_test.py's. Each test writes
its data into its temporary directory. $SHOAL_BIN is the binary (ctest sets it).
"""
import json
import os
import random
import subprocess

import pytest

SHOAL = os.environ.get("SHOAL_BIN")
WORDS = [f"w{i}" for i in range(300)]
GOOD, BAD = set(WORDS[:20]), set(WORDS[20:40])


@pytest.fixture(autouse=True)
def need_binary():
    if not SHOAL or not os.access(SHOAL, os.X_OK):
        pytest.fail("set SHOAL_BIN to the built shoal binary (ctest does)")


def shoal(*args, check=True):
    out = subprocess.run([SHOAL, *map(str, args)], capture_output=True, text=True, timeout=600)
    if check:
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    return out


def auc(scores, labels):
    """The ROC AUC of `scores` for 0/1 `labels` (ties count half)."""
    pairs = sorted(zip(scores, labels))
    rank_sum, i = 0.0, 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        rank_sum += sum(y for _, y in pairs[i:j]) * (i + j + 1) / 2  # mean rank of the tie group
        i = j
    positives = sum(labels)
    negatives = len(labels) - positives
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def token_rows(path, count, seed):
    """label<TAB>tokens: positive when the row has more good words than bad ones (a third of the
    ties too). Returns [(the good-minus-bad count, label)], the best possible score."""
    rng = random.Random(seed)
    truth = []
    with open(path, "w") as f:
        for _ in range(count):
            tokens = rng.choices(WORDS, k=rng.randint(3, 12))
            score = sum(t in GOOD for t in tokens) - sum(t in BAD for t in tokens)
            label = int(score > 0 or (score == 0 and rng.random() < 0.3))
            truth.append((score, label))
            # Runs of separators (empty tokens) are skipped.
            f.write(f"{label}\t{'  '.join(tokens) if rng.random() < 0.1 else ' '.join(tokens)}\n")
    return truth


TOKENS_CONFIG = """\
model_dir: {model_dir}
features:
  hashed:
    - {{name: tokens, hash_bucket_size: 100000}}
  wide:
    - {{categorical: tokens}}
  label: label
model: {{type: linear}}
wide_optimizer: {{name: adam, learning_rate: 0.05}}
input:
  train:
    files: [{train}]
    format: tsv
    header: false
    schema: &columns
      - {{name: label}}
      - {{name: tokens, type: string, list_separator: " "}}
    num_epochs: 4
    batch_size: 64
    shuffle_buffer: 1000
  eval:
    files: [{eval}]
    format: tsv
    header: false
    schema: *columns
    batch_size: 500
"""


def test_token_lists_train_through_a_list_separator_column(tmp_path):
    token_rows(tmp_path / "train.tsv", 6000, 1)
    truth = token_rows(tmp_path / "eval.tsv", 2000, 2)
    best = auc([score for score, _ in truth], [label for _, label in truth])
    config = tmp_path / "job.yaml"
    config.write_text(TOKENS_CONFIG.format(model_dir=tmp_path / "model",
                                           train=tmp_path / "train.tsv",
                                           eval=tmp_path / "eval.tsv"))
    shoal("train", config)
    summary = json.loads((tmp_path / "model" / "summary.json").read_text())
    assert summary["examples"] == 24000
    assert summary["metrics"]["auc"] > best - 0.02, (best, summary["metrics"])

    # The same rows with the tokens as one value each: the model cannot learn the words.
    one_value = tmp_path / "one.yaml"
    one_value.write_text(config.read_text().replace(', list_separator: " "', "")
                         .replace(str(tmp_path / "model"), str(tmp_path / "one")))
    shoal("train", one_value)
    one = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert one["metrics"]["auc"] < 0.7, one["metrics"]

    # Prediction reads the lists the same way.
    out = shoal("predict", config, "--input", tmp_path / "eval.tsv", "--output",
                tmp_path / "predictions.jsonl")
    scores = [json.loads(line)["logistic"][0]
              for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    labels = [int(line.split("\t", 1)[0])
              for line in (tmp_path / "eval.tsv").read_text().splitlines()]
    assert len(scores) == len(labels) == 2000, out.stderr[-1000:]
    positive = [s for s, y in zip(scores, labels) if y]
    negative = [s for s, y in zip(scores, labels) if not y]
    assert sum(positive) / len(positive) > sum(negative) / len(negative) + 0.4


WEIGHTED_CONFIG = """\
model_dir: {model_dir}
features:
  identity:
    - {{name: ids, num_buckets: 4}}
  weighted:
    - {{categorical: ids, weight: w}}
  wide:
    - {{categorical: ids_weighted_by_w}}
  label: y
model: {{type: linear, head: regression}}
wide_optimizer: {{name: adagrad, learning_rate: 0.5}}
input:
  train:
    files: [{data}]
    format: csv
    header: true
    schema: &columns
      - {{name: y}}
      - {{name: ids, type: int64, list_separator: " "}}
      - {{name: w, list_separator: " "}}
    num_epochs: 10
    batch_size: 64
  eval:
    files: [{data}]
    format: csv
    header: true
    schema: *columns
    batch_size: 500
"""


def test_a_weighted_column_pairs_a_token_list_with_a_weight_list(tmp_path):
    """y = sum over a row's ids of coef[id] * weight, ids and weights in two list fields."""
    rng = random.Random(3)
    coef = [1.0, -2.0, 3.0, 0.5]
    with open(tmp_path / "data.csv", "w") as f:
        f.write("y,ids,w\n")
        for _ in range(3000):
            k = rng.randint(1, 4)
            ids = [rng.randrange(4) for _ in range(k)]
            w = [round(rng.uniform(0.1, 2.0), 3) for _ in range(k)]
            y = sum(coef[i] * x for i, x in zip(ids, w))
            f.write(f"{y},{' '.join(map(str, ids))},{' '.join(map(str, w))}\n")
    config = tmp_path / "job.yaml"
    config.write_text(WEIGHTED_CONFIG.format(model_dir=tmp_path / "model",
                                             data=tmp_path / "data.csv"))
    shoal("train", config)
    metrics = json.loads((tmp_path / "model" / "summary.json").read_text())["metrics"]
    assert metrics["loss"] < 0.01, metrics

    # A row with 2 ids and 1 weight is an error naming the row's place and both counts.
    with open(tmp_path / "bad.csv", "w") as f:
        f.write("y,ids,w\n1,0 1,0.5\n")
    out = shoal("evaluate", config, "--set", f"input.eval.files=[{tmp_path / 'bad.csv'}]",
                check=False)
    assert out.returncode != 0
    assert "weighted column 'ids_weighted_by_w'" in out.stderr, out.stderr[-2000:]
    assert "2 values in 'ids' but 1 weights in 'w'" in out.stderr, out.stderr[-2000:]


def test_vocabulary_misses_are_counted_and_warned_about(tmp_path):
    """A CSV written with ", " between fields, read without skip_initial_space: every value of
    the vocabulary column starts with a space and misses. shoal says so, once, with the hint."""
    rng = random.Random(4)
    with open(tmp_path / "data.csv", "w") as f:
        f.write("label, colour, x\n")
        for _ in range(1000):
            colour = rng.choice(["red", "green", "blue"])
            f.write(f"{int(colour == 'red')}, {colour}, {rng.random():.3f}\n")
    config = tmp_path / "job.yaml"
    config.write_text(f"""\
model_dir: {tmp_path / "model"}
features:
  numeric: [{{name: x}}]
  vocabulary: [{{name: colour, vocabulary: [red, green, blue]}}]
  indicator: [{{categorical: colour}}]
  label: label
model: {{type: dnn, hidden_units: [4]}}
optimizer: {{name: adam, learning_rate: 0.05}}
input:
  train: {{files: [{tmp_path / "data.csv"}], format: csv, batch_size: 50, num_epochs: 10,
           schema: &columns
           [{{name: x}}, {{name: label, type: int64}}]}}
  eval: {{files: [{tmp_path / "data.csv"}], format: csv, batch_size: 500, schema: *columns}}
""")
    out = shoal("train", config)
    warnings = [line for line in out.stderr.splitlines() if "feature column 'colour'" in line]
    assert len(warnings) == 2, out.stderr[-3000:]  # once for the training input, once for eval
    assert "values so far are not in the vocabulary, e.g. ' " in warnings[0]
    assert "(a leading space: set skip_initial_space: true" in warnings[0]
    summary = json.loads((tmp_path / "model" / "summary.json").read_text())
    train = summary["vocabulary_misses"]["train"]["colour"]
    assert (train["values"], train["misses"], train["rate"]) == (10000, 10000, 1.0)
    assert all(e.startswith(" ") for e in train["examples"]), train
    assert summary["vocabulary_misses"]["eval"]["colour"]["rate"] == 1.0
    blind = summary["metrics"]["accuracy"]  # the label is the colour, which the model never saw
    assert blind < 0.8, summary["metrics"]

    # With skip_initial_space the values match and nothing is said.
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text(config.read_text().replace("format: csv,", "format: csv, "
                                                "skip_initial_space: true,")
                     .replace(str(tmp_path / "model"), str(tmp_path / "fixed")))
    out = shoal("train", fixed)
    assert "feature column 'colour'" not in out.stderr
    summary = json.loads((tmp_path / "fixed" / "summary.json").read_text())
    assert summary["vocabulary_misses"]["train"]["colour"]["misses"] == 0
    assert summary["metrics"]["accuracy"] > 0.95, summary["metrics"]


def test_string_labels_skip_bad_ones_and_predictions_name_the_classes(tmp_path):
    """A ", " separated file with string labels, two of them misspelt: under bad_records: skip
    they are counted and skipped; predictions carry "classes" beside "class_ids"."""
    rng = random.Random(5)
    lines = []
    for i in range(600):
        x = rng.uniform(-1, 1)
        label = "yes" if x > 0 else "no"
        if i in (10, 20):
            label += "."  # as in UCI Adult's test file
        lines.append(f"{x:.3f}, {label}\n")
    (tmp_path / "data.csv").write_text("".join(lines))
    config = tmp_path / "job.yaml"
    config.write_text(f"""\
model_dir: {tmp_path / "model"}
features:
  numeric: [{{name: x}}]
  label: answer
  label_vocabulary: ["no", "yes"]
model: {{type: linear}}
wide_optimizer: {{name: ftrl, learning_rate: 0.5}}
input:
  train:
    files: [{tmp_path / "data.csv"}]
    format: csv
    header: false
    skip_initial_space: true
    schema: [{{name: x}}, {{name: answer, type: string}}]
    num_epochs: 5
    batch_size: 20
    bad_records: skip
""")
    out = shoal("train", config)
    assert "label column 'answer': 'yes.' is not in label_vocabulary" in out.stderr \
        or "label column 'answer': 'no.' is not in label_vocabulary" in out.stderr, out.stderr
    summary = json.loads((tmp_path / "model" / "summary.json").read_text())
    assert summary["examples"] == 5 * 598
    out = shoal("predict", config, "--input", tmp_path / "data.csv", "--output",
                tmp_path / "p.jsonl")
    predictions = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(predictions) == 598
    for p in predictions:
        assert p["classes"] == [["no", "yes"][int(p["class_ids"][0])]], p
    truth = [line.split(", ")[1].strip() for i, line in enumerate(lines) if i not in (10, 20)]
    right = sum(p["classes"][0] == t for p, t in zip(predictions, truth))
    assert right >= 0.95 * len(truth), right
