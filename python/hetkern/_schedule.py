"""Schedules: how an operator runs, as a value with a stable text form."""
from . import _hetkern
from ._errors import Error


class Schedule:
    """A strategy and its parameters, e.g. ``hetkern.Schedule("scan.tiled(tile=64)")``.

    The text is checked against the grammar here; whether the strategy exists and suits the
    operator and shape is checked by the call that receives it (hetkern.Error, code
    ``invalid_schedule``). Parameters left out take values the library derives from the shape
    and the machine. ``str()`` is the canonical text, ``repr()`` rebuilds the object;
    ``strategy`` is the name and ``params`` a dict (integers as int).

    >>> import hetkern
    >>> s = hetkern.Schedule("scan.tiled( tile = 64 )")
    >>> str(s), s.strategy, s.params
    ('scan.tiled(tile=64)', 'scan.tiled', {'tile': 64})
    >>> s
    hetkern.Schedule('scan.tiled(tile=64)')
    """

    __slots__ = ("_text", "strategy", "params")

    def __init__(self, text):
        text = str(text)
        rule = _unreadable(text)
        if rule:
            raise Error(f"schedule: {text!r}: {rule}", "invalid_schedule", "schedule", text, rule)
        self._text, self.strategy, params = _hetkern.schedule_parse(text)
        self.params = {k: int(v) if v.isdigit() else v for k, v in params}

    def __str__(self):
        return self._text

    def __repr__(self):
        return f"hetkern.Schedule({self._text!r})"

    def __eq__(self, other):
        return isinstance(other, Schedule) and self._text == other._text

    def __hash__(self):
        return hash(self._text)


def _unreadable(text):
    """Why the library cannot read `text` as it stands, or None."""
    if "\0" in text:
        return "holds a NUL character"
    try:
        text.encode()
    except UnicodeEncodeError:
        return "is not valid Unicode (a lone surrogate)"
    return None


def schedule_text(schedule, op):
    """A call's ``schedule=`` as the text the library reads, None for none."""
    if schedule is None:
        return None
    text = str(schedule)
    rule = _unreadable(text)
    if rule:
        rule = f"{text!r} {rule}"
        raise Error(f"{op}: schedule: {rule}", "invalid_schedule", op, "schedule", rule)
    return text
