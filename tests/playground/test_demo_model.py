"""The demo model decides from the request alone, exactly as the playground's documentation says,
and streams its text word by word."""

from __future__ import annotations

import asyncio
import itertools
import json

from psych_playground.demo_model import (
    QUESTION,
    THINKING_WORDS,
    DemoModel,
    first_json_object,
    next_turn,
    placeholder_arguments,
)
from psych_playground.demo_tools import DEMO_TOOLS
from psych_runtime import ModelRef
from psych_runtime.ports import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

TOOLS = tuple(ToolDefinition(tool.name, tool.description, tool.parameters) for tool in DEMO_TOOLS)
ASK = ToolDefinition("ask_user", "Ask the user.", {"type": "object", "properties": {}})


def _called(name: str, arguments: object, index: int) -> list[Message]:
    """The assistant's call of `name` and its result, as the conversation holds them."""
    call_id = f"{index}.0"
    return [
        AssistantMessage(
            None, (ToolCall(call_id=call_id, name=name, arguments=json.dumps(arguments)),)
        ),
        ToolResultMessage(call_id=call_id, name=name, content=json.dumps({"ok": index})),
    ]


def test_plain_text_is_repeated_back() -> None:
    turn = next_turn([UserMessage("hello there")], TOOLS)
    assert (turn.text, turn.tool) == ("You said: hello there", None)


def test_a_named_tool_is_called_with_the_first_json_object_in_the_message() -> None:
    text = 'please refund {"order_id": "A1", "amount": 500} and then {"other": 1}'
    turn = next_turn([UserMessage(text)], TOOLS)
    assert (turn.tool, turn.arguments) == ("refund", {"order_id": "A1", "amount": 500})


def test_the_first_tool_named_wins_and_no_json_means_no_arguments() -> None:
    turn = next_turn([UserMessage("fetch_page, then lookup_order")], TOOLS)
    assert (turn.tool, turn.arguments) == ("fetch_page", {})
    # A tool's name inside another word is not a mention of it.
    assert next_turn([UserMessage("my_lookup_order_x")], TOOLS).tool is None


def test_a_tool_not_offered_is_not_called() -> None:
    assert next_turn([UserMessage("lookup_order {}")], ()).text == "You said: lookup_order {}"


def test_after_a_result_the_model_says_what_the_tool_returned_cut_at_500() -> None:
    long = "x" * 800
    messages: list[Message] = [
        UserMessage("fetch_page"),
        AssistantMessage(None, (ToolCall(call_id="2.0", name="fetch_page", arguments="{}"),)),
        ToolResultMessage(call_id="2.0", name="fetch_page", content=long),
    ]
    assert next_turn(messages, TOOLS).text == f"fetch_page returned: {'x' * 500}"


def test_repeat_calls_the_tool_once_per_turn_then_says_how_many_times() -> None:
    messages: list[Message] = [UserMessage("repeat 3 lookup_order")]
    for index in range(3):
        turn = next_turn(messages, TOOLS)
        assert turn.tool == "lookup_order"
        assert turn.arguments == {"order_id": "demo"}  # a value of each required parameter's type
        messages += _called("lookup_order", turn.arguments, index)
    assert next_turn(messages, TOOLS).text == "Called lookup_order 3 times."


def test_repeat_takes_the_arguments_written_in_the_message() -> None:
    turn = next_turn([UserMessage('repeat 2 refund {"order_id": "B2", "amount": 5}')], TOOLS)
    assert (turn.tool, turn.arguments) == ("refund", {"order_id": "B2", "amount": 5})


def test_a_new_user_message_ends_a_repeat() -> None:
    messages: list[Message] = [UserMessage("repeat 5 lookup_order")]
    messages += _called("lookup_order", {}, 0)
    messages.append(UserMessage("stop now"))
    assert next_turn(messages, TOOLS).text == "You said: stop now"


def test_ask_me_asks_a_yes_no_question_only_when_the_spec_allows_it() -> None:
    turn = next_turn([UserMessage("please ask me something")], (*TOOLS, ASK))
    assert turn.tool == "ask_user"
    assert turn.arguments == {"question": QUESTION, "options": ["yes", "no"]}
    assert next_turn([UserMessage("please ask me something")], TOOLS).tool is None


def test_the_last_user_message_decides_in_a_continued_conversation() -> None:
    messages: list[Message] = [
        UserMessage("lookup_order"),
        *_called("lookup_order", {}, 2),
        AssistantMessage("lookup_order returned: ..."),
        UserMessage("thanks"),
    ]
    assert next_turn(messages, TOOLS).text == "You said: thanks"


def test_json_objects_and_placeholders() -> None:
    assert first_json_object('a {broken, then {"k": [1, {"n": 2}]} end') == {"k": [1, {"n": 2}]}
    assert first_json_object("[1, 2] and no object") is None
    wait = next(tool for tool in TOOLS if tool.name == "wait_a_bit")
    assert placeholder_arguments(wait) == {"seconds": 0}


async def test_the_client_streams_its_text_word_by_word_and_estimates_usage() -> None:
    pieces: list[tuple[str, int]] = []
    request = ModelRequest(
        run_id="r1",
        model=ModelRef(model="any"),
        instructions="",
        messages=(UserMessage("good morning to you"),),
        tools=TOOLS,
    )
    response = await DemoModel(delay=0).complete(
        request, on_text=lambda text, offset: pieces.append((text, offset))
    )
    assert response.text == "You said: good morning to you"
    assert "".join(text for text, _ in pieces) == response.text
    assert [offset for _, offset in pieces] == [0, 4, 10, 15, 23, 26]
    assert response.usage_source == "estimated"
    assert response.usage is not None
    assert response.usage.output == len(response.text) // 4
    assert response.tool_calls == ()
    assert response.finish_reason == "stop"


async def test_the_first_word_comes_after_a_pause_as_long_as_several_words() -> None:
    # A chat opens the run's live text stream just after sending: the pause lets it listen
    # before the first word, as a real model's time to its first token does.
    loop = asyncio.get_running_loop()
    delay = 0.02
    times: list[float] = []
    request = ModelRequest(
        run_id="r1",
        model=ModelRef(model="any"),
        instructions="",
        messages=(UserMessage("hello"),),
        tools=TOOLS,
    )
    started = loop.time()
    await DemoModel(delay=delay).complete(
        request, on_text=lambda text, offset: times.append(loop.time())
    )
    assert times[0] - started >= THINKING_WORDS * delay * 0.9
    assert all(later - earlier >= delay * 0.9 for earlier, later in itertools.pairwise(times))


async def test_the_client_answers_a_tool_call_with_its_arguments_as_json() -> None:
    request = ModelRequest(
        run_id="r1",
        model=ModelRef(model="any"),
        instructions="",
        messages=(UserMessage('lookup_order {"order_id": "Z9"}'),),
        tools=TOOLS,
    )
    response = await DemoModel(delay=0).complete(request)
    [call] = response.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("lookup_order", {"order_id": "Z9"})
    assert (response.text, response.finish_reason) == (None, "tool_calls")
