"""Actions: the only stage that changes the world. One module per kind of handler."""

from sori.actions.base import Command, Handler, Result
from sori.actions.local import LOCAL_INTENTS, LocalHandler
from sori.actions.registry import ActionRegistry, Route, resolve
from sori.actions.timers import Timers

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
