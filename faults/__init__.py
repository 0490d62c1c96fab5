"""Local josefk clusters and the faults they meet.

- ``faults.processes``: the launcher: ``BrokerProcess`` (one broker subprocess) and
  ``LocalCluster`` (ZooKeeper and N brokers on 127.0.0.1, with kill/restart/pause/resume/
  isolate/heal, disk fill and ZooKeeper kill/restart); used by the compatibility tests,
  ``josefk cluster`` and the harness;
- ``faults.network``, ``faults.disk``: network partitions (cgroups + iptables) and small disks
  (tmpfs), always torn down;
- the fault harness, ``python -m faults``: ``faults.workload`` (real clients),
  ``faults.nemesis`` (the fault kinds), ``faults.checker`` (pure checks over the recorded
  ``faults.history``), ``faults.harness`` (one run and its report).
"""
