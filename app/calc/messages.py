"""Words app.calc puts together at run time that a page shows: a refused form, a refused layout.

app.calc stays pure (no Babel, no request, no language), yet a Chinese page must not show its
messages in English. A Message is the English sentence itself, a str, so the JSON API, the
command line and the tests read it as they always have; it also keeps the template it was
filled from and the values, so that a page can say it again in the reader's language:
gettext(template) % values (app.i18n.say). N_ marks a template for `scripts/i18n extract`:
it is one of the names pybabel looks for by default, and it changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


def N_(template: str) -> str:  # noqa: N802 (the name pybabel looks for by default)
    return template


class Message(str):
    """`template % values` in English; a value that is a Message is said in the same language
    as the template around it. A template with no values is not a format string."""

    template: str
    values: dict[str, object]
    capital = False  # set by sentence()

    def __new__(cls, template: str, /, **values: object) -> Message:
        message = super().__new__(cls, _fill(template, values, str))
        message.template, message.values = template, values
        return message

    @classmethod
    def join(cls, separator: str, parts: Iterable[str]) -> Message:
        """The parts one after another ("A; B", "Layers L, Hidden size h"), each said in its
        own words. The template holds placeholders only; no catalogue has it, so every
        language keeps it as it is."""
        values = {f"part{i}": part for i, part in enumerate(parts)}
        return cls(separator.join(f"%({name})s" for name in values), **values)

    def sentence(self) -> Message:
        """The message opening a sentence, as a form's messages do: an inner message of
        app.calc starts with a small letter ("tp (3) must divide ..."). In every language:
        str.upper leaves Chinese as it is."""
        opened = str.__new__(Message, self[:1].upper() + self[1:])
        opened.__dict__.update(self.__dict__, capital=True)
        return opened

    def render(self, gettext: Callable[[str], str]) -> str:
        """The message in the language of `gettext` (str: English)."""
        text = _fill(gettext(self.template) if self.template else "", self.values, gettext)
        return text[:1].upper() + text[1:] if self.capital else text


def _fill(template: str, values: dict[str, object], gettext: Callable[[str], str]) -> str:
    if not values:
        return template
    said = {k: v.render(gettext) if isinstance(v, Message) else v for k, v in values.items()}
    return template % said


def words_of(exc: BaseException) -> str:
    """What an exception says: the Message app.calc raised it with, or its text (Python's own
    words for an ArithmeticError, which stay as they are)."""
    if len(exc.args) == 1 and isinstance(exc.args[0], Message):
        return exc.args[0]
    return str(exc)


def sentence(text: str) -> str:
    """`text` opening a sentence of a form's message, still translatable if it was a Message."""
    if isinstance(text, Message):
        return text.sentence()
    return text[:1].upper() + text[1:]
