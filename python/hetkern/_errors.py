"""hetkern's exceptions."""


class Error(ValueError):
    """Input that hetkern refuses, raised before anything is written.

    The message reads ``"OPERATOR: SUBJECT: RULE"``, as the C++ library's hk::Error does, and the
    parts are attributes:

    - ``code``: what kind of rule was broken: ``"invalid_type"``, ``"invalid_shape"``,
      ``"invalid_stride"``, ``"invalid_parameter"``, ``"overlap"``, ``"invalid_schedule"``,
      ``"invalid_file"``;
    - ``op``: the operator or component that refused (``"cumulative_sum"``, ``"schedule"``);
    - ``subject``: the argument at fault (``"input"``, ``"axis"``, ``"a_scale"``);
    - ``rule``: the rule, in words.

    >>> import numpy as np, hetkern
    >>> try:
    ...     hetkern.cumsum(np.ones((2, 3), np.float32), axis=2)
    ... except hetkern.Error as e:
    ...     print(e.code, e.subject)
    invalid_parameter axis
    """

    def __init__(self, message, code="", op="", subject="", rule=""):
        super().__init__(message)
        self.code = code
        self.op = op
        self.subject = subject
        self.rule = rule


class DTypeError(Error, TypeError):
    """An element type hetkern does not compute with: both a hetkern.Error and a TypeError.

    >>> import numpy as np, hetkern
    >>> try:
    ...     hetkern.cumsum(np.ones(3, bool))
    ... except TypeError as e:
    ...     print(e.code)
    invalid_type
    """
