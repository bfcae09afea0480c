"""The SoriError tree. Every error says what happened and what to do about it.

SoriError
├── ConfigError        a config file is missing, unreadable or invalid
├── PackError          an intent pack or fixture file is malformed
├── AudioError         audio input cannot be read or converted
├── ModelError         a model is missing or cannot be loaded
├── BackendError       a backend (LLM server, broker, TTS) failed at run time
├── DependencyError    an optional library or system package is not installed
└── BundleError        an offline bundle is damaged, incomplete or cannot be built
"""

from __future__ import annotations


class SoriError(Exception):
    """Base of every error Sori raises on purpose; the message is meant for people."""


class ConfigError(SoriError):
    """A configuration file is missing, unreadable or has an invalid key."""


class PackError(SoriError):
    """An intent pack or a fixture file is malformed."""


class AudioError(SoriError):
    """Audio input cannot be read, decoded or converted."""


class ModelError(SoriError):
    """A model file is missing or cannot be loaded."""


class BackendError(SoriError):
    """A backend failed while running (server down, broker refused, ...)."""


class DependencyError(SoriError):
    """An optional Python package or system library is missing."""


class BundleError(SoriError):
    """An offline bundle (`sori bundle`) is damaged or incomplete, or cannot be built."""
