"""Exceptions of shoal's C++ engine, one per status code (docs/errors.md), named as TF's tf.errors.

A failed call raises the class of its code with the engine's message, which names the file, line,
key or peer at fault. Two are also Python's own: ``InvalidArgumentError`` is a ``ValueError`` and
``NotFoundError`` a ``FileNotFoundError``, so ``except ValueError`` works as one would expect.
Every class derives from ``ShoalError`` (TF's name ``OpError`` is an alias).
"""


class ShoalError(Exception):
    """An error of shoal's engine; ``code`` is the status code (absl::StatusCode) it came with."""

    code = 2  # UNKNOWN


OpError = ShoalError


class CancelledError(ShoalError):
    code = 1


class UnknownError(ShoalError):
    code = 2


class InvalidArgumentError(ShoalError, ValueError):
    code = 3


class DeadlineExceededError(ShoalError):
    code = 4


class NotFoundError(ShoalError, FileNotFoundError):
    code = 5


class AlreadyExistsError(ShoalError):
    code = 6


class PermissionDeniedError(ShoalError, PermissionError):
    code = 7


class ResourceExhaustedError(ShoalError):
    code = 8


class FailedPreconditionError(ShoalError):
    code = 9


class AbortedError(ShoalError):
    code = 10


class OutOfRangeError(ShoalError):
    code = 11


class UnimplementedError(ShoalError, NotImplementedError):
    code = 12


class InternalError(ShoalError):
    code = 13


class UnavailableError(ShoalError):
    code = 14


class DataLossError(ShoalError):
    code = 15


class UnauthenticatedError(ShoalError):
    code = 16


_BY_CODE = {cls.code: cls for cls in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError,
    AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError, FailedPreconditionError,
    AbortedError, OutOfRangeError, UnimplementedError, InternalError, UnavailableError,
    DataLossError, UnauthenticatedError)}


def exception_class(code):
    """The class raised for status code ``code`` (the engine calls it)."""
    return _BY_CODE.get(code, UnknownError)
