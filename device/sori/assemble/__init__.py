"""The one place that builds every stage from the config and picks concrete backends by
name: hearing, understanding, thinking, speaking, acting, and the daemon around them.
Every driver (`sori run`, `sori replay`, `sori ask`, ...) calls it; each backend module is
imported only when chosen.

- `hearing`: voice detector, recognizer, denoising, early commit; the audio source.
- `understanding`: the home and the preset matcher.
- `thinking`: the language-model tiers behind a router.
- `speaking`: voice, sink, fixed replies, the reply cache.
- `acting`: handlers, routes, the action registry.
- `daemon`: all of the above connected, and reloads.
"""
