"""app.calc.messages: a Message is its English text, and says itself again in another language."""

from __future__ import annotations

import copy

import pytest
from pydantic import ValidationError

from app.calc.messages import Message, sentence, words_of
from app.calc.training_query import TrainingQuery

FRENCH = {
    "tp (%(tp)s) must divide the %(heads)s attention heads": (
        "tp (%(tp)s) doit diviser les %(heads)s têtes d'attention"
    ),
    "a custom model needs %(fields)s": "un modèle personnalisé demande %(fields)s",
    "Layers L": "Couches L",
}


def french(template: str) -> str:
    return FRENCH.get(template, template)


def test_a_message_is_its_english_text() -> None:
    message = Message("tp (%(tp)s) must divide the %(heads)s attention heads", tp=3, heads=64)
    assert message == "tp (3) must divide the 64 attention heads"
    assert str(message) == message.render(str) and f"{message}!" == f"{message!s}!"
    assert message.render(french) == "tp (3) doit diviser les 64 têtes d'attention"


def test_a_template_without_values_is_no_format_string() -> None:
    assert Message("100% of peak") == "100% of peak"
    assert Message("100% of peak").render(french) == "100% of peak"


def test_messages_inside_a_message_are_said_in_its_language() -> None:
    fields = Message.join(", ", [Message("Layers L"), Message("FFN size")])
    message = Message("a custom model needs %(fields)s", fields=fields)
    assert message == "a custom model needs Layers L, FFN size"
    assert message.render(french) == "un modèle personnalisé demande Couches L, FFN size"
    both = Message.join("; ", [message, "plain words"])
    assert both == "a custom model needs Layers L, FFN size; plain words"


def test_a_sentence_opens_with_a_capital_in_every_language_that_has_one() -> None:
    opened = sentence(
        Message("tp (%(tp)s) must divide the %(heads)s attention heads", tp=3, heads=8)
    )
    assert opened == "Tp (3) must divide the 8 attention heads" == opened.render(str)
    assert opened.render(french) == "Tp (3) doit diviser les 8 têtes d'attention"
    assert sentence("plain words") == "Plain words"


def test_a_copy_keeps_the_template() -> None:
    opened = sentence(
        Message("tp (%(tp)s) must divide the %(heads)s attention heads", tp=3, heads=8)
    )
    copied = copy.deepcopy(opened)
    assert copied == opened and copied.render(french) == opened.render(french)


def test_a_query_raises_its_rule_as_a_message() -> None:
    with pytest.raises(ValidationError) as caught:
        TrainingQuery(preset="custom", layers=4)
    words = words_of(caught.value.errors()[0]["ctx"]["error"])
    assert isinstance(words, Message)
    assert words == "a custom model needs Hidden size h, Attention heads a, FFN size, Vocabulary V"
    assert words_of(ZeroDivisionError("float division by zero")) == "float division by zero"
