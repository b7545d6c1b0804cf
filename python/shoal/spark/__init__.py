"""Run a shoal job inside Spark executors: one `spark-submit`, one barrier stage, one task per
shoal process (parameter servers, chief, workers, evaluator). docs/spark.md is the guide.

    import shoal.spark
    summary = shoal.spark.run(spark, "wide_deep.yaml", num_workers=2, num_ps=1,
                              overrides={"run.max_steps": 500}, model_dir="hdfs://nn/models/wd")
    print(summary["metrics"]["auc"], summary["export_path"])

Modules: job (the driver: `run`), member (the executors' task), supervisor (keeps a member from
outliving its task), cluster (roles, TF_CONFIG), checks (settings refused up front), summary (the
chief's summary), predict (`predict`: scores a DataFrame), staging (DataFrames written as CSV for
a job), driver_config (the config as the driver reads it), tfrecords (`write_tfrecords`: a
DataFrame written as TFRecord files of tf.train.Example) and example_encoder (its encoder).
"""

from shoal.spark.errors import ShoalJobError, SparkSettingsError
from shoal.spark.job import run
from shoal.spark.predict import predict
from shoal.spark.tfrecords import TFRecordsWritten, TFRecordWriteError, write_tfrecords

__all__ = ["run", "predict", "write_tfrecords", "ShoalJobError", "SparkSettingsError",
           "TFRecordWriteError", "TFRecordsWritten"]
