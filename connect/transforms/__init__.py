"""Single message transforms and predicates as Apache Kafka ships them (org.apache.kafka.connect.transforms), with their class names as aliases."""
