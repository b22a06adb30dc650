"""docker-compose.yml is for users (no Docker engine runs here): it is validated by parsing it."""

from __future__ import annotations

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
    settings = resolve(Settings(data_dir=Path("/data"), **{k.removeprefix("ALTM_").lower(): v for k, v in env.items()}))
    assert settings.bus == "kafka://kafka:9092" and settings.vectors == "http://qdrant:6333"
    assert settings.partitions == 8


def test_published_ports_bind_to_loopback(compose: dict[str, object]) -> None:
    services = compose["services"]
    assert isinstance(services, dict)
    for name, service in services.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)
