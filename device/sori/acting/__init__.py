"""Acting: the handlers that change the world (`actions/`) and the state sources that
only read it (`state/`), with their MQTT and Home Assistant connections."""
