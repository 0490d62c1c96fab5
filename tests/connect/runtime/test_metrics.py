from josefk.connect.runtime.metrics import ConnectMetrics
from josefk.connect.runtime.seams import ConnectorTaskId, State


def test_metrics_render_with_connects_names_and_labels():
    metrics = ConnectMetrics()
    task = metrics.task(ConnectorTaskId("src", 0), sink=False)
    metrics.task(ConnectorTaskId("snk", 0), sink=True).read.inc(5)
    task.poll.inc(10)
    task.write.inc(9)
    task.committed(4.0)
    task.committed(2.0)
    metrics.state("src", State.RUNNING)
    metrics.connector_count.set(1)
    text = metrics.render().decode()
    assert 'kafka_connect_source_task_source_record_poll_total{connector="src",task="0"} 10.0' in text
    assert 'kafka_connect_source_task_source_record_write_total{connector="src",task="0"} 9.0' in text
    assert 'kafka_connect_task_offset_commit_avg_time_ms{connector="src",task="0"} 3.0' in text
    assert 'kafka_connect_task_offset_commit_max_time_ms{connector="src",task="0"} 4.0' in text
    assert 'kafka_connect_connector_status{connector="src",status="running"} 1.0' in text
    assert 'kafka_connect_connector_status{connector="src",status="failed"} 0.0' in text
    assert "kafka_connect_worker_connector_count 1.0" in text
    assert 'kafka_connect_sink_task_sink_record_read_total{connector="snk",task="0"} 5.0' in text
    assert 'sink_record_read_total{connector="src"' not in text  # a source has no sink metrics
    assert 'source_record_poll_total{connector="snk"' not in text
    metrics.forget("src")
    assert 'connector_status{connector="src"' not in metrics.render().decode()
