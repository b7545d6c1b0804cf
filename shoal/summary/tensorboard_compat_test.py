"""TensorBoard reads the event files shoal writes, and shoal reads TensorBoard's.

TensorBoard is the PyPI package from scripts/requirements-test.txt. Three of its readers load our
files: the classic EventAccumulator, the plugin multiplexer + data provider behind today's
dashboards, and the real server (its Rust data server, `--load_fast true`) over HTTP. None of them
may log a warning about our files. The C++ side is the test-only helper
build/layers/summary/event_tool (shoal/summary/event_tool.cc), found through $SHOAL_EVENT_TOOL; ctest
sets it (shoal/summary/CMakeLists.txt):

    SHOAL_EVENT_TOOL=build/layers/summary/event_tool \\
        $(scripts/python-env.sh) -m pytest -q shoal/summary/tensorboard_compat_test.py
"""
import json
import logging
import math
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from tensorboard import context  # noqa: E402
from tensorboard.backend.event_processing import data_provider  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_multiplexer  # noqa: E402
from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: E402
from tensorboard.summary.writer import event_file_writer  # noqa: E402


@pytest.fixture(scope="module")
def tool():
    path = os.environ.get("SHOAL_EVENT_TOOL")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("set SHOAL_EVENT_TOOL to the built event_tool (ctest does)")
    return path


@pytest.fixture
def no_tensorboard_warnings(caplog):
    """Fails the test if anything logs a warning about our files. TensorBoard warns about odd
    events (purges, file_version changes), but reports a corrupt or truncated record only at DEBUG
    ("Truncated record in ..."), and then silently drops the rest of the file, so that is caught
    too."""
    caplog.set_level(logging.DEBUG, logger="tensorboard")  # other loggers keep WARNING
    yield
    complaints = [r.getMessage() for r in caplog.get_records("call")  # .records: teardown's only
                  if r.levelno >= logging.WARNING
                  or re.search(r"truncated|corrupt|data ?loss", r.getMessage(), re.IGNORECASE)]
    assert not complaints, complaints


def run_tool(tool, *args):
    result = subprocess.run([tool, *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def write_run(tool, log_dir, suffix=""):
    """Writes the tool's sample scalars to a new file in log_dir: (path, {tag: [(step, value)]})."""
    lines = run_tool(tool, "write", str(log_dir), *([suffix] if suffix else []))
    expected = {}
    for line in lines[1:]:
        scalar = json.loads(line)
        expected.setdefault(scalar["tag"], []).append((scalar["step"], scalar["value"]))
    return lines[0], expected


def f32(x):
    """x rounded to float32, as its bit pattern (every NaN alike)."""
    with np.errstate(over="ignore"):
        value = np.float32(x)
    return "nan" if math.isnan(value) else value.tobytes()


def assert_scalars_equal(got, want, where):
    """got: {tag: [(step, value)]} from TensorBoard; want: the doubles the tool passed in."""
    assert set(got) == set(want), where
    for tag, points in want.items():
        assert [s for s, _ in got[tag]] == [s for s, _ in points], f"{where} {tag}"
        for (step, g), (_, w) in zip(got[tag], points):
            assert f32(g) == f32(w), f"{where} {tag} step {step}: {g} != float32({w})"


def test_writer_names_files_like_tensorflow(tool, tmp_path):
    path, _ = write_run(tool, tmp_path / "model", ".v2")
    assert os.path.dirname(path) == str(tmp_path / "model")
    assert re.fullmatch(r"events\.out\.tfevents\.\d{10}\.[^/]+\.v2", os.path.basename(path))


def test_event_accumulator_reads_our_scalars(tool, tmp_path, no_tensorboard_warnings):
    path, expected = write_run(tool, tmp_path)
    # Sanity of the sample itself, so the test is not only comparing the tool with itself.
    assert expected["loss"][:2] == [(0, 0.6931471805599453), (1, 0.1)]
    assert (1 << 40) in [step for step, _ in expected["loss"]]

    start = time.time()
    accumulator = event_accumulator.EventAccumulator(
        str(path), size_guidance={event_accumulator.SCALARS: 0})
    accumulator.Reload()
    assert accumulator.file_version == 2.0
    tags = accumulator.Tags()["scalars"]
    got = {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)] for tag in tags}
    assert_scalars_equal(got, expected, path)
    assert got["loss"][1][1] == np.float32(0.1)  # float32, not the double 0.1
    for tag in tags:
        for event in accumulator.Scalars(tag):
            assert start - 120 < event.wall_time <= time.time()


