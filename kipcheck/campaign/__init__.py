"""Campaigns: large stateful-test and random-walk runs split into seeded shards (DESIGN 6).

``spec.load_spec`` reads a TOML campaign spec; ``seeds.shard_tasks`` derives every shard's seed
from the campaign seed; ``shard.run_shard`` runs one shard (a pure function, no Spark);
``runner.run_campaign`` maps shards over Spark executors (``spark.py``, the only module that
imports pyspark), a process pool or this process, writes each finished shard as Parquet
(``results.ResultStore``), merges coverage and failures, and re-runs sampled seeds to check
determinism; ``cli`` is ``kipcheck campaign`` and ``kipcheck replay --campaign``.  Importing
this package imports neither pyspark nor pyarrow nor Hypothesis.
"""
from kipcheck.campaign.seeds import ShardTask, shard_tasks
from kipcheck.campaign.spec import Budget, CampaignSpec, SpecError, load_spec

__all__ = ["Budget", "CampaignSpec", "SpecError", "load_spec", "ShardTask", "shard_tasks"]
