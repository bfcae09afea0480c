from broker import mosquitto, subscriber  # noqa: F401
