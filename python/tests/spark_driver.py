"""The driver program spark_test.py submits with `spark-submit`: calls shoal.spark.run as a user's
driver would, and writes what happened as JSON for the test to check.

    spark-submit ... spark_driver.py SPEC.json RESULT.json

SPEC: {"calls": [{"name": ..., "kwargs": {...}}, ...], "secret_file": PATH, "ui_file": PATH}.
A call is shoal.spark.run's, or with "function": "predict" shoal.spark.predict's; "dataframes"
names keyword arguments that are DataFrames read from CSV: {"train_data": {"path": ..., "schema":
DDL, "sep": ",", "header": false, "partitions": 4}}. Each call's result is {"summary": {...}}
(for predict: the summary and "rows", the returned DataFrame's rows) or {"error": CLASS,
"message": TEXT}, with "seconds" and "ended_at" (Unix time); "application_id" is the Spark application's (the name of its
event log).
The job secrets shoal.spark makes are recorded in secret_file (the test looks for them in every
log it can read, and must know them to do so); the Spark UI's REST pages of this application
(environment, jobs, stages, executors) are saved to ui_file before the context stops.
"""
import json
import logging
import sys
import time
import urllib.request

from pyspark.sql import SparkSession

import shoal.spark
import shoal.spark.job


def ui_pages(sc):
    """The UI's REST pages of this application. On YARN a driver in the application master's
    container (cluster mode) has its UI behind YARN's proxy, which answers callers from other
    addresses with a redirect to the proxy address the ResourceManager advertises; when that
    redirect does not work (a minicluster advertises port 0), the pages are fetched from the proxy
    at the ResourceManager's web address of the Hadoop configuration, and failing that the error
    is written instead of the pages."""
    app = sc.applicationId
    bases = [sc.uiWebUrl]
    if sc.master == "yarn":
        web = sc._jsc.hadoopConfiguration().get("yarn.resourcemanager.webapp.address")  # noqa: SLF001
        bases.append(f"http://{web}/proxy/{app}")
    for base in bases:
        try:
            pages = []
            for page in ("environment", "jobs", "stages?details=true", "executors"):
                with urllib.request.urlopen(f"{base}/api/v1/applications/{app}/{page}",
                                            timeout=10) as r:
                    pages.append(r.read().decode())
            return pages
        except OSError as e:
            error = f"{base}: {e}"
    return [f"ui_pages: {error}"]


def main(spec_path, result_path):
    with open(spec_path) as f:
        spec = json.load(f)
    made = []
    make_secret = shoal.spark.job._new_job_secret

    def recorded_secret():
        secret = make_secret()
        made.append(secret)
        with open(spec["secret_file"], "w") as f:
            json.dump(made, f)
        return secret

    shoal.spark.job._new_job_secret = recorded_secret
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    spark = SparkSession.builder.appName("shoal spark_test").getOrCreate()
    results = {"application_id": spark.sparkContext.applicationId}
    try:
        for call in spec["calls"]:
            start = time.monotonic()
            kwargs = dict(call["kwargs"])
            for name, source in call.get("dataframes", {}).items():
                kwargs[name] = (spark.read.csv(source["path"], schema=source["schema"],
                                               sep=source.get("sep", ","),
                                               header=source.get("header", False))
                                .repartition(source["partitions"]))
            try:
                if call.get("function") == "predict":
                    scores = shoal.spark.predict(spark, **kwargs)
                    outcome = {"summary": scores.shoal_summary,
                               "rows": [row.asDict() for row in scores.collect()]}
                else:
                    outcome = {"summary": shoal.spark.run(spark, **kwargs)}
            except Exception as e:  # noqa: BLE001 - the test checks which one
                outcome = {"error": type(e).__name__, "message": str(e)}
            outcome["seconds"] = time.monotonic() - start
            outcome["ended_at"] = time.time()
            results[call["name"]] = outcome
            print(f"spark_driver: {call['name']}: {json.dumps(outcome)[:300]}", flush=True)
        with open(spec["ui_file"], "w") as f:
            f.write("\n".join(ui_pages(spark.sparkContext)))
    finally:
        with open(result_path, "w") as f:
            json.dump(results, f)
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
