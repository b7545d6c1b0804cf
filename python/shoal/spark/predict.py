"""Distributed prediction over a DataFrame: the place for it, not built yet.

It will run the cluster-prediction mode of `shoal run` (being added in C++) in a barrier stage
like `run`'s: the chief hands the DataFrame's partitions out as data tasks and the workers score
them with embeddings pulled from the parameter servers, returning a DataFrame of scores.
"""


def predict(spark, config, dataframe, num_workers, num_ps, **kwargs):
    """Scores `dataframe` with the model in the config's model_dir on a shoal cluster inside Spark
    and returns a DataFrame of scores. Not available yet: raises NotImplementedError."""
    raise NotImplementedError(
        "shoal.spark.predict: distributed prediction over a DataFrame is not available yet: it "
        "needs the cluster-prediction mode of `shoal run`, which is not built. For now, score "
        "files with `shoal predict CONFIG --input FILES` or serve the export with `shoal serve`")
