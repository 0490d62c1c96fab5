"""Kafka Connect for josefk (``josefk connect``): a Connect-compatible worker in Python, with
Kafka Connect's worker settings, REST API, internal topics (configs, offsets, statuses in Apache
Kafka Connect's key and value layout), group protocol (``connect``, incremental cooperative
assignment), converters, single message transforms, error handling and exactly-once sources,
against josefk or any Kafka cluster. Connectors are Python classes on ``connect.api``, found
through the ``josefk.connect.plugins`` entry-point group.

``api`` is the connector author's interface and imports nothing of josefk;
``converters`` and ``transforms`` build on it only; ``runtime`` (the worker, its herders,
stores and group membership) and ``rest`` use the tools' client and ``httpd``. Like the other
services it is a Kafka client: it must not import the broker's server, handlers or rooms."""
