"""The seed tree of a campaign: campaign seed -> group seed -> shard seeds.

A group is one (configuration, variant, engine) triple.  Its seed is 64 bits of BLAKE2b over
the campaign seed and the group's path, and shard ``i``'s seed is 64 bits of BLAKE2b over the
group seed and ``i``.  BLAKE2b, not Python's ``hash()``: ``hash`` of a string is salted per
process (PYTHONHASHSEED), and a seed must be the same on the driver, on every executor and
next year.  Adding a configuration, variant or engine to a spec changes no existing shard's
seed (a path's seed depends only on the path), though it shifts task indices.

Tasks come in a stable order: the spec's configuration order, then variant order, then engine
order, then shard number; ``index`` is the position in that order and ``key`` the path
``config/variant/engine/shard``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["ShardTask", "group_seed", "shard_seed", "shard_tasks"]


@dataclass(frozen=True)
class ShardTask:
    index: int
    key: str                    # "config/variant/engine/shard"
    config: str
    variant: str
    engine: str
    shard: int
    seed: int                   # 64-bit shard seed

    def to_dict(self) -> dict:
        return {"index": self.index, "key": self.key, "config": self.config,
                "variant": self.variant, "engine": self.engine, "shard": self.shard,
                "seed": self.seed}


def _h64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def group_seed(campaign_seed: int, config: str, variant: str, engine: str) -> int:
    return _h64(f"kipcheck-campaign:{campaign_seed}:{config}/{variant}/{engine}")


def shard_seed(group: int, shard: int) -> int:
    return _h64(f"kipcheck-shard:{group}:{shard}")


def _conformance_supports(config: str) -> bool:
    from model.configs import CONFIGS
    from properties.conformance import unsupported
    return unsupported(CONFIGS[config]) is None


def shard_tasks(spec) -> list:
    """Every shard of ``spec`` as a ``ShardTask``, in the stable order."""
    tasks = []
    for config, variant in spec.pairs():
        for engine in spec.engines:
            if engine == "conformance" and (variant != "correct"
                                            or not _conformance_supports(config)):
                continue        # the implementation implements the correct design only,
                                # and conformance is defined on some configurations only
            g = group_seed(spec.seed, config, variant, engine)
            for i in range(spec.shards):
                tasks.append(ShardTask(len(tasks), f"{config}/{variant}/{engine}/{i}", config,
                                       variant, engine, i, shard_seed(g, i)))
    return tasks
