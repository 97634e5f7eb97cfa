"""The code-tool executor: a Python function, described to the model from its signature."""

from __future__ import annotations

import asyncio
import inspect
import json
import types
import typing
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pydantic
from pydantic import JsonValue
from pydantic_core import PydanticSerializationError, to_jsonable_python

from psych_core import SpecError, ToolDefinition, ToolFailureReason
from psych_runtime.tools._context import ToolContext


def _parameter_hints(name: str, function: Callable[..., Any]) -> dict[str, Any]:
    # Only the parameters describe the tool: a return annotation naming a class the function's
    # module cannot see (a class local to a test, say) must not stop the tool being described.
    annotations = dict(getattr(function, "__annotations__", {}))
    annotations.pop("return", None)
    holder = types.SimpleNamespace(__annotations__=annotations)
    try:
        return typing.get_type_hints(
            holder, globalns=getattr(function, "__globals__", {}), include_extras=True
        )
    except Exception as exc:
        raise SpecError(f"tool {name!r}: cannot read its parameters' type hints ({exc})") from exc


class InvalidArguments(ValueError):
    """The model's arguments do not parse or do not fit the function's signature."""


class ToolRaised(Exception):
    """The call failed (the tool raised, a server answered 404, a program exited 1...).

    The message is what the model and the log are told; `reason` is the recorded
    `ToolFailureReason` (``error``, or ``timeout`` for a safe tool that ran out of time).
    """

    def __init__(self, message: str, *, reason: ToolFailureReason = "error") -> None:
        self.reason: ToolFailureReason = reason
        super().__init__(message)


class ToolOutcomeUnknown(Exception):
    """The call's effect may or may not have happened (a request to an unsafe tool that timed
    out after it was sent, say): the call is settled ``unknown`` with this message as its
    note, and the model is told to check before calling again."""


@dataclass(frozen=True, slots=True)
class CodeFunction:
    """A Python function (sync or async) ready to be offered to a model and called.

    Build one with `CodeFunction.of`. The JSON schema comes from the signature and type hints
    (through pydantic); the description from the docstring. A parameter annotated
    `ToolContext` receives the call's context and is not shown to the model.
    """

    name: str
    description: str
    function: Callable[..., Any]
    arguments_model: type[pydantic.BaseModel]
    parameters: dict[str, JsonValue]
    context_parameter: str | None
    is_async: bool

    @classmethod
    def of(cls, function: Callable[..., Any], *, name: str | None = None) -> CodeFunction:
        """Describe `function`; `name` defaults to its ``__name__``."""
        tool_name = name or getattr(function, "__name__", "")
        if not tool_name or tool_name == "<lambda>":
            raise SpecError(f"give tool {function!r} a name: it has no usable __name__")
        hints = _parameter_hints(tool_name, function)
        fields: dict[str, Any] = {}
        context_parameter: str | None = None
        for parameter in inspect.signature(function).parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise SpecError(f"tool {tool_name!r}: *args and **kwargs cannot be described")
            annotation = hints.get(parameter.name, Any)
            if annotation is ToolContext:
                context_parameter = parameter.name
                continue
            default = ... if parameter.default is parameter.empty else parameter.default
            fields[parameter.name] = (annotation, default)
        model = pydantic.create_model(
            f"{tool_name}_arguments",
            __config__=pydantic.ConfigDict(extra="forbid"),
            **fields,
        )
        parameters: dict[str, JsonValue] = model.model_json_schema()
        parameters.pop("title", None)
        return cls(
            name=tool_name,
            description=inspect.getdoc(function) or "",
            function=function,
            arguments_model=model,
            parameters=parameters,
            context_parameter=context_parameter,
            is_async=inspect.iscoroutinefunction(function),
        )

    def definition(self, description: str | None = None) -> ToolDefinition:
        """How the model is offered this tool (the schema is built once, when described)."""
        return ToolDefinition(self.name, description or self.description, self.parameters)

    def validate(self, arguments: str) -> dict[str, Any]:
        """Parse and validate the model's argument text; `InvalidArguments` says what is wrong.

        Text that is a valid JSON object of valid arguments goes into the model in one pass
        (pydantic parses it as it validates), unless a parameter holds a `Decimal`, which
        that pass makes from the number's text where `json` made a float first; anything
        else takes the path below, which says what is wrong with it.
        """
        if _one_pass(self.arguments_model):
            try:
                return dict(self.arguments_model.model_validate_json(arguments).__dict__)
            except pydantic.ValidationError:
                pass
        try:
            raw = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            raise InvalidArguments(f"arguments are not valid JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise InvalidArguments(f"arguments must be a JSON object, got {type(raw).__name__}")
        try:
            validated = self.arguments_model.model_validate(raw)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'arguments'}: {error['msg']}"
                for error in exc.errors()
            )
            raise InvalidArguments(problems) from None
        return {name: getattr(validated, name) for name in type(validated).model_fields}

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> object:
        """Call the function; sync functions run in a thread so they cannot block the loop.

        Returns what the function returned (`json_result` makes it JSON when it is recorded);
        raises `ToolRaised` with a readable message when the function raises.
        """
        kwargs = dict(arguments)
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context
        try:
            if self.is_async:
                result: object = await self.function(**kwargs)
            else:
                result = await asyncio.to_thread(self.function, **kwargs)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise ToolRaised(f"{type(exc).__name__}: {exc}") from exc
        return result


_ONE_PASS: weakref.WeakKeyDictionary[type[pydantic.BaseModel], bool] = weakref.WeakKeyDictionary()


def _one_pass(model: type[pydantic.BaseModel]) -> bool:
    """Whether `model` validates JSON text in one pass to what parsing it with `json` first
    gives: every type does but `Decimal` (from a JSON number, the one pass keeps the text's
    digits, ``2.0`` giving ``Decimal('2')`` where the float gave ``Decimal('2.0')``)."""
    known = _ONE_PASS.get(model)
    if known is None:
        known = _ONE_PASS[model] = not _holds_decimal(model.__pydantic_core_schema__)
    return known


def _holds_decimal(schema: object) -> bool:
    if isinstance(schema, dict):
        return schema.get("type") == "decimal" or any(map(_holds_decimal, schema.values()))
    if isinstance(schema, list | tuple):
        return any(map(_holds_decimal, schema))
    return False


def json_result(tool: str, result: object) -> JsonValue:
    """A tool's result as a JSON value (dicts with string keys, lists, strings, numbers,
    booleans, None): models, dataclasses, tuples, dates and the like converted as pydantic
    serialises them. Every tool's result goes through this once, before it is recorded, and
    is recorded without being validated again (`psych_core.finished_call`).

    Raises `ToolRaised` when the value cannot be made JSON.
    """
    try:
        jsonable: JsonValue = to_jsonable_python(result)
    except PydanticSerializationError as exc:
        raise ToolRaised(
            f"tool {tool!r} returned a {type(result).__name__}, which is not "
            f"JSON-serialisable: {exc}"
        ) from exc
    return jsonable
