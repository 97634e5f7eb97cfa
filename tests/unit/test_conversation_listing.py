"""A conversation lists its messages from the newest listing it can extend, and every node,
old or new, still lists exactly its own messages."""

from __future__ import annotations

from psych_runtime.ports import AssistantMessage, Conversation, UserMessage


def grown(count: int) -> list[Conversation]:
    """Every node of a conversation of `count` messages, the empty one first."""
    nodes = [Conversation()]
    for index in range(count):
        message = UserMessage(f"m{index}") if index % 2 == 0 else AssistantMessage(f"a{index}")
        nodes.append(nodes[-1].add(message))
    return nodes


def texts(node: Conversation) -> list[str | None]:
    return [
        message.text if isinstance(message, UserMessage | AssistantMessage) else None
        for message in node.messages()
    ]


def test_each_node_lists_its_own_messages_in_any_order_of_asking() -> None:
    nodes = grown(50)
    expected = [f"m{i}" if i % 2 == 0 else f"a{i}" for i in range(50)]
    # Newest first, then an old node (its listing was handed on), then newer ones again.
    for index in (50, 10, 11, 49, 50, 0, 30, 25, 50):
        assert texts(nodes[index]) == expected[:index], index


def test_a_listing_is_extended_turn_by_turn_and_only_the_newest_is_kept() -> None:
    nodes = grown(6)
    for node in nodes[1:]:
        listed = node.messages()
        assert len(listed) == len(node)
    assert [node._listed is not None for node in nodes] == [False] * 6 + [True]


def test_a_listing_does_not_change_equality() -> None:
    listed, fresh = grown(5)[-1], grown(5)[-1]
    listed.messages()
    assert listed == fresh
    assert hash(listed) == hash(fresh)
