"""Actions: the only stage that changes the world. One module per kind of handler."""

from sori.actions.base import Command, Handler, Result
from sori.actions.registry import ActionRegistry, Route, resolve
from sori.actions.timers import LOCAL_INTENTS, LocalHandler, Timers

__all__ = [
    "LOCAL_INTENTS",
    "ActionRegistry",
    "Command",
    "Handler",
    "LocalHandler",
    "Result",
    "Route",
    "Timers",
    "resolve",
]
