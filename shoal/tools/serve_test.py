"""`shoal serve` as a user runs it: a small wide & deep model trained and exported with the CLI
(job_cli_test's task), served on a free port (--port 0) and asked over HTTP with urllib. Checks
that predictions equal `shoal predict` on the same rows in every request form, the 400 / 404 /
413 answers, concurrent requests, the reload of a newer export and the skipping of a broken one,
and a clean exit on SIGTERM. The binary comes from $SHOAL_BIN; ctest sets it:

    SHOAL_BIN=build/shoal $(scripts/python-env.sh) -m pytest -q shoal/tools/serve_test.py
"""
import base64
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from job_cli_test import EVAL_BATCH_SIZE, FINAL_STEP, write_job

NAME = "ctr"


@pytest.fixture(scope="module")
def shoal_bin():
    path = os.environ.get("SHOAL_BIN")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("set SHOAL_BIN to the built shoal binary (ctest does)")
    return path


def run(shoal_bin, *args):
    result = subprocess.run([shoal_bin, *map(str, args)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def trained(shoal_bin, tmp_path_factory):
    directory = tmp_path_factory.mktemp("serve")
    job = write_job(directory, directory / "model")
    run(shoal_bin, "train", job.config)
    return job


class Server:
    """A `shoal serve` process; its port is read from the line it prints."""

    def __init__(self, shoal_bin, path, *flags):
        self.process = subprocess.Popen(
            [shoal_bin, "serve", path, "--port", "0", "--name", NAME, *map(str, flags)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        match = re.search(r"version (\d+) \(global step (\d+)\) .* on http://127\.0\.0\.1:(\d+)$",
                          line.strip())
        if not match:
            self.process.kill()
            pytest.fail(f"no serving line: {line!r} {self.process.stderr.read()[-2000:]}")
        self.version, self.step, self.port = map(int, match.groups())
        self.url = f"http://127.0.0.1:{self.port}/v1/models/{NAME}"

    def request(self, path="", body=None, content_type="application/json", method=None):
        """(status, parsed JSON body)."""
        data = body.encode() if isinstance(body, str) else body
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def predict(self, payload):
        return self.request(":predict", json.dumps(payload))

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


@pytest.fixture
def serve(shoal_bin):
    servers = []

    def start(path, *flags):
        servers.append(Server(shoal_bin, path, *flags))
        return servers[-1]
    yield start
    for server in servers:
        server.stop()


def export_base(job):
    return os.path.join(job.model_dir, "export", "final")


def eval_csv(job):
    """The eval file's lines (without the header) and its rows as typed JSON instances."""
    with open(os.path.join(os.path.dirname(job.config), "eval.csv")) as f:
        lines = f.read().splitlines()[1:]
    instances = [{"x1": float(x1), "x2": float(x2), "color": color, "city": city}
                 for x1, x2, color, city, _ in (line.split(",") for line in lines)]
    return lines, instances


def expected_predictions(shoal_bin, job):
    out = run(shoal_bin, "predict", job.config)
    return [json.loads(line) for line in out.splitlines()]


def batches(rows, size=EVAL_BATCH_SIZE):
    """`shoal predict` reads the eval input in batches of EVAL_BATCH_SIZE; requests of the same
    rows give bit-identical numbers (another batch size may round matrix products differently)."""
    return [rows[i:i + size] for i in range(0, len(rows), size)]


def test_predictions_equal_shoal_predict_in_every_form(shoal_bin, trained, serve):
    server = serve(export_base(trained))
    expected = expected_predictions(shoal_bin, trained)
    lines, instances = eval_csv(trained)
    assert len(expected) == len(lines) == 200

    got = []
    for batch in batches(instances):
        status, body = server.predict({"instances": batch})
        assert status == 200, body
        got += body["predictions"]
    assert got == expected

    got = []
    for batch in batches(lines):
        status, body = server.request(":predict", "\n".join(batch) + "\n", "text/csv")
        assert status == 200, body
        got += body["predictions"]
    assert got == expected
    unlabelled = [line.rsplit(",", 1)[0] for line in lines]
    got = [p for batch in batches(unlabelled)
           for p in server.request(":predict", "\n".join(batch), "text/csv")[1]["predictions"]]
    assert got == expected

    got = []
    for batch in batches(instances):
        columns = {key: [row[key] for row in batch] for key in batch[0]}
        status, body = server.predict({"inputs": columns})
        assert status == 200, body
        got += body["outputs"]["logistic"]
    assert got == [p["logistic"] for p in expected]

    # All 200 rows in one request: the same up to float rounding.
    status, body = server.predict({"instances": instances})
    assert status == 200, body
    for mine, theirs in zip(body["predictions"], expected):
        assert mine["logistic"] == pytest.approx(theirs["logistic"], rel=1e-6)

    # The training data is not needed: a copy of the export elsewhere serves the same.
    copy = shutil.copytree(os.path.join(export_base(trained), str(server.version)),
                           os.path.join(os.path.dirname(trained.config), "copied"))
    other = serve(copy)
    assert other.predict({"instances": instances[:50]})[1]["predictions"] == expected[:50]


def test_status_metadata_and_errors(trained, serve):
    server = serve(export_base(trained), "--max-request-bytes", 4096)
    status, body = server.request()
    assert status == 200
    assert body == {"model_version_status": [{
        "version": str(server.version), "state": "AVAILABLE",
        "status": {"error_code": "OK", "error_message": ""}}]}
    status, body = server.request("/metadata")
    assert status == 200
    signature = body["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert sorted(signature["inputs"]) == ["city", "color", "x1", "x2"]
    assert sorted(signature["outputs"]) == ["class_ids", "logistic", "logits"]
    assert body["metadata"]["shoal"]["global_step"] == server.step

    status, body = server.predict({"instances": [{"x1": 0.1}, {"x1": "high"}]})
    assert (status, body) == (400, {"error": "row 1: column 'x1': expected a number, got \"high\""})
    status, body = server.predict({"instances": [{"x3": 1}]})
    assert status == 400 and "unknown input 'x3'" in body["error"]
    status, body = server.request(":predict", "{not json")
    assert status == 400 and "not valid JSON" in body["error"]
    status, body = server.request(":predict", "1,2\n", "text/csv")
    assert status == 400 and body["error"].startswith("row 0: expected 4 fields, found 2")
    req = urllib.request.Request(f"http://127.0.0.1:{server.port}/v1/models/other:predict",
                                 data=b"{}")
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(req, timeout=30)
    assert error.value.code == 404
    assert "Servable not found" in json.loads(error.value.read())["error"]
    assert server.request("/versions/12345")[0] == 404
    status, body = server.predict({"instances": [{"x1": 0.5}] * 1000})
    assert status == 413 and "4096 bytes" in body["error"]
    # The server is fine after all that.
    assert server.predict({"instances": [{"x1": 0.5}]})[0] == 200


def test_concurrent_requests_get_the_same_answers(shoal_bin, trained, serve):
    server = serve(export_base(trained), "--threads", 4)
    expected = expected_predictions(shoal_bin, trained)
    _, instances = eval_csv(trained)

    def ask(i):
        start = (i % 4) * 50  # shoal predict's batches, for bit-identical answers
        status, body = server.predict({"instances": instances[start:start + 50]})
        return status, body["predictions"] == expected[start:start + 50]

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(ask, range(40)))
    assert results == [(200, True)] * 40


def test_a_newer_export_is_served_and_a_broken_one_skipped(shoal_bin, trained, serve, tmp_path):
    model_dir = shutil.copytree(trained.model_dir, tmp_path / "model")
    base = os.path.join(model_dir, "export", "final")
    server = serve(base, "--poll-secs", 0.2)
    first = server.version
    _, instances = eval_csv(trained)
    before = server.predict({"instances": instances[:3]})[1]

    def wait_for(condition):
        deadline = time.time() + 20
        while time.time() < deadline:
            status = server.request()[1]["model_version_status"]
            if condition(status):
                return status
            time.sleep(0.1)
        pytest.fail(f"the server did not pick up the change: {status}")

    # Train on (max_steps 10 more) and export: a new version with a new global step.
    run(shoal_bin, "train", trained.config, "--model-dir", model_dir,
        "--set", "run.max_steps=48", "--set", "eval.exporters=[]")
    out = run(shoal_bin, "export", trained.config, "--model-dir", model_dir, "--export-dir", base)
    second = int(os.path.basename(out.split("exported: ")[1].strip()))
    assert second > first
    wait_for(lambda s: s[0]["version"] == str(second) and s[0]["state"] == "AVAILABLE")
    after = server.predict({"instances": instances[:3]})[1]
    assert after != before
    assert server.request("/metadata")[1]["metadata"]["shoal"]["global_step"] == 48

    # A newer version with a corrupt weight file is refused; the second keeps serving.
    broken = os.path.join(base, str(second + 100))
    shutil.copytree(os.path.join(base, str(second)), broken)
    data = [os.path.join(d, f) for d, _, files in os.walk(broken) for f in files
            if f.endswith(".data")][0]
    with open(data, "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 1]))
    status = wait_for(lambda s: len(s) == 2)
    assert status[0]["version"] == str(second + 100) and status[0]["state"] == "END"
    assert "checksum mismatch" in status[0]["status"]["error_message"]
    assert status[1] == {"version": str(second), "state": "AVAILABLE",
                         "status": {"error_code": "OK", "error_message": ""}}
    assert server.predict({"instances": instances[:3]})[1] == after


def test_tf_example_instances_and_sigterm(trained, serve):
    server = serve(export_base(trained))
    # A tf.train.Example with x1 = 0.5 (float_list) and color = "red" (bytes_list), by hand.
    def feature(name, kind, payload):
        value = bytes([kind << 3 | 2, len(payload)]) + payload
        entry = bytes([0x0a, len(name)]) + name + bytes([0x12, len(value)]) + value
        return bytes([0x0a, len(entry)]) + entry
    x1 = feature(b"x1", 2, bytes([0x0a, 4]) + bytes.fromhex("0000003f"))
    color = feature(b"color", 1, bytes([0x0a, 3]) + b"red")
    example = bytes([0x0a, len(x1 + color)]) + x1 + color
    status, body = server.predict({"instances": [{"b64": base64.b64encode(example).decode()}]})
    assert status == 200, body
    assert body["predictions"] == server.predict(
        {"instances": [{"x1": 0.5, "color": "red"}]})[1]["predictions"]
    assert server.stop() == 0


def test_inspect_shows_an_export_and_its_checksums(shoal_bin, trained, tmp_path):
    base = export_base(trained)
    version = [name for name in os.listdir(base) if name.isdigit()][0]
    out = run(shoal_bin, "inspect", os.path.join(base, version))
    assert f"version: {version} (format shoal-export 2), global step {FINAL_STEP}\n" in out
    assert "model: wide_deep, head binary\n" in out
    assert "inputs (csv, label 'label'): x1 float, x2 float, color string, city string\n" in out
    assert "outputs: logits [1], logistic [1], class_ids [1]\n" in out
    assert "no optimizer slots\n" in out
    assert out.endswith("checksums: OK\n")
    assert f"  {version}  global step {FINAL_STEP}\n" in run(shoal_bin, "inspect", base)

    broken = shutil.copytree(os.path.join(base, version), tmp_path / "broken")
    with open(broken / "config.yaml", "a") as f:
        f.write("# edited\n")
    result = subprocess.run([shoal_bin, "inspect", str(broken)], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stdout.endswith("checksums: FAILED\n")
    assert "config.yaml: size is" in result.stderr
