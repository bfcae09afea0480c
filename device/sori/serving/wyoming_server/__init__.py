"""Sori as a Wyoming server: Home Assistant's voice pipeline (and any Wyoming client) can
use Sori's speech-to-text, preset intent recognition, voice and, where a detector is
given, wake-phrase detection.

    describe                                  → info
    transcribe, audio-start, audio-chunk..., audio-stop → transcript
    recognize                                 → intent | not-recognized
    synthesize                                → audio-start, audio-chunk..., audio-stop
    detect, audio-start, audio-chunk..., audio-stop     → detection... | not-detected
    ping                                      → pong

The models are loaded once per server (`services.load_services`, through `sori.assemble`) and
shared by every connection; each model is used by one connection at a time (a lock per
model), one call at a time, so connections interleave. Nothing here acts on the world:
`recognize` answers with the intent and slots and Home Assistant decides what to do.
The protocol has no authentication: anyone who can reach the port can use these services.

- `services`: the models loaded once, and the `info` that describes them.
- `wire`: reading events (a malformed one is an error, not the end) and the client's audio.
- `handler`: one connection: events in, answers out.
- `announce`: the zeroconf record Home Assistant discovers.
- `server`: the listening server, `sori wyoming`, and the server beside `sori run`.
"""

from sori.serving.wyoming_server.announce import SERVICE_TYPE, announce_name, service_info
from sori.serving.wyoming_server.server import (
    WyomingServer,
    check_uri,
    check_wyoming,
    serve,
    serve_beside,
)
from sori.serving.wyoming_server.services import Services, describe, load_services, require_wyoming

__all__ = [
    "SERVICE_TYPE",
    "Services",
    "WyomingServer",
    "announce_name",
    "check_uri",
    "check_wyoming",
    "describe",
    "load_services",
    "require_wyoming",
    "serve",
    "serve_beside",
    "service_info",
]
