"""What every test layer shares: a test module that needs a distribution this environment does
not have is skipped, saying which and how to install it.

In the workspace every distribution and SDK is installed, so nothing is skipped here. The
install flavours (`nox -s flavours`: the runtime alone, with one adapter, everything) run the
same tests in environments that lack some; a module whose import fails for one of them is a
skip with that reason, never an error, and never a silent omission.
"""

from __future__ import annotations

from pathlib import Path

import pytest

OPTIONAL = {
    "psych_store_sqlite": "psych-runtime[sqlite]",
    "psych_store_postgres": "psych-runtime[postgres]",
    "psych_store_mysql": "psych-runtime[mysql]",
    "psych_store_dynamodb": "psych-runtime[dynamodb]",
    "psych_blob_s3": "psych-runtime[s3]",
    "psych_sandbox_namespaces": "psych-runtime[namespaces]",
    "psych_sandbox_docker": "psych-runtime[docker]",
    "psych_telemetry_otel": "psych-runtime[otel]",
    "psych_cli": "psych-cli",
    "typer": "psych-cli",
    "rich": "psych-cli",
    "mcp": "psych-runtime[mcp]",
    "httpx2": "psych-runtime[mcp] (the MCP SDK's HTTP client)",
    "mcp_server_time": "mcp-server-time (the MCP tests' third-party server)",
    "a2a": "psych-runtime[a2a]",
    "opentelemetry": "opentelemetry-sdk (with psych-runtime[otel])",
    "asyncpg": "psych-runtime[postgres]",
    "aiomysql": "psych-runtime[mysql]",
    "pymysql": "psych-runtime[mysql]",
    "aioboto3": "psych-runtime[dynamodb] or [s3]",
    "aiobotocore": "psych-runtime[dynamodb] or [s3]",
    "botocore": "psych-runtime[dynamodb] or [s3]",
    "docker": "psych-runtime[docker]",
    "fastapi": "fastapi (the dev group)",
    "uvicorn": "uvicorn (the dev group)",
    "starlette": "fastapi (the dev group)",
    "yaml": "pyyaml (the dev group)",
    "griffe": "griffe (the dev group)",
    "moto": "moto (the dev group)",
    "genai_prices": "genai-prices (the dev group)",
}
"""Top-level modules a test may need that an install flavour may lack, and what installs each."""


class _Module(pytest.Module):
    def _getobj(self) -> object:
        try:
            return super()._getobj()  # type: ignore[no-untyped-call]  # pytest leaves it untyped
        except self.CollectError as error:
            missing = error.__cause__
            if isinstance(missing, ModuleNotFoundError) and missing.name is not None:
                top = missing.name.split(".", 1)[0]
                if top in OPTIONAL:
                    where = self.path.name
                    reason = f"{where} needs {top}, not installed here: install {OPTIONAL[top]}"
                    raise pytest.skip.Exception(reason, allow_module_level=True) from None
            raise


def pytest_pycollect_makemodule(
    module_path: Path, parent: pytest.Collector
) -> pytest.Module | None:
    """Test modules collected so that a missing optional distribution skips them (above)."""
    if module_path.name == "conftest.py":
        return None
    return _Module.from_parent(parent, path=module_path)
