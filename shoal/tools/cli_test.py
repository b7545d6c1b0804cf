#!/usr/bin/env python3
"""Exercises the shoal binary as a user would: exit codes and messages. Usage: cli_test.py SHOAL"""
import os
import subprocess
import sys
import unittest

SHOAL = sys.argv.pop(1) if len(sys.argv) > 1 else "build/shoal"


def run(*args):
    return subprocess.run([SHOAL, *args], capture_output=True, text=True, timeout=120)


class CliTest(unittest.TestCase):
    def test_version(self):
        out = run("version")
        self.assertEqual(out.returncode, 0)
        self.assertRegex(out.stdout, r"^shoal \d+\.\d+\.\d+\n$")

    def test_unknown_subcommand_is_a_usage_error(self):
        out = run("frobnicate")
        self.assertEqual(out.returncode, 2)
        self.assertEqual(out.stderr, "error: unknown command 'frobnicate'; commands: quickstart, inspect, convert, gen-data, train, evaluate, predict, export, run, launch, serve, doctor, fs, version\n")

    def test_out_of_range_flag_is_a_usage_error(self):
        out = run("quickstart", "--epochs", "0")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("--epochs", out.stderr)

    def test_missing_data_names_the_fix(self):
        out = run("quickstart", "--data-dir", "/nonexistent/fmnist")
        self.assertEqual(out.returncode, 1)
        self.assertTrue(out.stderr.startswith("error: Fashion-MNIST not found in /nonexistent"),
                        out.stderr)
        self.assertIn("dataset-fashion-mnist", out.stderr)

    def test_unknown_optimizer_lists_known_ones(self):
        out = run("quickstart", "--optimizer", "adagard")
        self.assertEqual(out.returncode, 1)
        self.assertIn("unknown optimizer 'adagard'", out.stderr)
        self.assertIn("adagrad", out.stderr)


    def test_inspect_missing_file(self):
        out = run("inspect", "/nonexistent/x.tfrecord")
        self.assertEqual(out.returncode, 1)
        self.assertTrue(out.stderr.startswith("error: "), out.stderr)
        self.assertIn("/nonexistent/x.tfrecord", out.stderr)

    def test_inspect_corrupt_file_names_the_offset(self):
        import tempfile
        with tempfile.NamedTemporaryFile(suffix=".tfrecord") as f:
            f.write(b"\x05" + b"\x00" * 7 + b"garbage!")
            f.flush()
            out = run("inspect", f.name)
        self.assertEqual(out.returncode, 1)
        self.assertIn("offset 0", out.stderr)


    def test_gen_data_ctr_is_deterministic_and_inspectable(self):
        import json
        import os
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            outs = []
            for sub in ("a", "b"):
                out = run("gen-data", "ctr", "--rows", "3000", "--seed", "9", "--files", "2",
                          "--out", os.path.join(d, sub))
                self.assertEqual(out.returncode, 0, out.stderr)
                outs.append(out.stdout.replace(os.path.join(d, sub), "DIR"))
            self.assertEqual(outs[0], outs[1])
            self.assertIn("metadata: DIR/generator.json\n", outs[0])
            best = float(outs[0].split("best_auc: ")[1])
            self.assertGreater(best, 0.6)
            self.assertLess(best, 0.95)
            meta = json.load(open(os.path.join(d, "a", "generator.json")))
            self.assertAlmostEqual(meta["best_auc"], best, places=4)
            parts = sorted(p for p in os.listdir(os.path.join(d, "a")) if p.startswith("part-"))
            self.assertEqual(len(parts), 2)
            lines = sum(1 for p in parts for _ in open(os.path.join(d, "a", p)))
            self.assertEqual(lines, 3000)
            for p in parts:
                self.assertEqual(open(os.path.join(d, "a", p)).read(),
                                 open(os.path.join(d, "b", p)).read())

    def test_gen_convert_inspect_round_trip(self):
        import os
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            out = run("gen-data", "ctr", "--rows", "500", "--out", os.path.join(d, "txt"))
            self.assertEqual(out.returncode, 0, out.stderr)
            out = run("convert", "--format", "criteo", "--out", os.path.join(d, "tfr"),
                      os.path.join(d, "txt", "part-*"))
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("converted 500 records", out.stderr)
            out = run("inspect", os.path.join(d, "tfr", "part-00000.tfrecord"))
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("500", out.stdout)
            self.assertIn("C26", out.stdout)
            out = run("convert", "--format", "criteo", "--out", os.path.join(d, "tfr"),
                      os.path.join(d, "txt", "part-*"))
            self.assertEqual(out.returncode, 1)
            out = run("convert", "--format", "criteo", "--bad-records", "skip:x", "--out",
                      os.path.join(d, "x"), os.path.join(d, "txt", "part-*"))
            self.assertEqual(out.returncode, 1)
            self.assertIn("skip:N", out.stderr)

    def test_doctor_local_directory_is_writable(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            out = run("doctor", d)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertIn("  ok    exists: directory\n", out.stdout)
            self.assertIn(f"  ok    write probe: writable: created, read back and deleted a probe "
                          f"file in {d}\n", out.stdout)
            self.assertTrue(out.stdout.endswith("all checks passed\n"), out.stdout)
            self.assertEqual(os.listdir(d), [])  # the probe is gone
            out = run("doctor", os.path.join(d, "model", "new"))
            self.assertEqual(out.returncode, 0, out.stdout)
            self.assertIn("does not exist yet; the nearest existing directory is " + d, out.stdout)

    def test_doctor_names_what_is_wrong(self):
        import socket
        import tempfile
        with tempfile.NamedTemporaryFile() as f:
            out = run("doctor", os.path.join(f.name, "x"))
            self.assertEqual(out.returncode, 1, out.stdout)
            self.assertIn(f"above it is a file", out.stdout)
        # An RPC port with no known HTTP port: the variable to set is named.
        out = run("doctor", "hdfs://127.0.0.1:12345/data")
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn("FAIL  URI: no WebHDFS (HTTP) port known for the NameNode RPC port 12345",
                      out.stdout)
        self.assertIn("SHOAL_HDFS_HTTP_PORTS=12345:<http port>", out.stdout)
        # Nobody listening on the HTTP port.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        out = run("doctor", f"webhdfs://127.0.0.1:{port}/data")
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn(f"FAIL  TCP connect: connection refused to 127.0.0.1:{port}\n", out.stdout)
        self.assertIn("dfs.webhdfs.enabled", out.stdout)
        self.assertIn(f"is {port} the NameNode's HTTP port", out.stdout)
        # A malformed environment is an error for every command, naming the variable.
        out = subprocess.run([SHOAL, "version"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "SHOAL_HDFS_HTTP_PORTS": "8020=9870"})
        self.assertEqual(out.returncode, 1)
        self.assertIn("SHOAL_HDFS_HTTP_PORTS", out.stderr)

    def test_gen_data_needs_out(self):
        out = run("gen-data", "ctr", "--rows", "10")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("--out", out.stderr)


if __name__ == "__main__":
    unittest.main()
