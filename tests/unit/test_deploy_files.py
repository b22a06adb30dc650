"""docker-compose.yml is for users (no Docker engine runs here): it is validated by parsing it."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from altm.core import Settings
from altm.interfaces.cli import app
from altm.wiring import resolve

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict[str, object]:
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_services_run_altm_commands_that_exist(compose: dict[str, object]) -> None:
    services = compose["services"]
    assert isinstance(services, dict) and {"kafka", "worker", "retrieval"} <= set(services)
    for name in ("worker", "retrieval"):
        command = services[name]["command"]
        result = CliRunner().invoke(app, [command[0], "--help"])
        assert result.exit_code == 0, (name, result.output)
        options = {c for c in command if c.startswith("--")}
        assert options <= set(result.output.replace(",", " ").split()), (name, options)


def test_the_environment_names_adapters_by_url(compose: dict[str, object]) -> None:
    services = compose["services"]
    assert isinstance(services, dict)
    env = services["worker"]["environment"]
    fields = {k.removeprefix("ALTM_").lower(): v for k, v in env.items() if k != "ALTM_MASTER_KEY"}
    settings = resolve(Settings(data_dir=Path("/data"), **fields))
    assert settings.bus == "kafka://kafka:9092" and settings.vectors == "edge:////data/vectors"
    assert settings.partitions == 8 and settings.keystore == "kafka://kafka:9092"  # the keys on the broker
    assert env["ALTM_MASTER_KEY"].startswith("${ALTM_MASTER_KEY:?")  # the user's secret: compose refuses without


def test_no_data_volume_is_shared_and_the_log_is_kept(compose: dict[str, object]) -> None:
    """Issue 13: each worker keeps its partitions in a volume of its own (an anonymous one per container), the
    retrieval service its read replica in another; nothing is shared (the data keys are on the broker); the
    broker's log dir is its volume (the image's default is /tmp)."""
    services = compose["services"]
    assert isinstance(services, dict)
    worker, retrieval, kafka = services["worker"], services["retrieval"], services["kafka"]
    assert "/data" in worker["volumes"]  # no name: a new volume for every worker container
    named = {v.split(":")[0]: v.split(":")[1] for s in (worker, retrieval) for v in s["volumes"] if ":" in v}
    assert named == {"altm-retrieval": "/data"}
    assert retrieval["environment"]["ALTM_READ_REPLICA"] == "true"
    assert float(worker["environment"]["ALTM_WORKER_DROP_UNOWNED_AFTER_S"]) > 0  # no stale copy outlives it
    assert resolve(Settings(data_dir=Path("/data"), read_replica=retrieval["environment"]["ALTM_READ_REPLICA"]
                            )).read_replica is True
    log_dir = kafka["environment"]["KAFKA_LOG_DIRS"]
    assert any(v.endswith(":" + log_dir) for v in kafka["volumes"])
    for service in services.values():
        for port in service.get("ports", []):
            published = int(str(port).split(":")[1])
            assert not 32768 <= published <= 60999, port  # outside Linux's ephemeral range


def test_published_ports_bind_to_loopback(compose: dict[str, object]) -> None:
    services = compose["services"]
    assert isinstance(services, dict)
    for name, service in services.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)


DEPLOY = COMPOSE.parent / "deploy"


def _exported_series() -> set[str]:
    """Every series name ALTM's metrics expose (counters with _total, histograms with _bucket/_count/_sum)."""
    import prometheus_client

    import altm.pipeline._metrics
    import altm.recall._metrics

    assert altm.recall._metrics.BUNDLE_TOKENS is not None  # both modules registered their metrics
    names = set()
    for family in prometheus_client.REGISTRY.collect():
        if family.name.startswith("altm_"):
            suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}.get(family.type, ("",))
            names |= {family.name + s for s in suffixes}
    assert altm.pipeline._metrics.STAGE_RECORDS is not None
    return names


def test_the_grafana_dashboard_loads_and_queries_only_metrics_that_exist() -> None:
    """Issue 16: the dashboard JSON is valid, every panel has a Prometheus query, and each query names a series
    ALTM exports (a renamed metric fails here, not on an operator's screen)."""
    import json
    import re

    dashboard = json.loads((DEPLOY / "grafana" / "altm-dashboard.json").read_text(encoding="utf-8"))
    assert dashboard["uid"] and dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    exported = _exported_series()
    panels = dashboard["panels"]
    assert len(panels) >= 6 and len({p["id"] for p in panels}) == len(panels)
    for panel in panels:
        assert panel["type"] == "timeseries" and panel["targets"], panel["title"]
        for target in panel["targets"]:
            used = set(re.findall(r"\baltm_[a-z_]+", target["expr"]))
            assert used and used <= exported, (panel["title"], used - exported)


def test_prometheus_scrapes_the_workers_and_the_retrieval_service(compose: dict[str, object]) -> None:
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text(encoding="utf-8"))
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["altm-worker"]["dns_sd_configs"][0]["port"] == Settings().worker_metrics_port
    assert jobs["altm-retrieval"]["static_configs"][0]["targets"] == ["retrieval:8420"]
    services = compose["services"]
    assert isinstance(services, dict) and "prometheus" in services
    host = ipaddress.ip_address(services["worker"]["environment"]["ALTM_WORKER_METRICS_HOST"])
    assert host.is_unspecified  # inside the compose network, where Prometheus scrapes it; not published
    mounted = services["prometheus"]["volumes"][0].split(":")[0]
    assert (COMPOSE.parent / mounted).resolve() == (DEPLOY / "prometheus.yml").resolve()
