"""Converters with Kafka Connect's class names as aliases: a record's key, value or headers between Connect data and bytes."""
