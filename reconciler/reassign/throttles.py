"""The replication throttles a reassignment sets, exactly as `kafka-reassign-partitions.sh --execute --throttle`
writes them (`ReassignPartitionsCommand.modifyReassignmentThrottle`, Kafka 3.9) (PURE):

* per moving topic, `leader.replication.throttled.replicas` lists `partition:broker` for every replica a moving
  partition has now (the sources, which may lead it: `calculateLeaderThrottles`), and
  `follower.replication.throttled.replicas` `partition:broker` for every replica it gains
  (`calculateFollowerThrottles`), each a sorted set of strings (Java's TreeSet: `10:1` before `2:1`), over the
  moves in flight and those being started (`calculateProposedMoveMap`);
* on every broker a move involves (`calculateReassigningBrokers`: sources and destinations),
  `leader.replication.throttled.rate` and `follower.replication.throttled.rate` = the throttle.

Removing them is `--verify`'s `clearAllThrottles`: the two rates deleted on the brokers, the two lists on the
topics (here: only where the reconciler set them). Standard library only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reconciler.plan import PartitionMove

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
BROKER_KEYS = (LEADER_RATE, FOLLOWER_RATE)
TOPIC_KEYS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)


@dataclass(frozen=True, slots=True)
class Throttles:
    """What to set: per broker the two rates, per topic the two replica lists."""

    rate: int
    brokers: tuple[int, ...]
    topics: Mapping[str, tuple[str, str]]  # topic -> (leader list, follower list)

    def broker_configs(self) -> dict[int, dict[str, str]]:
        return {b: {LEADER_RATE: str(self.rate), FOLLOWER_RATE: str(self.rate)} for b in self.brokers}

    def topic_configs(self) -> dict[str, dict[str, str]]:
        return {t: {LEADER_REPLICAS: leader, FOLLOWER_REPLICAS: follower}
                for t, (leader, follower) in sorted(self.topics.items())}


def throttles(moves: Iterable[PartitionMove], rate: int) -> Throttles:
    """The throttles of `moves` (those in flight and those being started together)."""
    leaders: dict[str, set[str]] = defaultdict(set)
    followers: dict[str, set[str]] = defaultdict(set)
    brokers: set[int] = set()
    for m in moves:
        sources = set(m.current)
        destinations = set(m.target) - sources
        leaders[m.topic].update(f"{m.partition}:{b}" for b in sources)
        followers[m.topic].update(f"{m.partition}:{b}" for b in destinations)
        brokers |= sources | destinations
    topics = {t: (",".join(sorted(leaders[t])), ",".join(sorted(followers[t]))) for t in sorted(leaders)}
    return Throttles(rate, tuple(sorted(brokers)), topics)
