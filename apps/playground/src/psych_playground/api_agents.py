"""/api/agents: the catalog of published specs, agents and workflows alike.

GET  /api/agents                      every name, its kind, latest version and count
GET  /api/agents/schema?kind=agent    the JSON schema of an AgentSpec (or WorkflowSpec)
GET  /api/agents/examples             the example agent and workflow, to start from
POST /api/agents                      publish {"kind", "spec"}: 201 new, 200 already there
GET  /api/agents/{name}               its versions, newest first, each with its spec
GET  /api/agents/{name}/diff?from=V1&to=V2   what changed between two versions
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Response
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from psych_playground.catalog import SpecKind, canonical_data, publish, summaries
from psych_playground.deps import Ground, now
from psych_playground.examples import ORDER_CHECK, SUPPORT
from psych_playground.spec_check import SpecProblem, SpecRejected, read_spec
from psych_playground.spec_diff import Change, diff_specs
from psych_runtime import AgentSpec, WorkflowSpec

router = APIRouter(prefix="/api/agents", tags=["agents"])

RESERVED = frozenset({"schema", "examples"})
"""Names that are paths of their own under /api/agents."""


class AgentSummary(BaseModel):
    name: str
    kind: SpecKind
    latest_version: str
    versions: int
    published_at: dt.datetime


class PublishRequest(BaseModel):
    kind: SpecKind
    spec: JsonValue


class Published(BaseModel):
    name: str
    kind: SpecKind
    version: str
    published_at: dt.datetime
    created: bool


class Version(BaseModel):
    version: str
    published_at: dt.datetime
    spec: JsonValue


class History(BaseModel):
    name: str
    kind: SpecKind
    versions: list[Version]


class Diff(BaseModel):
    model_config = ConfigDict(validate_by_name=True, serialize_by_alias=True)

    from_: str = Field(alias="from")
    to: str
    changes: list[Change]


@router.get("")
async def list_agents(ground: Ground) -> list[AgentSummary]:
    """Every published name, sorted by name."""
    found = summaries(await ground.catalog.entries(ground.settings.tenant))
    return [
        AgentSummary(
            name=s.name,
            kind=s.kind,
            latest_version=s.latest_version,
            versions=s.versions,
            published_at=s.published_at,
        )
        for s in found
    ]


@router.get("/schema")
async def spec_schema(kind: Literal["agent", "workflow"] = "agent") -> dict[str, JsonValue]:
    """The JSON schema a spec of `kind` validates against (for the editor)."""
    model: type[AgentSpec] | type[WorkflowSpec] = AgentSpec if kind == "agent" else WorkflowSpec
    schema: dict[str, JsonValue] = model.model_json_schema()
    return schema


@router.get("/examples")
async def examples() -> dict[str, JsonValue]:
    """The example agent and workflow, as JSON: starting points for the editor."""
    return {"agent": canonical_data(SUPPORT), "workflow": canonical_data(ORDER_CHECK)}


@router.post("", status_code=201, responses={200: {"model": Published}})
async def publish_spec(body: PublishRequest, ground: Ground, response: Response) -> Published:
    """Publish a spec under its name. Its version is the hash of its content, so publishing the
    same spec again changes nothing (200, ``created`` false). Problems come back as a list,
    each with `loc`, the path to the field in the spec (422, `SpecRejected`); nothing is kept
    then."""
    spec = read_spec(body.kind, body.spec)
    if spec.name in RESERVED:
        reserved = f"{spec.name!r} names a path of the API; give the {body.kind} another name"
        raise SpecRejected([SpecProblem(("name",), reserved, "value_error")])
    entry, created = await publish(ground.catalog, ground.settings.tenant, spec, now=now())
    if not created:
        response.status_code = 200
    return Published(
        name=entry.name,
        kind=entry.kind,
        version=entry.version,
        published_at=entry.published_at,
        created=created,
    )


@router.get("/{name}")
async def history(name: str, ground: Ground) -> History:
    """Every version of `name`, newest first."""
    entries = await ground.catalog.entries(ground.settings.tenant, name)
    if not entries:
        raise HTTPException(404, f"no agent or workflow named {name!r} is published")
    return History(
        name=name,
        kind=entries[0].kind,
        versions=[
            Version(version=e.version, published_at=e.published_at, spec=e.spec_data)
            for e in entries
        ],
    )


@router.get("/{name}/diff")
async def diff(
    name: str,
    ground: Ground,
    from_: Annotated[str, Query(alias="from")],
    to: Annotated[str, Query()],
) -> Diff:
    """What changed from version `from` of `name` to version `to`."""
    tenant = ground.settings.tenant
    found = [await ground.catalog.find(tenant, name, version) for version in (from_, to)]
    specs = []
    for version, entry in zip((from_, to), found, strict=True):
        if entry is None:
            raise HTTPException(404, f"{name!r} has no published version {version}")
        specs.append(entry.spec_data)
    return Diff(from_=from_, to=to, changes=diff_specs(*specs))
