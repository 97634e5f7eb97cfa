"""Building workflows in Python: a fluent builder whose spec is exactly the dict form's.

A workflow is data (`WorkflowSpec`), hashed to a version. `Workflow` builds one step by step;
`ref` and `lit` make its values and the condition helpers its conditions. The builder sets only
the fields it is given, so the spec it builds equals the one its dict or JSON form validates to,
with the same version. Specs hold names, never callables: a function given to `Workflow.tool`
is named in the spec by a `CodeTool` and kept in `Workflow.tools`, to pass to the worker. The
spec's own classes (`ToolStep`, `Ref`, `Compare`, ...) are here too, for reading a spec or
writing one as data; `WorkflowSpec` itself is at the top of `psych_runtime`. So are the
functions that run and read workflows (`dispatch`, `send_event`, `answer`, `continue_run`,
`replay`, `workflow_view`); the step tree `workflow_view` returns (`WorkflowView`) is here.

    from psych_runtime.workflows import Workflow, gt, ref

    flow = Workflow("onboard")
    flow.tool("create", create_user, email=ref("input.email")).retry(attempts=3)
    with flow.foreach("orders", ref("steps.create.output.orders"), concurrency=2) as body:
        body.tool("charge", charge, order=ref("item")).when(gt(ref("item.cents"), 0))
    spec = flow.build()
    runtime = Runtime(model=..., tools=flow.tools)
"""

from psych_core import (
    AgentStep,
    AllOf,
    AnyOf,
    Arr,
    BranchStep,
    Case,
    Compare,
    CompareOp,
    Condition,
    Exists,
    Expr,
    FailureKind,
    ForeachStep,
    HumanStep,
    ItemStatus,
    ItemView,
    Lit,
    LoopStep,
    MapStep,
    Not,
    Obj,
    ParallelStep,
    Ref,
    Retry,
    SetStateStep,
    SleepStep,
    Step,
    StepTool,
    StepTry,
    StepView,
    StepViewStatus,
    ToolStep,
    Truthy,
    TryOutcome,
    WaitStep,
    WorkflowStep,
    WorkflowView,
)
from psych_runtime import _claim
from psych_runtime._surface._workflow_builder import (
    AddSteps,
    BodyHandle,
    BranchHandle,
    LeafHandle,
    ParallelHandle,
    Schema,
    StepHandle,
    Steps,
    ToolHandle,
    Workflow,
)
from psych_runtime._surface._workflow_expressions import (
    Value,
    all_of,
    any_of,
    contains,
    eq,
    exists,
    gt,
    gte,
    in_,
    lit,
    lt,
    lte,
    ne,
    not_,
    ref,
    truthy,
)

__all__ = [
    # the builder
    "Workflow",
    "Steps",
    "StepHandle",
    "LeafHandle",
    "ToolHandle",
    "ParallelHandle",
    "BranchHandle",
    "BodyHandle",
    "AddSteps",
    "Schema",
    # values
    "Value",
    "ref",
    "lit",
    # conditions
    "eq",
    "ne",
    "gt",
    "gte",
    "lt",
    "lte",
    "in_",
    "contains",
    "exists",
    "truthy",
    "all_of",
    "any_of",
    "not_",
    # reading a run's steps back (`workflow_view` itself is at the top)
    "WorkflowView",
    "StepView",
    "ItemView",
    "StepTry",
    "StepViewStatus",
    "ItemStatus",
    "TryOutcome",
    # the spec's classes (the dict form; `WorkflowSpec` is at the top of psych_runtime)
    "Step",
    "ToolStep",
    "StepTool",
    "AgentStep",
    "WorkflowStep",
    "ParallelStep",
    "BranchStep",
    "Case",
    "ForeachStep",
    "LoopStep",
    "MapStep",
    "SetStateStep",
    "SleepStep",
    "WaitStep",
    "HumanStep",
    "Retry",
    "FailureKind",
    "Expr",
    "Ref",
    "Lit",
    "Obj",
    "Arr",
    "Condition",
    "CompareOp",
    "Compare",
    "Exists",
    "Truthy",
    "AllOf",
    "AnyOf",
    "Not",
]

_claim.claim_exports(__name__, globals(), __all__)