def test_dashboard_data_provider_reads_train_and_eval(tool, tmp_path, no_tensorboard_warnings):
    # model_dir holds the training run; model_dir/eval the evaluation run, as Estimator lays out.
    _, train = write_run(tool, tmp_path)
    _, evaluation = write_run(tool, tmp_path / "eval")
    multiplexer = plugin_event_multiplexer.EventMultiplexer(tensor_size_guidance={"scalars": 0})
    multiplexer.AddRunsFromDirectory(str(tmp_path))
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, str(tmp_path))
    data = provider.read_scalars(context.RequestContext(), experiment_id="",
                                 plugin_name="scalars", downsample=1000)
    assert set(data) == {".", "eval"}
    for run, want in ((".", train), ("eval", evaluation)):
        got = {tag: [(d.step, d.value) for d in series] for tag, series in data[run].items()}
        assert_scalars_equal(got, want, f"run {run}")


def test_tensorboard_sees_data_while_the_writer_runs(tool, tmp_path, no_tensorboard_warnings):
    live = subprocess.Popen([tool, "live", str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline().strip() == "flushed", live.stderr.read()
        accumulator = event_accumulator.EventAccumulator(str(tmp_path))
        accumulator.Reload()
        assert [e.step for e in accumulator.Scalars("loss")] == [1, 2, 3]

        live.stdin.write("go on\n")
        live.stdin.flush()
        assert live.stdout.readline().strip() == "closed", live.stderr.read()
        assert live.wait(timeout=60) == 0
        accumulator.Reload()  # picks up where it left off, as the server's reload loop does
        points = [(e.step, e.value) for e in accumulator.Scalars("loss")]
        assert points == [(s, np.float32(1 / s)) for s in range(1, 6)]
    finally:
        live.kill()
        live.wait()


def test_shoal_reads_tensorboard_written_events(tool, tmp_path):
    writer = event_file_writer.EventFileWriter(str(tmp_path))
    want = [(0, "loss", 0.75), (5, "loss", 0.5), (5, "eval/auc", 1 / 3), (1 << 40, "x", -1e-45)]
    for step, tag, value in want:
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag,
                                                                       simple_value=value)])
        writer.add_event(event_pb2.Event(wall_time=1234.5 + step, step=step, summary=summary))
    # A value that is no simple_value (an image's worth of bytes) is skipped by shoal's reader.
    image = summary_pb2.Summary.Image(height=1, width=1, colorspace=1, encoded_image_string=b"\0")
    writer.add_event(event_pb2.Event(step=6, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="picture", image=image)])))
    writer.close()

    (name,) = os.listdir(tmp_path)
    got = [json.loads(line) for line in run_tool(tool, "read", str(tmp_path / name))]
    assert [(g["step"], g["tag"]) for g in got] == [(s, t) for s, t, _ in want]
    for g, (step, _, value) in zip(got, want):
        assert f32(g["value"]) == f32(value)
        assert g["wall_time"] == 1234.5 + step


def test_tensorboard_server_serves_our_scalars(tool, tmp_path):
    """The real `tensorboard` program, with its default fast loader (the Rust data server)."""
    _, train = write_run(tool, tmp_path)
    _, evaluation = write_run(tool, tmp_path / "eval")
    server = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(tmp_path), "--port", "0",
         "--load_fast", "true", "--reload_interval", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = []
    try:
        url = None
        deadline = time.time() + 120
        while url is None and time.time() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            output.append(line)
            match = re.search(r"(http://[^ ]+:\d+/)", line)
            if match:
                url = match.group(1)
        assert url, "".join(output)

        def get(route, **params):
            query = urllib.parse.urlencode(params)
            with urllib.request.urlopen(f"{url}data/{route}?{query}", timeout=30) as response:
                return json.loads(response.read())

        want_tags = {".": set(train), "eval": set(evaluation)}
        while True:  # the data server loads in the background
            tags = {run: set(t) for run, t in get("plugin/scalars/tags").items()}
            if tags == want_tags:
                break
            assert time.time() < deadline, f"tags {tags}, want {want_tags}"
            time.sleep(0.5)
        for run, want in ((".", train), ("eval", evaluation)):
            got = {}
            for tag in want:
                # Rows are [wall_time, step, value]; NaN and infinities come as strings.
                rows = get("plugin/scalars/scalars", run=run, tag=tag)
                got[tag] = [(step, float(value)) for _, step, value in rows]
            assert_scalars_equal(got, want, f"server run {run}")
    finally:
        server.terminate()
        rest, _ = server.communicate(timeout=60)
        output.append(rest)
    complaints = [line for line in "".join(output).splitlines()
                  if re.search(r"warn|error|corrupt|data.?loss", line, re.IGNORECASE)]
    assert not complaints, "".join(output)
