#!/usr/bin/env python3
"""The model-plugin workflow of examples/custom_model/README.md, end to end: installs shoal to a
temporary prefix, builds the example plugin against the install, generates CTR data with the
installed binary and trains `model: {type: my_model}` with `--plugin` for a few steps.

Usage: plugin_example_test.py --source-dir SRC --build-dir BUILD [--cxx COMPILER]
(ctest runs it as tools_plugin_example_test, label "slow").
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

parser = argparse.ArgumentParser()
parser.add_argument("--source-dir", required=True)
parser.add_argument("--build-dir", required=True)
parser.add_argument("--cxx", default="")
ARGS, UNITTEST_ARGS = parser.parse_known_args()

STEPS = 20


def run(args, timeout=600):
    out = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return out


def check(args, timeout=600):
    out = run(args, timeout)
    if out.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
    return out


class PluginExampleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shoal-plugin-example-")
        cls.prefix = os.path.join(cls.tmp, "install")
        cls.shoal = os.path.join(cls.prefix, "bin", "shoal")
        check(["cmake", "--install", ARGS.build_dir, "--prefix", cls.prefix])

        plugin_build = os.path.join(cls.tmp, "plugin-build")
        configure = ["cmake", "-S", os.path.join(ARGS.source_dir, "examples", "custom_model"),
                     "-B", plugin_build, f"-DSHOAL_PREFIX={cls.prefix}"]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        if ARGS.cxx:
            configure.append(f"-DCMAKE_CXX_COMPILER={ARGS.cxx}")
        check(configure)
        check(["cmake", "--build", plugin_build])
        cls.plugin = os.path.join(plugin_build, "libmy_model.so")

        cls.data = os.path.join(cls.tmp, "data")
        check([cls.shoal, "gen-data", "ctr", "--rows", "20000", "--files", "4", "--out", cls.data])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def train(self, model_dir, *extra):
        parts = [os.path.join(self.data, f"part-0000{i}.txt") for i in range(4)]
        return run([self.shoal, "train",
                    os.path.join(ARGS.source_dir, "examples", "custom_model", "config.yaml"),
                    "--set", f"input.train.files=[{', '.join(parts[:3])}]",
                    "--set", f"input.eval.files=[{parts[3]}]",
                    "--set", f"run.max_steps={STEPS}",
                    "--model-dir", os.path.join(self.tmp, model_dir), *extra])

    def test_install_has_the_binary_and_the_build_flags(self):
        self.assertTrue(os.access(self.shoal, os.X_OK))
        self.assertTrue(os.path.exists(
            os.path.join(self.prefix, "share", "shoal", "ShoalBuildFlags.cmake")))
        self.assertTrue(os.path.exists(
            os.path.join(self.prefix, "include", "shoal", "model", "plugin.h")))

    def test_trains_the_plugin_model(self):
        out = self.train("model", "--plugin", self.plugin)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn(f"trained: global_step {STEPS}", out.stdout)
        with open(os.path.join(self.tmp, "model", "summary.json")) as f:
            json.load(f)

    def test_without_the_plugin_the_model_is_unknown(self):
        out = self.train("model-no-plugin")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("unknown model 'my_model'", out.stderr)

    def test_plugin_loaded_twice_names_it(self):
        out = self.train("model-twice", "--plugin", self.plugin, "--plugin", self.plugin)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn(self.plugin, out.stderr)
        self.assertIn("'my_model' is already registered", out.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *UNITTEST_ARGS])
