"""Reading the home's state, never changing it: what a question is answered from.

- `base`: `Reading` (one device's state and attributes) and the `StateSource` protocol.
- `mqtt`: retained state topics (`sori/<domain>/<object_id>/state`), kept current.
- `home_assistant`: Home Assistant's REST states API (`GET /api/states/<entity_id>`).
- `routed`: each device read from the source of its handler (`[state] source = "auto"`).
- `targets`: the devices that can answer a question (temperature: climate and sensors).
"""

from sori.acting.state.base import Reading, StateSource
from sori.acting.state.targets import answering_devices

__all__ = ["Reading", "StateSource", "answering_devices"]
