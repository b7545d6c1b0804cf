#!/usr/bin/env python3
"""Exercises the shoal binary as a user would: exit codes and messages. Usage: cli_test.py SHOAL"""
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
        self.assertEqual(out.stderr, "error: unknown command 'frobnicate'; commands: quickstart, inspect, version\n")

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


if __name__ == "__main__":
    unittest.main()
