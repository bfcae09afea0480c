"""Actions: the only stage that changes the world. One module per kind of handler."""

from sori.acting.actions.base import Command, Handler, Result
from sori.acting.actions.local import LOCAL_INTENTS, LocalHandler
from sori.acting.actions.registry import ActionRegistry, Route, resolve
from sori.acting.actions.timers import Timers

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
