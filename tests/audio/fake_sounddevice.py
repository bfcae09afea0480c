"""Just enough of sounddevice for `MicSource`, standing in for the hardware: an input
device at 48 kHz that cannot do 16 kHz (so capture resamples, as on most USB devices),
whose stream delivers every block at once when it starts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class FakeInput:
    """`blocks` (float32, one per callback: frames × channels, or frames for one
    channel) from a device of `inputs` channels, found by any name in `names`; what
    `InputStream` was asked for is in `opened`."""

    class PortAudioError(Exception):
        pass

    def __init__(
        self,
        blocks: Sequence[np.ndarray],
        inputs: int = 1,
        name: str = "Fake USB mic",
        names: tuple[str | None, ...] = (None, "usb"),
    ) -> None:
        self.blocks, self.inputs, self.name, self.names = blocks, inputs, name, names
        self.opened: dict = {}

    def query_devices(self, device, kind):
        if device not in self.names:
            raise ValueError(f"no device {device}")
        return {
            "name": self.name,
            "default_samplerate": 48_000.0,
            "max_input_channels": self.inputs,
        }

    def check_input_settings(self, device, samplerate, channels):
        raise self.PortAudioError("Invalid sample rate")

    def InputStream(self, **kwargs):  # noqa: N802 (sounddevice's name)
        self.opened = kwargs
        blocks = self.blocks

        class Stream:
            def start(self):
                for block in blocks:
                    kwargs["callback"](block.reshape(len(block), -1), len(block), None, None)

            def stop(self):
                pass

            def close(self):
                pass

        return Stream()
